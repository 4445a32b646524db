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

"""Servers with a MIG slice, through Nova 34's API, scheduler and
conductor: accel_backend's ``nvidia_vgpu`` driver sells the GPU
instances of an H200 in MIG mode (a copy of the ``h200-mig-vgpu-vfio``
tree, NVIDIA's driver emulated at its sysfs files by
``nvidia_vgpu_card``) as ``CUSTOM_MIG_SLICE`` providers; a device
profile asks for "a 3g.71gb slice of an H200" or "any slice with at
least 20 GB", and the guest gets the VF that carries that slice's vGPU,
``<hostdev type='pci' managed='no'>``."""

import os
import shutil

import fixtures
from lxml import etree

from tests.functional import base
from tests.unit.accel_backend import nvidia_vgpu_card as card_mod

TREE = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'sysfs',
                    'h200-mig-vgpu-vfio')
TYPES = ('NVIDIA H200X-3-71C', 'NVIDIA H200X-2-35C', 'NVIDIA H200X-1-18C')


class MigSliceBootTest(base.AccelServersTestBase):

    DEVICE_SPECS = []
    ACCEL_SECTIONS = {
        'discovery': {'enabled_drivers': 'nvidia_vgpu,nvidia_gpu'},
        'nvidia_vgpu': {'profiles': ','.join(TYPES),
                        'configure_vfs': 'true'}}

    def setUp(self):
        self.SYSFS_ROOT = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'sysfs')
        shutil.copytree(TREE, self.SYSFS_ROOT, symlinks=True)
        self.cards = card_mod.h200_mig_cards(self.SYSFS_ROOT,
                                             card_mod.h200_mig_host())
        self.useFixture(card_mod.DriverFixture(self.cards))
        super().setUp()

    def slice_rps(self):
        """``{vGPU type: rp uuid}`` of the slices accel_backend sells."""
        return {'NVIDIA ' + r.subname: r.rp_uuid
                for r in self.accel.discover_and_report()
                if r.resource_class == 'CUSTOM_MIG_SLICE'}

    def unmanaged_hostdevs(self, server_id):
        devices = etree.fromstring(self.guest_xml(server_id)).findall(
            './devices/hostdev[@type="pci"][@managed="no"]')
        return [base.hostdev_addresses(
            '<domain><devices>%s</devices></domain>' %
            etree.tostring(d).decode())[0] for d in devices]

    def test_boot_a_named_slice_then_any_large_enough_slice(self):
        rps = self.slice_rps()
        self.assertEqual(set(TYPES), set(rps))
        self.create_device_profile('h200-3g', [
            {'resources:CUSTOM_MIG_SLICE': '1',
             'trait:CUSTOM_MIG_3G_71GB': 'required',
             'trait:CUSTOM_GPU_H200_SXM5_141GB': 'required'}])
        self.create_device_profile('20gb', [
            {'resources:CUSTOM_MIG_SLICE': '1',
             'trait:CUSTOM_MIG_MEM_GE_20GB': 'required'}])

        first = self._create_server(flavor_id=self.accel_flavor('h200-3g'),
                                    networks='none')
        arq = self.assert_one_bound_arq(first['id'], rps[TYPES[0]])
        self.assertEqual(('no', TYPES[0]), (
            arq['attach_handle_info']['managed'],
            arq['attach_handle_info']['vgpu_profile']))
        # The VF the 3g.71gb vGPU was given (the first free VF).
        self.assertEqual(['0000:41:00.4'], self.unmanaged_hostdevs(
            first['id']))

        # At least 20 GB: the 3g.71gb is taken, the 2g.35gb is left.
        flavor = self.accel_flavor('20gb')
        second = self._create_server(flavor_id=flavor, networks='none')
        self.assert_one_bound_arq(second['id'], rps[TYPES[1]])
        self.assertEqual(['0000:41:00.5'], self.unmanaged_hostdevs(
            second['id']))

        # No slice of 20 GB is left: Placement has no candidate.
        third = self._create_server(flavor_id=flavor, networks='none',
                                    expected_state='ERROR')
        self.assertIn('No valid host', third['fault']['message'])
