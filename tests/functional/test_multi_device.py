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

"""Several accelerators in one server (issue "nova_accel in Nova", part 1).

Host: the recorded ``gpu-server`` tree, four A100 (10de:20b5), two on NUMA
node 0 (0000:17:00.0, 0000:65:00.0) and two on node 1 (0000:ca:00.0,
0000:e3:00.0); each is its own resource provider with ``PGPU`` total 1
and a ``CUSTOM_NUMA_NODE_<N>`` trait.

What Placement does with the two ways of asking for two GPUs:

* one profile group ``resources:PGPU: "2"``: Nova turns a profile group
  into ONE granular request group (``requester_id device_profile_0``) and
  Placement satisfies a granular group from a single provider.  No
  provider has two PGPU, so there is no candidate: the build ends in
  ``No valid host`` and nothing is left behind.  (Devices exposing
  several units on one provider, e.g. mdev types or SR-IOV VF pools,
  do satisfy such a group.)
* two groups of ``PGPU: 1``: two granular groups, each from one
  provider.  ``group_policy`` (flavor extra spec) ``isolate`` makes
  Placement pick distinct providers for them; without it Nova uses
  ``none`` (and warns), which here also ends on distinct providers since
  each has one unit.  Nova maps each ARQ's ``device_profile_group_id``
  to the provider Placement picked for that group.
"""

import os

from tests.functional import base

SYSFS_GPU_SERVER = os.path.join(os.path.dirname(__file__), '..', 'fixtures',
                                'sysfs', 'gpu-server')
A100_SPEC = {'vendor_id': '10de', 'product_id': '20b5',
             'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_A100'],
             'device_type': 'GPU'}
NODE0 = ('0000:17:00.0', '0000:65:00.0')
NODE1 = ('0000:ca:00.0', '0000:e3:00.0')


def handle_address(arq):
    info = arq['attach_handle_info']
    return '%s:%s:%s.%s' % (info['domain'], info['bus'], info['device'],
                            info['function'])


class MultiDeviceTest(base.AccelServersTestBase):

    SYSFS_ROOT = SYSFS_GPU_SERVER
    DEVICE_SPECS = [A100_SPEC]

    def setUp(self):
        super().setUp()
        self.rps = self.device_rps()
        self.addr_of_rp = {rp: a for a, rp in self.rps.items()}

    def allocations(self, server_id):
        allocs = self.placement.get(
            '/allocations/%s' % server_id).body['allocations']
        return {rp: a['resources'] for rp, a in allocs.items()}

    def gpu_usages(self):
        return {a: self.placement.get(
            '/resource_providers/%s/usages' % rp).body['usages']['PGPU']
            for a, rp in self.rps.items()}

    def assert_gpus(self, server_id, count):
        """Guest, ARQs and allocations agree on ``count`` distinct GPUs;
        returns the ARQs sorted by group id."""
        arqs = sorted(self.arqs_of(server_id),
                      key=lambda a: a['device_profile_group_id'])
        self.assertEqual(count, len(arqs))
        for arq in arqs:
            self.assertEqual('Bound', arq['state'])
            self.assertEqual('PCI', arq['attach_handle_type'])
            self.assertEqual(self.COMPUTE, arq['hostname'])
            self.assertEqual(server_id, arq['instance_uuid'])
            self.assertEqual(self.addr_of_rp[arq['device_rp_uuid']],
                             handle_address(arq))
        addresses = [handle_address(a) for a in arqs]
        self.assertEqual(count, len(set(addresses)))
        self.assertEqual(sorted(addresses), sorted(
            base.hostdev_addresses(self.guest_xml(server_id))))
        allocs = self.allocations(server_id)
        gpu_allocs = {rp: res for rp, res in allocs.items()
                      if 'PGPU' in res}
        self.assertEqual({a['device_rp_uuid']: {'PGPU': 1} for a in arqs},
                         gpu_allocs)
        return arqs

    def test_one_group_of_two_has_no_candidate(self):
        self.assertEqual(sorted(NODE0 + NODE1), sorted(self.rps))
        self.create_device_profile('two', [{'resources:PGPU': '2'}])

        server = self._create_server(flavor_id=self.accel_flavor('two'),
                                     networks='none',
                                     expected_state='ERROR')

        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
        self.assertEqual({a: 0 for a in self.rps}, self.gpu_usages())

        # Placement's own answer for the granular group Nova sends (the
        # suffix is the requester id) and for two groups of one.
        def candidates(query):
            return self.placement.get(
                '/allocation_candidates?' + query,
                version='1.36').body['allocation_requests']
        self.assertEqual([], candidates(
            'resources_device_profile_0=PGPU:2'))
        pairs = candidates('resources_g0=PGPU:1&resources_g1=PGPU:1'
                           '&group_policy=isolate')
        self.assertEqual(12, len(pairs))  # ordered pairs of 4 GPUs

    def test_two_groups_isolate(self):
        # Group 0 asks a NUMA node 0 GPU, group 1 a node 1 GPU: the ARQ of
        # each group must be bound to the provider Placement chose for it.
        self.create_device_profile('pair', [
            {'resources:PGPU': '1', 'trait:CUSTOM_NUMA_NODE_0': 'required'},
            {'resources:PGPU': '1', 'trait:CUSTOM_NUMA_NODE_1': 'required'}])
        flavor = self._create_flavor(extra_spec={
            'accel:device_profile': 'pair', 'group_policy': 'isolate'})

        server = self._create_server(flavor_id=flavor, networks='none')

        arqs = self.assert_gpus(server['id'], 2)
        self.assertEqual([0, 1], [a['device_profile_group_id']
                                  for a in arqs])
        self.assertIn(handle_address(arqs[0]), NODE0)
        self.assertIn(handle_address(arqs[1]), NODE1)

        self._delete_server(server)
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
        self.assertEqual({a: 0 for a in self.rps}, self.gpu_usages())

    def test_two_identical_groups(self):
        # Two identical groups, with isolate and with Nova's default
        # (none): two distinct GPUs each time; two servers take all four
        # and a third finds no host.
        self.create_device_profile('pair', [{'resources:PGPU': '1'},
                                            {'resources:PGPU': '1'}])
        isolate = self._create_flavor(extra_spec={
            'accel:device_profile': 'pair', 'group_policy': 'isolate'})
        default = self.accel_flavor('pair')

        first = self._create_server(flavor_id=isolate, networks='none')
        second = self._create_server(flavor_id=default, networks='none')

        got = [handle_address(a) for s in (first, second)
               for a in self.assert_gpus(s['id'], 2)]
        self.assertEqual(sorted(self.rps), sorted(got))
        self.assertEqual({a: 1 for a in self.rps}, self.gpu_usages())
        third = self._create_server(flavor_id=isolate, networks='none',
                                    expected_state='ERROR')
        self.assertIn('No valid host', third['fault']['message'])
        self.assertEqual([], self.arqs_of(third['id']))
