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

"""An 8-GPU flavor on pooled providers, through Nova.

Host: a generated HGX-like tree (``tests.unit.accel_backend.test_pooled
.write_hgx``), 8 H100 (10de:2330) all on NUMA node 0, selected by a
device spec with ``"pool": true``: ONE provider with ``PGPU`` total 8.
A device profile group ``resources:PGPU: "8"`` is one granular request
group that this one provider satisfies; accel_backend creates 8 ARQs
for it (one per unit, as Cyborg does), Nova binds each to the same
provider, and the binder gives each a distinct attach handle.
"""

import os

import fixtures

from tests.functional import base
from tests.functional import test_multi_device
from tests.unit.accel_backend import test_pooled
from tools.launch import accel_backend as launch_accel

SPEC = {'vendor_id': '10de', 'product_id': '2330',
        'resource_class': 'PGPU', 'device_type': 'GPU', 'pool': True}
GPUS = sorted(a for a, _ in test_pooled.GPUS)


class PooledBootTest(base.AccelServersTestBase):

    DEVICE_SPECS = [SPEC]

    def setUp(self):
        root = self.useFixture(fixtures.TempDir()).path
        test_pooled.write_hgx(root, numa_of=0)
        self.SYSFS_ROOT = root
        super().setUp()
        (self.rp,) = [r.rp_uuid for r in self.accel.discover_and_report()]

    def accel_config(self, tmpdir):
        # Every released GPU is reset (its own sysfs ``reset`` file).
        return launch_accel.config(
            self.placement_fixture.endpoint, self.api_fixture.base_url,
            self.SYSFS_ROOT, self.DEVICE_SPECS,
            DEFAULT={'host': self.COMPUTE, 'state_path': tmpdir},
            nova={'event_retry_timeout': 30},
            cleaning={'methods': 'generic_pci:flr'})

    def reset_written(self, address):
        with open(os.path.join(self.SYSFS_ROOT, address, 'reset')) as f:
            return f.read() == '1'

    def usage(self):
        return self.placement.get('/resource_providers/%s/usages' %
                                  self.rp).body['usages']['PGPU']

    def test_eight_gpus_in_one_group(self):
        inv = self.placement.get('/resource_providers/%s/inventories' %
                                 self.rp).body['inventories']['PGPU']
        self.assertEqual((8, 0, 8), (inv['total'], inv['reserved'],
                                     inv['max_unit']))
        self.create_device_profile('eight', [{'resources:PGPU': '8'}])

        server = self._create_server(flavor_id=self.accel_flavor('eight'),
                                     networks='none')

        arqs = self.arqs_of(server['id'])
        self.assertEqual(8, len(arqs))
        for arq in arqs:
            self.assertEqual('Bound', arq['state'])
            self.assertEqual(self.rp, arq['device_rp_uuid'])
        addresses = sorted(test_multi_device.handle_address(a)
                           for a in arqs)
        self.assertEqual(GPUS, addresses)
        self.assertEqual(GPUS, sorted(base.hostdev_addresses(
            self.guest_xml(server['id']))))
        self.assertEqual(8, self.usage())

        self._delete_server(server)
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual(0, self.usage())
        # Each of the 8 GPUs is released and reset on its own.
        self.accel.cleaner.clean_pending()
        self.assertEqual(GPUS, [a for a in GPUS if self.reset_written(a)])
        self.accel.discover_and_report()
        inv = self.placement.get('/resource_providers/%s/inventories' %
                                 self.rp).body['inventories']['PGPU']
        self.assertEqual((8, 0), (inv['total'], inv['reserved']))
