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

"""accel_backend behind keystonemiddleware (``[api] auth_strategy =
keystone``): real ``auth_token`` middleware built from the service's own
configuration, with tokens validated by keystonemiddleware's
``AuthTokenFixture`` instead of a Keystone server.
"""

import uuid

from keystonemiddleware import fixture as ksm_fixture

from accel_common import arq_states
from tests.unit.accel_backend import policy_fixtures

PROJECT_A = policy_fixtures.PROJECT_A
PROJECT_B = policy_fixtures.PROJECT_B


class KeystoneAuthTest(policy_fixtures.AppTestBase):

    AUTH_STRATEGY = 'keystone'
    EXTRA_CONF = {'keystone_authtoken': {
        'www_authenticate_uri': 'http://keystone.test/identity',
        'auth_type': 'password', 'auth_url': 'http://keystone.test/identity',
        'username': 'accelerator', 'password': 'secret',
        'project_name': 'service', 'user_domain_id': 'default',
        'project_domain_id': 'default'}}

    def setUp(self):
        super().setUp()
        self.tokens = self.useFixture(ksm_fixture.AuthTokenFixture())
        self.admin = self.token(PROJECT_A, ['admin', 'member', 'reader'])
        self.member_a = self.token(PROJECT_A, ['member', 'reader'])
        self.member_b = self.token(PROJECT_B, ['member', 'reader'])
        # Nova's [service_user] token.
        self.nova = self.token(uuid.uuid4().hex, ['service', 'admin'])

    def token(self, project_id, roles):
        token_id = uuid.uuid4().hex
        self.tokens.add_token_data(
            token_id=token_id, user_id=uuid.uuid4().hex, user_name='u',
            user_domain_id='default', project_id=project_id,
            project_name='p', project_domain_id='default', role_list=roles)
        return token_id

    def headers(self, token, service_token=None, **extra):
        headers = {'X-Auth-Token': token}
        if service_token:
            headers['X-Service-Token'] = service_token
        headers.update(extra)
        return headers

    def test_no_token_is_401(self):
        resp = self.call('GET', '/v2/device_profiles', status=401)
        self.assertIn('WWW-Authenticate', resp.headers)
        self.call('GET', '/v2/accelerator_requests', status=401)

    def test_unknown_token_is_401(self):
        self.call('GET', '/v2/device_profiles',
                  self.headers(uuid.uuid4().hex), status=401)

    def test_valid_token_is_200(self):
        resp = self.call('GET', '/v2/device_profiles',
                         self.headers(self.member_a), status=200)
        self.assertEqual(['dp1'],
                         [d['name'] for d in resp.json['device_profiles']])

    def test_noauth_admin_token_is_just_an_invalid_token(self):
        self.call('GET', '/v2/device_profiles', self.headers('admin'),
                  status=401)

    def test_version_documents_are_public(self):
        for path in ('/', '/v2'):
            self.call('GET', path, status=200)

    def test_spoofed_identity_headers_are_ignored(self):
        # auth_token replaces X-Roles/X-Service-Roles/X-Project-Id with
        # the token's.
        spoofed = self.headers(self.member_a, **{
            'X-Roles': 'admin', 'X-Service-Roles': 'service',
            'X-Project-Id': PROJECT_B})
        self.assert_forbidden(self.call(
            'POST', '/v2/device_profiles', spoofed,
            [{'name': 'dp2', 'groups': [{'resources:PGPU': '1'}]}]))
        mine = self.make_arqs(PROJECT_A)
        self.assert_forbidden(self.call(
            'PATCH', '/v2/accelerator_requests', spoofed,
            self.bind_body(mine)))
        theirs = self.make_arqs(PROJECT_B)
        self.call('GET', '/v2/accelerator_requests/%s' % theirs, spoofed,
                  status=404)

    def test_device_profile_admin_only_writes(self):
        body = [{'name': 'dp2', 'groups': [{'resources:PGPU': '1'}]}]
        self.assert_forbidden(self.call(
            'POST', '/v2/device_profiles', self.headers(self.member_a),
            body))
        self.call('POST', '/v2/device_profiles', self.headers(self.admin),
                  body, status=201)
        self.assert_forbidden(self.call(
            'DELETE', '/v2/device_profiles/dp2',
            self.headers(self.member_a)))
        self.call('DELETE', '/v2/device_profiles/dp2',
                  self.headers(self.admin), status=204)

    def test_projects_do_not_see_each_others_arqs(self):
        resp = self.call('POST', '/v2/accelerator_requests',
                         self.headers(self.member_a),
                         {'device_profile_name': 'dp1'}, status=201)
        arq = resp.json['arqs'][0]
        self.assertEqual(PROJECT_A, arq['project_id'])
        resp = self.call('GET', '/v2/accelerator_requests',
                         self.headers(self.member_b), status=200)
        self.assertEqual([], resp.json['arqs'])
        self.call('GET', '/v2/accelerator_requests/%s' % arq['uuid'],
                  self.headers(self.member_b), status=404)
        # Another project's ARQ is unknown to B: 404, nothing deleted.
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s'
                  % arq['uuid'], self.headers(self.member_b), status=404)
        self.assertEqual(arq_states.INITIAL, self.arq_state(arq['uuid']))

    def test_bind_needs_nova_service_token(self):
        resp = self.call('POST', '/v2/accelerator_requests',
                         self.headers(self.member_a),
                         {'device_profile_name': 'dp1'}, status=201)
        uuid_ = resp.json['arqs'][0]['uuid']
        self.assert_forbidden(self.call(
            'PATCH', '/v2/accelerator_requests',
            self.headers(self.member_a), self.bind_body(uuid_)))
        # A user's token passed as service token is refused by auth_token
        # itself ([keystone_authtoken] service_token_roles_required, True
        # by default): no service headers ever reach the policy.
        self.call('PATCH', '/v2/accelerator_requests',
                  self.headers(self.member_a, self.member_b),
                  self.bind_body(uuid_), status=401)
        self.call('PATCH', '/v2/accelerator_requests',
                  self.headers(self.member_a, self.nova),
                  self.bind_body(uuid_), status=202)
        self.assertEqual([uuid_], self.submitted)

    def test_no_role_moves_a_device_without_the_service_token(self):
        # Cyborg 17 (CVE-2026-40214): bind, unbind and deleting a bound
        # ARQ need a service token, whatever the user token's roles.
        reader_a = self.token(PROJECT_A, ['reader'])
        admin_a = self.token(PROJECT_A, ['admin', 'manager', 'member',
                                         'reader'])
        initial = self.make_arqs(PROJECT_A)
        inst = str(uuid.uuid4())
        bound = self.make_arqs(PROJECT_A, arq_states.BOUND, inst)
        unbind = {bound: [{'path': p, 'op': 'remove'} for p in (
            '/hostname', '/device_rp_uuid', '/instance_uuid')]}
        for user in (admin_a, self.member_a, reader_a, self.nova):
            headers = self.headers(user)
            self.assert_forbidden(self.call(
                'PATCH', '/v2/accelerator_requests', headers,
                self.bind_body(initial)))
            self.assert_forbidden(self.call(
                'PATCH', '/v2/accelerator_requests', headers, unbind))
            self.assert_forbidden(self.call(
                'DELETE', '/v2/accelerator_requests?arqs=%s' % bound,
                headers))
            self.assert_forbidden(self.call(
                'DELETE', '/v2/accelerator_requests?instance=%s' % inst,
                headers))
        self.assertEqual((arq_states.INITIAL, arq_states.BOUND),
                         (self.arq_state(initial), self.arq_state(bound)))
        self.assertEqual([], self.submitted)
        # The same requests with Nova's service token.
        self.call('PATCH', '/v2/accelerator_requests',
                  self.headers(reader_a, self.nova), unbind, status=202)
        self.assertEqual(arq_states.UNBOUND, self.arq_state(bound))

    def test_invalid_service_token_is_401(self):
        self.call('GET', '/v2/accelerator_requests',
                  self.headers(self.member_a, uuid.uuid4().hex), status=401)

    def test_nova_deletes_bound_arqs_of_the_users_instance(self):
        inst = str(uuid.uuid4())
        bound = self.make_arqs(PROJECT_A, arq_states.BOUND, inst)
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?instance=%s' % inst,
            self.headers(self.member_a)))
        self.call('DELETE', '/v2/accelerator_requests?instance=%s' % inst,
                  self.headers(self.member_a, self.nova), status=204)
        self.assertIsNone(self.arq_state(bound))
