#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Tests of request_groups, including differential tests against Nova 34.

The differential tests run Nova's own in-tree functions
(``nova.accelerator.cyborg``) on the same inputs and compare the results;
Nova is not patched: the create step is supplied by a test subclass.
"""

import copy
import uuid

import fixtures

from nova.accelerator import cyborg as nova_cyborg
from nova import objects
import testtools

from nova_accel.cyborg_client import exception
from nova_accel.cyborg_client import request_groups as rg

objects.register_all()

PORT = 'a6c1f8e0-3b6c-4bfb-9a55-5a4f0d6f3f4e'

GROUP_CASES = {
    'single_custom': [
        {'resources:CUSTOM_ACCELERATOR_FPGA': '1',
         'trait:CUSTOM_INTEL_PAC_ARRIA10': 'required',
         'accel:bitstream_id': 'FB021995_BF21_4463_936A_02D49D4DB5E5'}],
    'multi_group_mixed': [
        {'resources:CUSTOM_ACCELERATOR_FPGA': '2',
         'resources:CUSTOM_LOCAL_MEMORY': '1',
         'trait:CUSTOM_INTEL_PAC_ARRIA10': 'required',
         'trait:CUSTOM_FUNCTION_NAME_FALCON_GZIP_1_1': 'required'},
        {'resources:PGPU': '1',
         'trait:HW_GPU_CUDA_COMPUTE_CAPABILITY_V2_0': 'required',
         'trait:CUSTOM_SLOW': 'forbidden',
         'accel:function_id': 'f00'},
        {'resources:FPGA': 3}],
    'forbidden_only': [
        {'resources:VGPU': '2', 'trait:CUSTOM_TENANT_A': 'forbidden',
         'trait:CUSTOM_TENANT_B': 'forbidden'}],
}


def _fields(group):
    return (group.requester_id, dict(group.resources),
            set(group.required_traits), set(group.forbidden_traits))


def _arqs_for(groups):
    """ARQs as Cyborg creates them: one per unit, group index embedded."""
    arqs = []
    for gid, group in enumerate(groups):
        for key, val in group.items():
            if key.startswith('resources:'):
                for _ in range(int(val)):
                    arqs.append({'uuid': str(uuid.uuid4()),
                                 'device_profile_group_id': gid,
                                 'state': 'Initial'})
    return arqs


class _NovaWithCannedArqs(nova_cyborg._CyborgClient):
    """Nova's client with the HTTP create step replaced by canned ARQs."""

    def __init__(self, arqs):
        super().__init__(None)
        self._canned = arqs

    def create_arqs(self, dp_name):
        return copy.deepcopy(self._canned)


class TestRequesterId(testtools.TestCase):

    def test_matches_nova(self):
        for index in (0, 1, 7, 12):
            for owner in (None, '', PORT):
                self.assertEqual(
                    nova_cyborg.get_device_profile_group_requester_id(
                        index, owner),
                    rg.requester_id(index, owner))

    def test_values(self):
        self.assertEqual('device_profile_0', rg.requester_id(0))
        self.assertEqual('device_profile_3' + PORT, rg.requester_id(3, PORT))
        self.assertEqual('device_profile_2', rg.requester_id('2'))

    def test_bad_index(self):
        for bad in (-1, None, 'x', True, 1.5):
            self.assertRaises(ValueError, rg.requester_id, bad)


class TestRequestGroupsDifferential(testtools.TestCase):
    """Same groups through Nova 34 and through us: identical RequestGroups."""

    def _compare(self, groups, owner):
        nova = nova_cyborg._CyborgClient(None)
        nova_groups = nova.get_device_request_groups(copy.deepcopy(groups),
                                                     owner)
        ours = rg.device_profile_request_groups(copy.deepcopy(groups), owner)
        self.assertEqual(len(groups), len(ours))
        self.assertEqual([_fields(g) for g in nova_groups],
                         [_fields(g) for g in ours])
        for group in ours:
            self.assertIsInstance(group, objects.RequestGroup)
            self.assertTrue(group.use_same_provider)

    def test_cases_without_owner(self):
        for name, groups in GROUP_CASES.items():
            with self.subTest(case=name):
                self._compare(groups, None)

    def test_cases_with_owner(self):
        for name, groups in GROUP_CASES.items():
            with self.subTest(case=name):
                self._compare(groups, PORT)

    def test_explicit_values(self):
        groups = rg.device_profile_request_groups(
            GROUP_CASES['multi_group_mixed'], PORT)
        self.assertEqual(
            ('device_profile_1' + PORT, {'PGPU': 1},
             {'HW_GPU_CUDA_COMPUTE_CAPABILITY_V2_0'}, {'CUSTOM_SLOW'}),
            _fields(groups[1]))
        self.assertEqual({'FPGA': 3}, groups[2].resources)

    def test_device_count_matches_nova(self):
        for name, groups in GROUP_CASES.items():
            with self.subTest(case=name):
                self.assertEqual(
                    nova_cyborg.get_device_amount_of_dp_groups(groups),
                    rg.device_count(groups))
        self.assertEqual(7, rg.device_count(GROUP_CASES['multi_group_mixed']))


class TestInvalidGroups(testtools.TestCase):
    """Where Nova logs and skips, we raise InvalidDeviceProfile."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())

    def _assert_invalid(self, groups, needle):
        exc = self.assertRaises(exception.InvalidDeviceProfile,
                                rg.device_profile_request_groups, groups,
                                name='dp1')
        self.assertIn(needle, str(exc))
        self.assertIn('dp1', str(exc))
        self.assertRaises(exception.InvalidDeviceProfile, rg.device_count,
                          groups)
        return exc

    def test_invalid_resource_class(self):
        for rc in ('fpga', 'BOGUS_CLASS', 'CUSTOM_lower', 'CUSTOM_', ''):
            with self.subTest(rc=rc):
                groups = [{'resources:' + rc: '1'},
                          {'resources:FPGA': '1'}]
                self._assert_invalid(
                    groups, 'is not a standard or CUSTOM_ resource class')

    def test_nova_silently_drops_invalid_class(self):
        # The behaviour we refuse to copy: Nova returns a group without it.
        groups = [{'resources:BOGUS_CLASS': '1', 'resources:FPGA': '1'}]
        nova_groups = nova_cyborg._CyborgClient(
            None).get_device_request_groups(groups, None)
        self.assertEqual({'FPGA': 1}, nova_groups[0].resources)
        self._assert_invalid(groups, 'BOGUS_CLASS')

    def test_bad_amounts(self):
        for amount in ('0', '-1', 'abc', '', '1.5', 0, -2, True, None, 1.0):
            with self.subTest(amount=amount):
                self._assert_invalid([{'resources:FPGA': amount}],
                                     'must be an integer from 1 to 1024')

    def test_bad_trait_value(self):
        for value in ('Required', 'preferred', '', None):
            with self.subTest(value=value):
                self._assert_invalid(
                    [{'resources:FPGA': '1', 'trait:CUSTOM_X': value}],
                    'must be required or forbidden')

    def test_bad_trait_name(self):
        for trait in ('custom_x', 'NOT_A_REAL_TRAIT', 'CUSTOM_a-b'):
            with self.subTest(trait=trait):
                self._assert_invalid(
                    [{'resources:FPGA': '1', 'trait:' + trait: 'required'}],
                    'is not a standard or CUSTOM_ trait')

    def test_unknown_key_prefix(self):
        # Nova's regex takes 'resources1:' as a resource: Cyborg never
        # produces such keys, so we reject them.
        self._assert_invalid([{'resources1:FPGA': '1'}], 'must start with')
        self._assert_invalid([{'resources:FPGA': '1', 'foo': 'bar'}],
                             'must start with')

    def test_group_without_resources(self):
        self._assert_invalid([{'trait:CUSTOM_X': 'required'}],
                             'no resources')

    def test_shape(self):
        self._assert_invalid([], 'no groups')
        self._assert_invalid(None, 'must be a list')
        self._assert_invalid(['resources:FPGA'], 'expected a dict')

    def test_error_names_group_index(self):
        exc = self._assert_invalid(
            [{'resources:FPGA': '1'}, {'resources:FPGA': 'x'}], 'group 1')
        self.assertEqual('dp1', exc.kwargs['name'])


class TestMatchDifferential(testtools.TestCase):
    """ARQ -> RP matching against Nova's create_arqs_and_match semantics."""

    def _rp_map(self, groups, owner=None):
        return {rg.requester_id(i, owner): [str(uuid.uuid4())]
                for i in range(len(groups))}

    def test_same_as_nova_create_and_match(self):
        for name, groups in GROUP_CASES.items():
            with self.subTest(case=name):
                arqs = _arqs_for(groups)
                rp_map = self._rp_map(groups)
                nova_arqs = _NovaWithCannedArqs(
                    arqs).create_arqs_and_match_resource_providers(
                        'dp', rp_map)
                expected = {a['uuid']: a['device_rp_uuid']
                            for a in nova_arqs}
                self.assertEqual(len(arqs), len(expected))
                self.assertEqual(expected,
                                 rg.match_arqs_to_providers(arqs, rp_map))

    def test_same_as_nova_with_owner(self):
        for name, groups in GROUP_CASES.items():
            with self.subTest(case=name):
                arqs = _arqs_for(groups)
                rp_map = self._rp_map(groups, PORT)
                nova = nova_cyborg._CyborgClient(None)
                expected = {a['uuid']: nova.get_arq_device_rp_uuid(
                    a, rp_map, PORT) for a in arqs}
                self.assertEqual(
                    expected, rg.match_arqs_to_providers(arqs, rp_map, PORT))

    def test_groups_map_to_their_own_rp(self):
        groups = GROUP_CASES['multi_group_mixed']
        arqs = _arqs_for(groups)
        rp_map = self._rp_map(groups)
        result = rg.match_arqs_to_providers(arqs, rp_map)
        for arq in arqs:
            rid = 'device_profile_%d' % arq['device_profile_group_id']
            self.assertEqual(rp_map[rid][0], result[arq['uuid']])


class TestMatchBeyondNova(testtools.TestCase):

    def test_several_rps_per_group_round_robin(self):
        arqs = [{'uuid': 'a%d' % i, 'device_profile_group_id': 0}
                for i in range(5)]
        arqs.append({'uuid': 'b0', 'device_profile_group_id': 1})
        rp_map = {'device_profile_0': ['rp1', 'rp2'],
                  'device_profile_1': ['rp3', 'rp4']}
        self.assertEqual(
            {'a0': 'rp1', 'a1': 'rp2', 'a2': 'rp1', 'a3': 'rp2', 'a4': 'rp1',
             'b0': 'rp3'},
            rg.match_arqs_to_providers(arqs, rp_map))

    def test_missing_group_raises(self):
        arqs = [{'uuid': 'arq-0', 'device_profile_group_id': 0},
                {'uuid': 'arq-1', 'device_profile_group_id': 1}]
        exc = self.assertRaises(
            exception.ARQMatchError, rg.match_arqs_to_providers, arqs,
            {'device_profile_0': ['rp1']})
        self.assertIn('arq-1', str(exc))
        self.assertIn('device_profile_1', str(exc))
        self.assertEqual('device_profile_1', exc.kwargs['requester_id'])
        # Nova blows up with a bare KeyError on the same input.
        self.assertRaises(KeyError, nova_cyborg._CyborgClient(
            None).get_arq_device_rp_uuid, arqs[1],
            {'device_profile_0': ['rp1']}, None)

    def test_empty_provider_list_and_none_map(self):
        arqs = [{'uuid': 'arq-0', 'device_profile_group_id': 0}]
        self.assertRaises(exception.ARQMatchError,
                          rg.match_arqs_to_providers, arqs,
                          {'device_profile_0': []})
        self.assertRaises(exception.ARQMatchError,
                          rg.match_arqs_to_providers, arqs, None)

    def test_owner_must_match(self):
        arqs = [{'uuid': 'arq-0', 'device_profile_group_id': 0}]
        exc = self.assertRaises(
            exception.ARQMatchError, rg.match_arqs_to_providers, arqs,
            {'device_profile_0': ['rp1']}, PORT)
        self.assertIn('device_profile_0' + PORT, str(exc))

    def test_bad_arq(self):
        self.assertRaises(exception.ARQMatchError,
                          rg.match_arqs_to_providers,
                          [{'uuid': 'x', 'device_profile_group_id': None}],
                          {'device_profile_0': ['rp1']})
        self.assertRaises(exception.ARQMatchError,
                          rg.match_arqs_to_providers,
                          [{'device_profile_group_id': 0}],
                          {'device_profile_0': ['rp1']})

    def test_empty_arqs(self):
        self.assertEqual({}, rg.match_arqs_to_providers([], {}))
