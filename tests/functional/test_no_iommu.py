# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""A compute host without an IOMMU, through Nova's scheduler (issue 35,
"No IOMMU, no offer").

Host sysfs: the recorded ``h100-vm-no-iommu`` tree (a cloud VM, guest
kernel 6.18.44, an H100 SXM5 10de:2330 at 0000:00:06.0 on ``nvidia``, no
IOMMU groups at all; its README says how it was recorded).  vfio-pci
cannot take a function without an IOMMU group, so a guest given that GPU
would fail in QEMU on the compute host.  accel_backend reports the GPU
with its whole inventory reserved and the reason on its device record;
Placement then has no candidate and Nova's scheduler ends the build in
``No valid host`` before any ARQ is created or any resource held.  The
same on a real kernel: ``tests.nested.test_discovery`` boots L1 without
its virtual IOMMU.
"""

import os

from tests.functional import base

SYSFS_NO_IOMMU = os.path.join(os.path.dirname(__file__), '..', 'fixtures',
                              'sysfs', 'h100-vm-no-iommu')
GPU = '0000:00:06.0'
H100_SPEC = {'vendor_id': '10de', 'product_id': '2330',
             'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_H100'],
             'device_type': 'GPU'}


class NoIOMMUTest(base.AccelServersTestBase):

    SYSFS_ROOT = SYSFS_NO_IOMMU
    DEVICE_SPECS = [H100_SPEC]

    def test_boot_ends_in_no_valid_host_and_leaves_nothing(self):
        rps = self.device_rps()
        self.assertEqual([GPU], list(rps))
        inventory = self.placement.get(
            '/resource_providers/%s/inventories' % rps[GPU]).body[
            'inventories']['PGPU']
        self.assertEqual((1, 1), (inventory['total'],
                                  inventory['reserved']))
        # The reason on the device record (API microversion 2.3).
        devices = self.accel_api.request(
            base.ACCEL_URL + '/v2/devices', 'GET', headers={
                'X-Auth-Token': 'admin',
                'OpenStack-API-Version': 'accelerator 2.3'}).json()[
            'devices']
        self.assertEqual(['unhealthy'], [d['status'] for d in devices])
        self.assertIn('no IOMMU group', devices[0]['status_reason'])

        self.create_device_profile('h100', [{'resources:PGPU': '1'}])
        server = self._create_server(flavor_id=self.accel_flavor('h100'),
                                     networks='none',
                                     expected_state='ERROR')

        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % server['id']).body['allocations'])
        self.assertEqual({'PGPU': 0}, self.placement.get(
            '/resource_providers/%s/usages' % rps[GPU]).body['usages'])
