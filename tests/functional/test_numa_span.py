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

"""8-, 6-, 1- and NUMA-local 4-GPU flavors, each one request group, on a
two-socket 8-GPU host through Nova 34's scheduler and a real Placement,
with the DEFAULT configuration and ``AcceleratorNumaFitFilter`` enabled
(issue 55, item 0).

Host: ``tests.unit.accel_backend.test_pooled.write_hgx``, 8 H100, 4 on
NUMA node 0 and 4 on node 1, pooled by a device spec: ONE provider of 8
spanning both nodes (``common.pooling``, ``[discovery] pool_numa_span``
true by default).  Before, the host had two providers of 4 and the 8-
and 6-GPU flavors found no valid host.  A NUMA-local group whose node is
full ends "No valid host" in the scheduler (the filter), before any ARQ
is made; without the filter Placement offers the host, the bind fails
(``numa_unfit``) and the build fails on the host ("Exceeded maximum
number of retries" with one host).
"""

import fixtures
import nova.conf

from tests.functional import base
from tests.functional import test_multi_device
from tests.functional import test_pooled as pooled_boot
from tests.unit.accel_backend import test_pooled
from tools.launch import accel_backend as launch_accel

NODE = {a: n for a, n in test_pooled.GPUS}
FILTER = 'AcceleratorNumaFitFilter'


class SpanningBootTest(base.AccelServersTestBase):

    DEVICE_SPECS = [pooled_boot.SPEC]
    usage = pooled_boot.PooledBootTest.usage

    def _setup_scheduler_service(self):
        # The install guide's nova.conf of the scheduler.
        self.flags(group='filter_scheduler', available_filters=[
            'nova_accel.scheduler.filters.all_filters'], enabled_filters=(
            nova.conf.CONF.filter_scheduler.enabled_filters + [FILTER]))
        return super()._setup_scheduler_service()

    def accel_config(self, tmpdir):
        # PooledBootTest's: no [discovery] pool_numa_span, the default.
        return launch_accel.config(
            self.placement_fixture.endpoint, self.api_fixture.base_url,
            self.SYSFS_ROOT, self.DEVICE_SPECS,
            DEFAULT={'host': self.COMPUTE, 'state_path': tmpdir},
            nova={'event_retry_timeout': 30},
            cleaning={'methods': 'generic_pci:flr'})

    def setUp(self):
        root = self.useFixture(fixtures.TempDir()).path
        test_pooled.write_hgx(root)     # 4 GPUs on each NUMA node
        self.SYSFS_ROOT = root
        super().setUp()
        (self.rp,) = [r.rp_uuid for r in self.accel.discover_and_report()]

    def boot(self, profile, groups):
        self.create_device_profile(profile, groups)
        server = self._create_server(
            flavor_id=self.accel_flavor(profile), networks='none')
        arqs = self.arqs_of(server['id'])
        self.assertEqual({'Bound'}, {a['state'] for a in arqs})
        self.assertEqual({self.rp}, {a['device_rp_uuid'] for a in arqs})
        addresses = sorted(test_multi_device.handle_address(a)
                           for a in arqs)
        self.assertEqual(addresses, sorted(base.hostdev_addresses(
            self.guest_xml(server['id']))))
        return server, [NODE[a] for a in addresses]

    def test_eight_six_one_and_local_four_in_one_group(self):
        inv = self.placement.get('/resource_providers/%s/inventories' %
                                 self.rp).body['inventories']['PGPU']
        self.assertEqual((8, 8), (inv['total'], inv['max_unit']))
        server, nodes = self.boot('eight', [{'resources:PGPU': '8'}])
        self.assertEqual([0] * 4 + [1] * 4, nodes)
        self._delete_server(server)
        self.accel.cleaner.clean_pending()
        self.accel.discover_and_report()

        six, nodes = self.boot('six', [{'resources:PGPU': '6'}])
        self.assertEqual([0, 0, 0, 0, 1, 1], nodes)
        one, nodes = self.boot('one', [{'resources:PGPU': '1'}])
        self.assertEqual([1], nodes)
        self.assertEqual(7, self.usage())
        self._delete_server(six)
        self.accel.cleaner.clean_pending()
        self.accel.discover_and_report()

        # NUMA-local: 4 required on node 0 (free again) land there; 3
        # on any one node land on node 1, whose 4th GPU the 1-GPU
        # server holds.
        _, nodes = self.boot('local', [{
            'resources:PGPU': '4', 'trait:CUSTOM_NUMA_NODE_0': 'required'}])
        self.assertEqual([0] * 4, nodes)
        _, nodes = self.boot('local3', [{
            'resources:PGPU': '3', 'accel:numa_local': 'true'}])
        self.assertEqual([1] * 3, nodes)
        self.assertEqual(8, self.usage())

    def no_valid_host(self, profile, groups):
        self.create_device_profile(profile, groups)
        server = self._create_server(
            flavor_id=self.accel_flavor(profile), networks='none',
            expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual([], self.arqs_of(server['id']))

    def test_a_full_node_is_no_valid_host_not_a_failed_bind(self):
        node0 = {'resources:PGPU': '2', 'trait:CUSTOM_NUMA_NODE_0': 'required'}
        node1 = {'resources:PGPU': '2', 'trait:CUSTOM_NUMA_NODE_1': 'required'}
        self.assertEqual([0, 0], self.boot('node0', [node0])[1])
        self.assertEqual([1, 1], self.boot('node1', [node1])[1])
        # 2 free on each node, 4 in the pool: Placement offers the host,
        # the filter drops it.
        self.no_valid_host('local3-full', [{
            'resources:PGPU': '3', 'accel:numa_local': 'true'}])
        self.no_valid_host('node0x3', [dict(node0, **{'resources:PGPU': '3'})])
        self.assertEqual(4, self.usage())
        # What fits still lands where it fits.
        self.assertEqual([0, 0], self.boot('node0b', [node0])[1])
        self.assertEqual([1, 1], self.boot('local2', [{
            'resources:PGPU': '2', 'accel:numa_local': 'true'}])[1])
        self.assertEqual(8, self.usage())
