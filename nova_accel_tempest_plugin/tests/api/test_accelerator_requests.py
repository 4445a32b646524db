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

"""Accelerator requests (ARQs): create from a device profile, list, show,
delete; a project sees only its own ARQs."""

import json

from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from accel_common import arq_states
from nova_accel_tempest_plugin.tests import base


class AcceleratorRequestsTest(base.AcceleratorAPITest):

    def create_arqs(self, client, dp_name):
        arqs = client.create_arqs(dp_name)['arqs']
        # By their project: an admin of another project may read them but
        # not delete them (Cyborg 17's project_member_or_service).
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        client.delete_arqs, [a['uuid'] for a in arqs])
        return arqs

    @decorators.idempotent_id('6c1e7b47-5a7d-4f1c-8a1a-4d2d8e8d2b01')
    def test_arq_create_list_show_delete(self):
        group = dict(self.profile_group())
        rc_key = next(k for k in group if k.startswith('resources:'))
        group[rc_key] = '2'
        dp = self.create_profile(groups=[group, self.profile_group()])

        arqs = self.create_arqs(self.accel, dp['name'])
        # One ARQ per unit of every resources:* in every group.
        self.assertEqual(3, len(arqs))
        self.assertEqual([0, 0, 1], sorted(a['device_profile_group_id']
                                           for a in arqs))
        for arq in arqs:
            self.assertEqual((arq_states.INITIAL, dp['name'], None, None),
                             (arq['state'], arq['device_profile_name'],
                              arq['hostname'], arq['instance_uuid']))

        listed = [a['uuid'] for a in self.accel.list_arqs()['arqs']]
        for arq in arqs:
            self.assertIn(arq['uuid'], listed)
        shown = self.accel.show_arq(arqs[0]['uuid'])
        self.assertEqual(arqs[0]['uuid'], shown['uuid'])

        self.accel.delete_arqs([a['uuid'] for a in arqs])
        for arq in arqs:
            self.assertRaises(lib_exc.NotFound, self.accel.show_arq,
                              arq['uuid'])
        listed = [a['uuid'] for a in self.accel_admin.list_arqs()['arqs']]
        self.assertFalse(set(listed) & {a['uuid'] for a in arqs})

    @decorators.idempotent_id('6c1e7b47-5a7d-4f1c-8a1a-4d2d8e8d2b02')
    def test_arqs_of_unknown_instance_are_empty(self):
        instance = data_utils.rand_uuid()
        self.assertEqual([], self.accel_admin.list_arqs(
            instance=instance)['arqs'])
        self.accel_admin.delete_arqs_of_instance(instance)

    @decorators.idempotent_id('6c1e7b47-5a7d-4f1c-8a1a-4d2d8e8d2b03')
    def test_arq_of_missing_profile_is_rejected(self):
        missing = data_utils.rand_name('nova-accel-missing').replace('.', '-')
        self.assertRaises((lib_exc.NotFound, lib_exc.BadRequest),
                          self.accel.create_arqs, missing)

    @decorators.idempotent_id('6c1e7b47-5a7d-4f1c-8a1a-4d2d8e8d2b04')
    def test_no_user_token_can_bind(self):
        dp = self.create_profile()
        # Binding moves a device between tenants: only with a service
        # token (Nova's [service_user]), for members and admins alike
        # (Cyborg 17, its fix of CVE-2026-40214).
        for client in (self.accel, self.accel_admin):
            arq = self.create_arqs(client, dp['name'])[0]
            body = {arq['uuid']: [
                {'path': '/hostname', 'op': 'add', 'value': 'somewhere'},
                {'path': '/device_rp_uuid', 'op': 'add',
                 'value': data_utils.rand_uuid()},
                {'path': '/instance_uuid', 'op': 'add',
                 'value': data_utils.rand_uuid()}]}
            self.assertRaises(lib_exc.Forbidden, client.patch,
                              'accelerator_requests', json.dumps(body))
            self.assertEqual(arq_states.INITIAL,
                             client.show_arq(arq['uuid'])['state'])
        # A reader may not create ARQs, nor bind the member's.
        self.assertRaises(lib_exc.Forbidden, self.accel_reader.create_arqs,
                          dp['name'])
        self.assertRaises(lib_exc.Forbidden, self.accel_reader.patch,
                          'accelerator_requests', json.dumps(body))
