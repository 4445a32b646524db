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

"""``accel_common.tolerations``: the trait of a tolerable taint key, the
keys a group tolerates, the keys an operator may declare (``[taints]
tolerable_keys``, refused when read), and what a served group forbids."""

from oslo_config import cfg
import testtools

from accel_backend import conf as accel_conf
from accel_common import device_profile
from accel_common import tolerations
from tests.unit.accel_backend import base


class TolerationsTest(testtools.TestCase):

    def test_trait_name(self):
        self.assertEqual('CUSTOM_ACCEL_TAINT_BURN_IN',
                         tolerations.trait_name('burn-in'))
        self.assertEqual('CUSTOM_ACCEL_TAINT_ACCEL_OPENSTACK_ORG_DRAIN',
                         tolerations.trait_name('accel.openstack.org/drain'))
        self.assertTrue(device_profile.is_valid_trait(
            tolerations.trait_name('x' * tolerations.MAX_KEY_LENGTH)))

    def test_parse(self):
        self.assertEqual(frozenset(), tolerations.parse(
            {'resources:PGPU': '1'}))
        self.assertEqual(frozenset({'burn-in', 'diag'}), tolerations.parse(
            {'accel:tolerations': 'burn-in, diag'}))
        for bad in ('', 'burn-in,,diag', 3, ['burn-in'],
                    'accel.openstack.org/unallocated'):
            self.assertRaises(tolerations.InvalidTolerations,
                              tolerations.parse, {'accel:tolerations': bad})

    def test_a_bad_toleration_is_a_bad_group(self):
        e = self.assertRaises(
            device_profile.InvalidGroup, device_profile.parse_groups,
            [{'resources:PGPU': '1'},
             {'resources:PGPU': '1', 'accel:tolerations': 7}])
        self.assertEqual(1, e.index)
        self.assertIn('accel:tolerations', str(e))

    def test_check_keys(self):
        self.assertEqual(('burn-in', 'diag'),
                         tolerations.check_keys(['burn-in', 'diag']))
        e = self.assertRaises(tolerations.InvalidTolerations,
                              tolerations.check_keys, ['burn-in', 'burn_in'])
        self.assertIn('CUSTOM_ACCEL_TAINT_BURN_IN', str(e))
        self.assertRaises(tolerations.InvalidTolerations,
                          tolerations.check_keys,
                          ['x' * (tolerations.MAX_KEY_LENGTH + 1)])

    def test_forbidden_traits(self):
        self.assertEqual(
            {'trait:CUSTOM_ACCEL_TAINT_DIAG': 'forbidden'},
            tolerations.forbidden_traits(
                {'resources:PGPU': '1', 'accel:tolerations': 'burn-in'},
                ['burn-in', 'diag']))
        # A group that names the trait keeps what it says.
        self.assertEqual({}, tolerations.forbidden_traits(
            {'resources:PGPU': '1',
             'trait:CUSTOM_ACCEL_TAINT_DIAG': 'required'}, ['diag']))


class TolerableKeysOptionTest(testtools.TestCase):

    def conf(self, value):
        return base.make_conf(self, taints={'tolerable_keys': value})

    def test_declared_keys(self):
        self.assertEqual(['burn-in', 'diag'],
                         self.conf('burn-in,diag').taints.tolerable_keys)
        self.assertEqual([], base.make_conf(self).taints.tolerable_keys)

    def test_refused_when_read(self):
        for value in ('accel.openstack.org/unallocated',
                      'accel.openstack.org/unhealthy', 'burn-in,burn_in'):
            conf = self.conf(value)
            self.assertRaises(cfg.ConfigFileValueError,
                              lambda: conf.taints.tolerable_keys)

    def test_listed_for_the_sample(self):
        groups = {getattr(g, 'name', g) for g, _ in accel_conf.list_opts()}
        self.assertIn('taints', groups)
