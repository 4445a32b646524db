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

"""Every route for every persona, in both policy modes.

The personas are those of Cyborg 17's new policy defaults and tempest:
an administrator, the manager, member and reader of project A, a member
of project B, a service user (a user token with the ``service`` role),
Nova (a member's user token plus a service token), a bare service token
(no user token), and a system-scoped administrator. Identity comes from
the headers keystonemiddleware sets (``auth_strategy = noauth`` takes
them as sent; tests/functional/test_auth.py covers the middleware).

For each persona a request answers the expected status, and nothing of
project B (its ARQ UUIDs) appears in what project A's personas are shown.
The table is checked against the route table: a new route must be added
here.
"""

import json

import testscenarios

from accel_backend.api import route_table
from accel_backend.objects import device_profile as dp_obj
from accel_common import arq_states
from tests.unit.accel_backend import policy_fixtures

PROJECT_A = policy_fixtures.PROJECT_A
PROJECT_B = policy_fixtures.PROJECT_B
SERVICE_PROJECT = 's' * 32


def _user(roles, project, **extra):
    headers = {'X-Roles': ','.join(roles), 'X-User-Id': 'u-' + roles[0],
               'X-Project-Id': project}
    headers.update(extra)
    return headers


PERSONAS = {
    'admin_a': _user(['admin', 'manager', 'member', 'reader'], PROJECT_A),
    'manager_a': _user(['manager', 'member', 'reader'], PROJECT_A),
    'member_a': _user(['member', 'reader'], PROJECT_A),
    'reader_a': _user(['reader'], PROJECT_A),
    'member_b': _user(['member', 'reader'], PROJECT_B),
    'service_user': _user(['service'], SERVICE_PROJECT),
    'nova_for_a': _user(['member', 'reader'], PROJECT_A,
                        **{'X-Service-Roles': 'service'}),
    # A service token and no user token: 401, as keystonemiddleware and
    # Placement's noauth2 answer.
    'service_token_only': {'X-Service-Roles': 'service'},
    'system_admin': {'X-Roles': 'admin,manager,member,reader',
                     'X-User-Id': 'u-system',
                     'OpenStack-System-Scope': 'all'},
}
A_PERSONAS = ('admin_a', 'manager_a', 'member_a', 'reader_a', 'nova_for_a')
ALL = tuple(PERSONAS)


def expect(default, **by_persona):
    """Status per persona: ``default`` unless named; 401 for a request
    without a user token."""
    by_persona.setdefault('service_token_only', 401)
    return {p: by_persona.get(p, default) for p in ALL}


UNKNOWN = '9d3a2c1e-0000-4000-8000-00000000000a'

# (method, route template, path, body, {persona: status}) in the new
# defaults; ``{b_bound}``, ``{b_initial}``, ``{a_initial}``, ``{dp}`` are
# filled per test with fresh rows.
MATRIX = [
    ('GET', '/v2/device_profiles', '/v2/device_profiles', None,
     expect(200, system_admin=403)),
    ('GET', '/v2/device_profiles/', '/v2/device_profiles/', None,
     expect(200, system_admin=403)),
    ('GET', '/v2/device_profiles/{ident}', '/v2/device_profiles/{dp}',
     None, expect(200, system_admin=403)),
    # Bodies that fail validation: the policy is checked first.
    ('POST', '/v2/device_profiles', '/v2/device_profiles', {'junk': 1},
     expect(403, admin_a=400)),
    ('DELETE', '/v2/device_profiles', '/v2/device_profiles?value=' +
     UNKNOWN, None, expect(403, admin_a=404)),
    ('DELETE', '/v2/device_profiles/', '/v2/device_profiles/', None,
     expect(403, admin_a=400)),
    ('DELETE', '/v2/device_profiles/{ident}', '/v2/device_profiles/' +
     UNKNOWN, None, expect(403, admin_a=404)),
    ('GET', '/v2/accelerator_requests', '/v2/accelerator_requests', None,
     expect(200, system_admin=403)),
    ('GET', '/v2/accelerator_requests/{arq_uuid}',
     '/v2/accelerator_requests/{b_bound}', None,
     expect(404, admin_a=200, member_b=200, service_user=200,
            nova_for_a=200, system_admin=403)),
    ('POST', '/v2/accelerator_requests', '/v2/accelerator_requests',
     {'device_profile_name': 'nope'},
     expect(404, reader_a=403, system_admin=403)),
    # Binding: only with a service token (Nova), for every user token.
    ('PATCH', '/v2/accelerator_requests', '/v2/accelerator_requests',
     'bind {b_initial}', expect(403, nova_for_a=202)),
    ('PATCH', '/v2/accelerator_requests/{arq_uuid}',
     '/v2/accelerator_requests/{b_initial}', 'bind {b_initial}',
     expect(403, nova_for_a=202)),
    ('DELETE', '/v2/accelerator_requests',
     '/v2/accelerator_requests?arqs={b_bound}', None,
     expect(404, admin_a=403, member_b=403, service_user=403,
            nova_for_a=204, reader_a=403,
            system_admin=403)),
    ('DELETE', '/v2/accelerator_requests/{arq_uuid}',
     '/v2/accelerator_requests/{b_initial}', None,
     expect(404, admin_a=403, member_b=204, service_user=204,
            nova_for_a=204, reader_a=403,
            system_admin=403)),
    ('DELETE', '/v2/accelerator_requests',
     '/v2/accelerator_requests?arqs={a_initial}', None,
     expect(204, reader_a=403, member_b=404,
            system_admin=403)),
    ('GET', '/v2/devices', '/v2/devices', None,
     expect(403, admin_a=200, manager_a=200)),
    ('GET', '/v2/devices/{device_uuid}', '/v2/devices/' + UNKNOWN, None,
     expect(403, admin_a=404, manager_a=404)),
    ('POST', '/v2/devices/{device_uuid}/enable',
     '/v2/devices/%s/enable' % UNKNOWN, None, expect(403, admin_a=404)),
    ('POST', '/v2/devices/{device_uuid}/disable',
     '/v2/devices/%s/disable' % UNKNOWN, None, expect(403, admin_a=404)),
    ('GET', '/v2/deployables', '/v2/deployables', None,
     expect(403, admin_a=200, manager_a=200)),
    ('GET', '/v2/deployables/{deployable_uuid}',
     '/v2/deployables/' + UNKNOWN, None,
     expect(403, admin_a=404, manager_a=404)),
    # Without a microversion (2.0) the 2.4 path answers as before: an id
    # that is no UUID (test_numa_free checks 2.4).
    ('GET', '/v2/deployables/free_by_numa_node',
     '/v2/deployables/free_by_numa_node', None,
     expect(403, admin_a=400, manager_a=400)),
    # Without a microversion (2.0) the 2.5 taint paths answer as before
    # they existed, 404 (TaintPersonasTest checks 2.5).
    ('GET', '/v2/deployables/{deployable_uuid}/taints',
     '/v2/deployables/%s/taints' % UNKNOWN, None, expect(404)),
    ('POST', '/v2/deployables/{deployable_uuid}/taints',
     '/v2/deployables/%s/taints' % UNKNOWN,
     {'key': 'k', 'effect': 'NoSchedule'}, expect(404)),
    ('DELETE', '/v2/deployables/{deployable_uuid}/taints/{taint_uuid}',
     '/v2/deployables/%s/taints/%s' % (UNKNOWN, UNKNOWN), None,
     expect(404)),
    ('PATCH', '/v2/deployables/{deployable_uuid}/program',
     '/v2/deployables/%s/program' % UNKNOWN, [], expect(403, admin_a=400)),
    ('GET', '/v2/attributes', '/v2/attributes', None,
     expect(403, admin_a=200, manager_a=200)),
    ('POST', '/v2/attributes', '/v2/attributes', {'junk': 1},
     expect(403, admin_a=400)),
    ('GET', '/v2/attributes/{attribute_uuid}', '/v2/attributes/' + UNKNOWN,
     None, expect(403, admin_a=404, manager_a=404)),
    ('DELETE', '/v2/attributes/{attribute_uuid}',
     '/v2/attributes/' + UNKNOWN, None, expect(403, admin_a=404)),
]

# What ``[oslo_policy] enforce_new_defaults = False`` changes: the legacy
# owner check lets any user of the project create and delete its ARQs
# that hold no device, and an admin delete any project's.
LEGACY = {
    ('POST', '/v2/accelerator_requests'): {'reader_a': 404},
    ('DELETE', '/v2/accelerator_requests?arqs={a_initial}'): {
        'reader_a': 204},
    ('DELETE', '/v2/accelerator_requests/{b_initial}'): {
        'admin_a': 204, 'reader_a': 404},
    ('DELETE', '/v2/accelerator_requests?arqs={b_bound}'): {'reader_a': 404},
}


class PersonaMatrixTest(testscenarios.WithScenarios,
                        policy_fixtures.AppTestBase):

    scenarios = [('%s-%s' % (mode, persona),
                  {'persona': persona, 'new_defaults': mode == 'new'})
                 for mode in ('new', 'legacy') for persona in PERSONAS]

    def setUp(self):
        self.EXTRA_CONF = {'oslo_policy': {
            'enforce_new_defaults': self.new_defaults}}
        super().setUp()
        self.headers = PERSONAS[self.persona]

    def fresh_rows(self):
        with self.svc.db.transaction() as session:
            dp = dp_obj.get(session, 'dp1').uuid
        return {'dp': dp,
                'b_bound': self.make_arqs(PROJECT_B, arq_states.BOUND),
                'b_initial': self.make_arqs(PROJECT_B),
                'a_initial': self.make_arqs(PROJECT_A)}

    def body(self, template, rows):
        if isinstance(template, str) and template.startswith('bind '):
            return self.bind_body(template[5:].format(**rows))
        return template

    def expected(self, method, path, statuses):
        want = statuses[self.persona]
        if not self.new_defaults:
            want = LEGACY.get((method, path), {}).get(self.persona, want)
        return want

    def test_every_route(self):
        problems = []
        for method, _route, path, body, statuses in MATRIX:
            want = self.expected(method, path, statuses)
            rows = self.fresh_rows()
            resp = self.call(method, path.format(**rows), self.headers,
                             self.body(body, rows))
            if resp.status_code != want:
                problems.append('%s %s: %s, expected %s (%s)' % (
                    method, path, resp.status_code, want,
                    resp.text[:200]))
            if self.persona in A_PERSONAS and resp.status_code == 200:
                leaked = {rows['b_bound'], rows['b_initial']} & set(
                    json.dumps(resp.json).split('"'))
                if (leaked and self.persona != 'nova_for_a' and
                        self.persona != 'admin_a'):
                    problems.append('%s %s leaked %s of project B' % (
                        method, path, sorted(leaked)))
        self.assertEqual([], problems)

    def test_denied_requests_change_nothing(self):
        rows = self.fresh_rows()
        before = {k: self.arq_state(rows[k])
                  for k in ('b_bound', 'b_initial', 'a_initial')}
        for method, _route, path, body, statuses in MATRIX:
            if (self.expected(method, path, statuses) in (401, 403) and
                    method != 'GET'):
                self.call(method, path.format(**rows), self.headers,
                          self.body(body, rows))
        self.assertEqual(before, {k: self.arq_state(rows[k])
                                  for k in before})
        self.assertEqual([], self.submitted)


#: The taint routes at microversion 2.5: read as a deployable is, set and
#: removed by administrators (an unknown deployable: 404 once allowed).
TAINTS_2_5 = [
    ('GET', '/v2/deployables/%s/taints' % UNKNOWN, None,
     expect(403, admin_a=404, manager_a=404)),
    ('POST', '/v2/deployables/%s/taints' % UNKNOWN,
     {'key': 'k', 'effect': 'NoSchedule'}, expect(403, admin_a=404)),
    ('DELETE', '/v2/deployables/%s/taints/%s' % (UNKNOWN, UNKNOWN), None,
     expect(403, admin_a=404)),
]


class TaintPersonasTest(testscenarios.WithScenarios,
                        policy_fixtures.AppTestBase):

    scenarios = PersonaMatrixTest.scenarios

    def setUp(self):
        self.EXTRA_CONF = {'oslo_policy': {
            'enforce_new_defaults': self.new_defaults}}
        super().setUp()

    def test_taint_routes_at_2_5(self):
        headers = dict(PERSONAS[self.persona],
                       **{'OpenStack-API-Version': 'accelerator 2.5'})
        problems = []
        for method, path, body, statuses in TAINTS_2_5:
            resp = self.call(method, path, headers, body)
            if resp.status_code != statuses[self.persona]:
                problems.append('%s %s: %s, expected %s (%s)' % (
                    method, path, resp.status_code, statuses[self.persona],
                    resp.text[:200]))
        self.assertEqual([], problems)


class MatrixCoversEveryRouteTest(policy_fixtures.AppTestBase):

    def test_every_route_and_method_is_in_the_matrix(self):
        public = ('', '/', '/v2', '/v2/')
        served = {(m, path) for path, methods in route_table.ROUTES.items()
                  if path not in public for m in methods}
        covered = {(m, route) for m, route, *_ in MATRIX}
        self.assertEqual(set(), served - covered)

    def test_system_scope_is_refused_even_where_any_user_may_read(self):
        # The device profiles are readable by every project reader; a
        # system-scoped token is not a project's.
        resp = self.call('GET', '/v2/device_profiles',
                         PERSONAS['system_admin'])
        self.assertEqual(403, resp.status_code)
        self.assertEqual(200, self.call(
            'GET', '/v2/device_profiles', PERSONAS['reader_a']).status_code)
