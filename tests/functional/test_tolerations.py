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

"""Taint tolerations through Nova 34's API, scheduler and conductor
(issue 53, ``accel_common.tolerations``).

Host: the recorded ``two-gpus`` tree, two T4s, one provider each.
accel_backend runs with ``[taints] tolerable_keys = burn-in``.  The
operator taints one T4 ``burn-in`` ``NoSchedule`` through the API
(microversion 2.5), as admin: its provider is not reserved but carries
``CUSTOM_ACCEL_TAINT_BURN_IN``, every served group that does not
tolerate ``burn-in`` forbids that trait, so an ordinary boot never lands
there while a boot with a profile tolerating ``burn-in`` does.
"""

from accel_common import tolerations
from tests.functional import base

TAINTS = '/v2/deployables/%s/taints'
TRAIT = 'CUSTOM_ACCEL_TAINT_BURN_IN'


class TolerationsTest(base.AccelServersTestBase):

    ACCEL_SECTIONS = {'taints': {'tolerable_keys': 'burn-in'}}

    def setUp(self):
        super().setUp()
        self.rps = self.device_rps()
        self.assertEqual(2, len(self.rps))
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])
        self.create_device_profile('burn-in', [
            {'resources:PGPU': '1', 'accel:tolerations': 'burn-in'}])
        self.gpu = self.accel_flavor('gpu')
        self.burn_in = self.accel_flavor('burn-in')

    def taint(self, rp, key, effect='NoSchedule'):
        deps = self.accel_v25('GET', '/v2/deployables')['deployables']
        dep = next(d['uuid'] for d in deps if d['rp_uuid'] == rp)
        taint = self.accel_v25('POST', TAINTS % dep, {
            'key': key, 'effect': effect, 'reason': 'new board'},
            expect=(201,))
        return dep, taint

    def placement_view(self, rp):
        """``(reserved, traits)`` of provider ``rp`` in Placement."""
        inv = self.placement.get(
            '/resource_providers/%s/inventories' % rp).body
        traits = self.placement.get(
            '/resource_providers/%s/traits' % rp,
            version='1.6').body['traits']
        return inv['inventories']['PGPU']['reserved'], set(traits)

    def test_only_a_tolerating_profile_lands_on_the_tainted_device(self):
        (tainted, other) = sorted(self.rps.values())
        dep, taint = self.taint(tainted, 'burn-in')
        reserved, traits = self.placement_view(tainted)
        self.assertEqual(0, reserved)
        self.assertIn(TRAIT, traits)
        # The next periodic report keeps the trait (the database's).
        self.accel.discover_and_report()
        self.assertIn(TRAIT, self.placement_view(tainted)[1])

        ordinary = self._create_server(flavor_id=self.gpu, networks='none')
        self.assert_one_bound_arq(ordinary['id'], other)
        refused = self._create_server(flavor_id=self.gpu, networks='none',
                                      expected_state='ERROR')
        self.assertIn('No valid host', refused['fault']['message'])
        burn_in = self._create_server(flavor_id=self.burn_in,
                                      networks='none')
        self.assert_one_bound_arq(burn_in['id'], tainted)

        # Untainted: the trait goes, an ordinary boot may land there.
        self._delete_server(burn_in)
        self.accel_v25('DELETE', TAINTS % dep + '/' + taint['uuid'],
                       expect=(204,))
        self.assertNotIn(TRAIT, self.placement_view(tainted)[1])
        self.accel.cleaner.clean_pending()
        again = self._create_server(flavor_id=self.gpu, networks='none')
        self.assert_one_bound_arq(again['id'], tainted)

    def test_a_taint_of_another_key_still_reserves(self):
        (tainted, other) = sorted(self.rps.values())
        self.taint(tainted, 'failing-fan')
        self.assertEqual((1, False), (
            self.placement_view(tainted)[0],
            TRAIT in self.placement_view(tainted)[1]))
        first = self._create_server(flavor_id=self.burn_in, networks='none')
        self.assert_one_bound_arq(first['id'], other)
        second = self._create_server(flavor_id=self.burn_in,
                                     networks='none', expected_state='ERROR')
        self.assertIn('No valid host', second['fault']['message'])

    def test_a_no_execute_taint_of_a_tolerable_key_reserves(self):
        (tainted, _other) = sorted(self.rps.values())
        self.taint(tainted, 'burn-in', effect='NoExecute')
        reserved, traits = self.placement_view(tainted)
        self.assertEqual((1, False), (reserved, TRAIT in traits))

    def test_served_groups_forbid_the_traits_they_do_not_tolerate(self):
        profiles = {p['name']: p['groups'] for p in self.accel_request(
            'GET', '/v2/device_profiles')['device_profiles']}
        self.assertEqual(
            [{'resources:PGPU': '1', 'trait:' + TRAIT: 'forbidden'}],
            profiles['gpu'])
        self.assertEqual(
            [{'resources:PGPU': '1', 'accel:tolerations': 'burn-in'}],
            profiles['burn-in'])
        # Placement knows the trait before any device carries it.
        self.assertEqual(204, self.placement.get(
            '/traits/' + TRAIT, version='1.6').status)

    def test_a_profile_tolerating_an_undeclared_key_is_refused(self):
        body = self.accel_request('POST', '/v2/device_profiles', [{
            'name': 'diag', 'groups': [
                {'resources:PGPU': '1',
                 'accel:tolerations': 'burn-in,diagnostics'}]}],
            expect=(400,))
        message = str(body)
        self.assertIn('diagnostics', message)
        self.assertIn('tolerable_keys', message)
        self.assertEqual(
            'CUSTOM_ACCEL_TAINT_DIAGNOSTICS',
            tolerations.trait_name('diagnostics'))
