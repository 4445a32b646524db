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

"""nova_accel.hotplug.placement against a real Placement.

openstack-placement's fixture serves Placement in-process (wsgi-intercept,
in-memory database, noauth2: token ``admin``).  The client under test gets
the interface of Nova's report client (``get``/``put`` with ``version``).
"""

from keystoneauth1 import session as ks_session
from oslo_utils import uuidutils
import testtools

from nova_accel.cyborg_client import request_groups
from nova_accel.hotplug import exception
from nova_accel.hotplug import placement
from tests import placement_fixture

PROJECT = uuidutils.generate_uuid()
USER = uuidutils.generate_uuid()


class Client(object):
    """Nova report client's raw interface over a keystoneauth session."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.session = ks_session.Session()
        self.before_put = None
        self.puts = 0

    def _headers(self, version):
        headers = {'x-auth-token': 'admin'}
        if version:
            headers['OpenStack-API-Version'] = 'placement %s' % version
        return headers

    def get(self, url, version=None, global_request_id=None):
        return self.session.get(self.endpoint + url, raise_exc=False,
                                headers=self._headers(version))

    def put(self, url, data, version=None, global_request_id=None):
        if self.before_put is not None:
            self.before_put(url)
        self.puts += 1
        return self.session.put(self.endpoint + url, json=data,
                                raise_exc=False,
                                headers=self._headers(version))

    def post(self, url, data, version=None):
        return self.session.post(self.endpoint + url, json=data,
                                 raise_exc=False,
                                 headers=self._headers(version))


def groups(profile_groups):
    return request_groups.device_profile_request_groups(profile_groups,
                                                        name='gpu')


T4 = [{'resources:PGPU': '1', 'trait:CUSTOM_T4': 'required'}]


class PlacementTestBase(placement_fixture.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.client = Client(self.placement.endpoint)
        self.raw = Client(self.placement.endpoint)
        self.cn = self.provider('cn1', inventory={'VCPU': 8,
                                                  'MEMORY_MB': 4096})
        self.gpu1 = self.provider('cn1_gpu1', parent=self.cn,
                                  inventory={'PGPU': 1},
                                  traits=['CUSTOM_T4'])
        self.gpu2 = self.provider('cn1_gpu2', parent=self.cn,
                                  inventory={'PGPU': 1},
                                  traits=['CUSTOM_T4'])
        other = self.provider('cn2', inventory={'VCPU': 8})
        self.gpu3 = self.provider('cn2_gpu1', parent=other,
                                  inventory={'PGPU': 1},
                                  traits=['CUSTOM_T4'])
        self.instance = uuidutils.generate_uuid()
        self.allocate(self.instance, {self.cn: {'VCPU': 2}})

    def provider(self, name, parent=None, inventory=None, traits=()):
        rp = uuidutils.generate_uuid()
        body = {'uuid': rp, 'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        resp = self.raw.post('/resource_providers', body, version='1.20')
        self.assertEqual(200, resp.status_code, resp.text)
        gen = resp.json()['generation']
        if inventory:
            resp = self.raw.put(
                '/resource_providers/%s/inventories' % rp,
                {'resource_provider_generation': gen,
                 'inventories': {rc: {'total': n}
                                 for rc, n in inventory.items()}})
            self.assertEqual(200, resp.status_code, resp.text)
            gen = resp.json()['resource_provider_generation']
        for trait in traits:
            self.raw.put('/traits/%s' % trait, None, version='1.6')
        if traits:
            resp = self.raw.put('/resource_providers/%s/traits' % rp,
                                {'resource_provider_generation': gen,
                                 'traits': list(traits)}, version='1.6')
            self.assertEqual(200, resp.status_code, resp.text)
        return rp

    def allocate(self, consumer, resources):
        """Create or replace a consumer's allocation (``{rp: {RC: n}}``)."""
        current = self.raw.get('/allocations/%s' % consumer,
                               version='1.36').json()
        resp = self.raw.put('/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': res}
                            for rp, res in resources.items()},
            'consumer_generation': current.get('consumer_generation'),
            'project_id': PROJECT, 'user_id': USER}, version='1.36')
        self.assertEqual(204, resp.status_code, resp.text)

    def allocations(self, consumer):
        allocs = self.raw.get('/allocations/%s' % consumer,
                              version='1.36').json()['allocations']
        return {rp: a['resources'] for rp, a in allocs.items()}


class CandidatesTest(PlacementTestBase):

    def test_query(self):
        query = placement.candidates_query(
            groups([{'resources:PGPU': '1', 'trait:CUSTOM_T4': 'required',
                     'trait:CUSTOM_BAD': 'forbidden'},
                    {'resources:FPGA': '2'}]), 'CN', group_policy='isolate')
        self.assertEqual(
            'resources_device_profile_0=PGPU:1&'
            'required_device_profile_0=CUSTOM_T4,!CUSTOM_BAD&'
            'in_tree_device_profile_0=CN&'
            'resources_device_profile_1=FPGA:2&'
            'in_tree_device_profile_1=CN&group_policy=isolate', query)

    def test_only_devices_of_the_instance_host(self):
        cands = placement.device_candidates(self.client, groups(T4), self.cn)
        rps = sorted(rp for allocs, _m in cands for rp in allocs)
        self.assertEqual(sorted([self.gpu1, self.gpu2]), rps)
        for allocs, rg_rp_map in cands:
            (rp, alloc), = allocs.items()
            self.assertEqual({'PGPU': 1}, alloc['resources'])
            self.assertEqual({'device_profile_0': [rp]}, rg_rp_map)

    def test_used_devices_and_traits_are_left_out(self):
        self.allocate(uuidutils.generate_uuid(), {self.gpu1: {'PGPU': 1}})
        cands = placement.device_candidates(self.client, groups(T4), self.cn)
        self.assertEqual([self.gpu2], [rp for a, _m in cands for rp in a])
        none = placement.device_candidates(
            self.client, groups([{'resources:PGPU': '1',
                                  'trait:CUSTOM_T4': 'forbidden'}]), self.cn)
        self.assertEqual([], none)

    def test_two_groups(self):
        cands = placement.device_candidates(
            self.client, groups(T4 + T4), self.cn, group_policy='isolate')
        self.assertEqual(2, len(cands))
        for allocs, rg_rp_map in cands:
            self.assertEqual(sorted([self.gpu1, self.gpu2]), sorted(allocs))
            self.assertNotEqual(rg_rp_map['device_profile_0'],
                                rg_rp_map['device_profile_1'])

    def test_placement_error(self):
        self.assertRaises(exception.HotplugError,
                          placement.device_candidates, self.client,
                          groups(T4), 'not-a-uuid')


class AllocationEditorTest(PlacementTestBase):

    def setUp(self):
        super().setUp()
        self.editor = placement.AllocationEditor(self.client, self.instance)
        self.delta = {self.gpu1: {'resources': {'PGPU': 1}}}

    def test_grow_and_shrink(self):
        self.editor.grow(self.delta)
        self.assertEqual({self.cn: {'VCPU': 2}, self.gpu1: {'PGPU': 1}},
                         self.allocations(self.instance))
        # Project and user of the consumer are kept.
        body = self.raw.get('/allocations/%s' % self.instance,
                            version='1.36').json()
        self.assertEqual((PROJECT, USER), (body['project_id'],
                                           body['user_id']))
        self.editor.shrink(self.delta)
        self.assertEqual({self.cn: {'VCPU': 2}},
                         self.allocations(self.instance))

    def test_generation_conflict_is_retried_on_fresh_data(self):
        # Somebody else changes the allocation between our GET and PUT.
        def race(url):
            self.client.before_put = None
            self.allocate(self.instance, {self.cn: {'VCPU': 2,
                                                    'MEMORY_MB': 512}})

        self.client.before_put = race
        self.editor.grow(self.delta)
        self.assertEqual(2, self.client.puts)
        self.assertEqual(
            {self.cn: {'VCPU': 2, 'MEMORY_MB': 512},
             self.gpu1: {'PGPU': 1}}, self.allocations(self.instance))

    def test_shrink_keeps_concurrent_changes(self):
        self.editor.grow(self.delta)
        self.allocate(self.instance, {self.cn: {'VCPU': 4},
                                      self.gpu1: {'PGPU': 1}})
        self.editor.shrink(self.delta)
        self.assertEqual({self.cn: {'VCPU': 4}},
                         self.allocations(self.instance))

    def test_conflicts_forever(self):
        n = [0]

        def race(url):
            n[0] += 1
            self.allocate(self.instance, {self.cn: {'VCPU': 2 + n[0]}})

        self.client.before_put = race
        exc = self.assertRaises(exception.AllocationUpdateFailed,
                                self.editor.grow, self.delta)
        self.assertIn('still conflicting', str(exc))
        self.assertEqual(placement.DEFAULT_RETRIES + 1, self.client.puts)
        self.assertNotIn(self.gpu1, self.allocations(self.instance))

    def test_device_taken_is_not_retried(self):
        self.allocate(uuidutils.generate_uuid(), {self.gpu1: {'PGPU': 1}})
        exc = self.assertRaises(exception.AllocationUpdateFailed,
                                self.editor.grow, self.delta)
        self.assertIn('409', str(exc))
        self.assertEqual(1, self.client.puts)
        self.assertEqual({self.cn: {'VCPU': 2}},
                         self.allocations(self.instance))

    def test_no_allocation(self):
        editor = placement.AllocationEditor(self.client,
                                            uuidutils.generate_uuid())
        exc = self.assertRaises(exception.AllocationUpdateFailed,
                                editor.grow, self.delta)
        self.assertIn('no allocation', str(exc))


class ArithmeticTest(testtools.TestCase):

    def test_add_subtract(self):
        cur = {'a': {'resources': {'X': 1}, 'generation': 3}}
        delta = {'a': {'resources': {'X': 2, 'Y': 1}},
                 'b': {'resources': {'Z': 1}}}
        grown = placement.add_resources(cur, delta)
        self.assertEqual({'a': {'resources': {'X': 3, 'Y': 1}},
                          'b': {'resources': {'Z': 1}}}, grown)
        self.assertEqual({'a': {'resources': {'X': 1}}},
                         placement.subtract_resources(grown, delta))
        # Nothing goes below zero; unknown providers are ignored.
        self.assertEqual({}, placement.subtract_resources(
            {'a': {'resources': {'X': 1}}},
            {'a': {'resources': {'X': 5}}, 'c': {'resources': {'X': 1}}}))
