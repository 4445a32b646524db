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

"""Device profiles: create, list, show (by UUID and, from 2.2, by name),
delete; bad input answers 4xx."""

from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_accel_tempest_plugin.tests import base


class DeviceProfilesTest(base.AcceleratorAPITest):

    @decorators.idempotent_id('5b0f6a36-4f6c-4e0b-9f0f-3c1c7d7c1a01')
    def test_device_profile_crud(self):
        groups = [self.profile_group(), {'resources:FPGA': '2'}]
        dp = self.create_profile(groups=groups)
        self.assertEqual(groups, dp['groups'])
        self.assertTrue(dp['uuid'])

        listed = self.accel_admin.list_device_profiles()['device_profiles']
        self.assertIn(dp['uuid'], [p['uuid'] for p in listed])
        by_name = self.accel_admin.list_device_profiles(
            name=dp['name'])['device_profiles']
        self.assertEqual([dp['uuid']], [p['uuid'] for p in by_name])

        shown = self.accel_admin.show_device_profile(
            dp['uuid'])['device_profile']
        self.assertEqual((dp['name'], groups),
                         (shown['name'], shown['groups']))
        shown = self.accel_admin_22.show_device_profile(
            dp['name'])['device_profile']
        self.assertEqual(dp['uuid'], shown['uuid'])

        self.accel_admin.delete_device_profile(dp['uuid'])
        self.assertRaises(lib_exc.NotFound,
                          self.accel_admin.show_device_profile, dp['uuid'])
        self.assertEqual([], self.accel_admin.list_device_profiles(
            name=dp['name'])['device_profiles'])

    @decorators.idempotent_id('5b0f6a36-4f6c-4e0b-9f0f-3c1c7d7c1a02')
    def test_member_reads_profiles_but_cannot_create(self):
        dp = self.create_profile()
        listed = self.accel.list_device_profiles(
            name=dp['name'])['device_profiles']
        self.assertEqual([dp['uuid']], [p['uuid'] for p in listed])
        self.assertRaises(lib_exc.Forbidden,
                          self.accel.create_device_profile,
                          data_utils.rand_name('dp').replace('.', '-'),
                          [self.profile_group()])

    @decorators.idempotent_id('5b0f6a36-4f6c-4e0b-9f0f-3c1c7d7c1a03')
    def test_duplicate_name_conflicts(self):
        dp = self.create_profile()
        self.assertRaises(lib_exc.Conflict,
                          self.accel_admin.create_device_profile,
                          dp['name'], [self.profile_group()])

    @decorators.idempotent_id('5b0f6a36-4f6c-4e0b-9f0f-3c1c7d7c1a04')
    def test_invalid_profiles_are_rejected(self):
        bad = [
            ('bad name!', [self.profile_group()]),
            ('nova-accel-bad-rc', [{'resources:FPGA': 'many'}]),
            ('nova-accel-bad-trait', [{'trait:CUSTOM_X': 'maybe'}]),
            ('nova-accel-no-groups', 'not a list'),
        ]
        for name, groups in bad:
            self.assertRaises(lib_exc.BadRequest,
                              self.accel_admin.create_device_profile,
                              name, groups)

    @decorators.idempotent_id('5b0f6a36-4f6c-4e0b-9f0f-3c1c7d7c1a05')
    def test_missing_profile_is_not_found(self):
        missing = data_utils.rand_uuid()
        self.assertRaises(lib_exc.NotFound,
                          self.accel_admin.show_device_profile, missing)
        self.assertRaises(lib_exc.NotFound,
                          self.accel_admin.delete_device_profile, missing)
