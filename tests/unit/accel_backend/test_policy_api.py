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

"""Authorization of accel_backend's API: every handler's checks, against
the real WSGI app of a ``Service`` (``auth_strategy = noauth``: identity
comes from the X-Roles, X-Project-Id and X-Service-Roles headers
keystonemiddleware would set; ``policy_fixtures``).
"""

import os
import re

import fixtures
from oslo_policy import policy as oslo_policy
from oslo_utils import uuidutils

from accel_backend.api.policies import arq as arq_obj_policy
from accel_backend.api import policy
from accel_backend.api import route_table
from accel_common import arq_states
from tests.unit.accel_backend import policy_fixtures as fx


class ARQPolicyTest(fx.AppTestBase):

    def setUp(self):
        super().setUp()
        self.inst_b = uuidutils.generate_uuid()
        self.arq_b = self.make_arqs(fx.PROJECT_B, arq_states.BOUND,
                                    self.inst_b)
        self.arq_b_initial = self.make_arqs(fx.PROJECT_B)

    def uuids(self, resp):
        return sorted(a['uuid'] for a in resp.json['arqs'])

    def test_create_belongs_to_the_callers_project(self):
        resp = self.call('POST', '/v2/accelerator_requests', fx.MEMBER_A,
                         {'device_profile_name': 'dp1'}, status=201)
        self.assertEqual([fx.PROJECT_A],
                         [a['project_id'] for a in resp.json['arqs']])

    def test_create_needs_a_project(self):
        self.assert_forbidden(self.call(
            'POST', '/v2/accelerator_requests', {'X-Roles': 'member'},
            {'device_profile_name': 'dp1'}))

    def test_list_shows_only_own_project(self):
        mine = self.make_arqs(fx.PROJECT_A)
        resp = self.call('GET', '/v2/accelerator_requests', fx.MEMBER_A,
                         status=200)
        self.assertEqual([mine], self.uuids(resp))
        resp = self.call('GET', '/v2/accelerator_requests?instance=%s'
                         % self.inst_b, fx.MEMBER_A, status=200)
        self.assertEqual([], self.uuids(resp))
        resp = self.call('GET', '/v2/accelerator_requests?instance=%s'
                         '&bind_state=resolved' % self.inst_b, fx.MEMBER_A,
                         status=200)
        self.assertEqual([], self.uuids(resp))

    def test_list_without_project_shows_nothing(self):
        # An ownerless ARQ (created by an admin without a project) is not
        # anyone's.
        self.make_arqs(None)
        self.assert_forbidden(self.call('GET', '/v2/accelerator_requests',
                                        {'X-Roles': 'member'}))

    def test_admin_and_service_list_every_project(self):
        mine = self.make_arqs(fx.PROJECT_A)
        expected = sorted([mine, self.arq_b, self.arq_b_initial])
        for headers in (fx.ADMIN, fx.NOVA_FOR_A, {'X-Auth-Token': 'admin'}):
            resp = self.call('GET', '/v2/accelerator_requests', headers,
                             status=200)
            self.assertEqual(expected, self.uuids(resp))

    def test_show_other_project_is_404(self):
        resp = self.call('GET', '/v2/accelerator_requests/%s' % self.arq_b,
                         fx.MEMBER_A, status=404)
        self.assertEqual('accel.arq.not_found',
                         resp.json['errors'][0]['code'])
        self.call('GET', '/v2/accelerator_requests/%s' % self.arq_b,
                  fx.MEMBER_B, status=200)
        self.call('GET', '/v2/accelerator_requests/%s' % self.arq_b,
                  fx.ADMIN, status=200)

    def test_delete_other_projects_arqs_touches_nothing(self):
        # Invisible is unknown: 404, as Cyborg answers for unknown ARQs.
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s,%s'
                  % (self.arq_b, self.arq_b_initial), fx.MEMBER_A, status=404)
        self.call('DELETE', '/v2/accelerator_requests?instance=%s'
                  % self.inst_b, fx.MEMBER_A, status=204)
        self.assertEqual(arq_states.BOUND, self.arq_state(self.arq_b))
        self.assertEqual(arq_states.INITIAL,
                         self.arq_state(self.arq_b_initial))

    def test_member_deletes_own_unbound_arqs_only(self):
        initial = self.make_arqs(fx.PROJECT_A)
        unbound = self.make_arqs(fx.PROJECT_A, arq_states.UNBOUND)
        inst = uuidutils.generate_uuid()
        bound = self.make_arqs(fx.PROJECT_A, arq_states.BOUND, inst)
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s,%s'
                  % (initial, unbound), fx.MEMBER_A, status=204)
        self.assertIsNone(self.arq_state(initial))
        self.assertIsNone(self.arq_state(unbound))
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?instance=%s' % inst,
            fx.MEMBER_A))
        self.assertEqual(arq_states.BOUND, self.arq_state(bound))
        # Nova deletes them with its service token.
        self.call('DELETE', '/v2/accelerator_requests?instance=%s' % inst,
                  fx.NOVA_FOR_A, status=204)
        self.assertIsNone(self.arq_state(bound))

    def test_forbidden_delete_deletes_nothing(self):
        initial = self.make_arqs(fx.PROJECT_A)
        bound = self.make_arqs(fx.PROJECT_A, arq_states.BOUND)
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?arqs=%s,%s'
            % (initial, bound), fx.MEMBER_A))
        self.assertEqual(arq_states.INITIAL, self.arq_state(initial))

    def test_service_deletes_any_project_admin_only_its_own(self):
        self.call('DELETE', '/v2/accelerator_requests?instance=%s'
                  % self.inst_b, fx.NOVA_FOR_A, status=204)
        self.assertIsNone(self.arq_state(self.arq_b))
        # Cyborg 17's new default (project_member_or_service): an admin of
        # another project sees B's ARQ but may not delete it.
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?arqs=%s'
            % self.arq_b_initial, fx.ADMIN))
        self.assertEqual(arq_states.INITIAL,
                         self.arq_state(self.arq_b_initial))
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s'
                  % self.arq_b_initial, fx.NOVA_FOR_A, status=204)
        self.assertIsNone(self.arq_state(self.arq_b_initial))

    def test_bind_without_service_token_is_forbidden(self):
        mine = self.make_arqs(fx.PROJECT_A)
        for headers in (fx.MEMBER_A,
                        dict(fx.MEMBER_A, **{'X-Roles': 'member,service'})):
            self.assert_forbidden(self.call(
                'PATCH', '/v2/accelerator_requests', headers,
                self.bind_body(mine)))
        self.assertEqual(arq_states.INITIAL, self.arq_state(mine))
        self.assertEqual([], self.submitted)

    def test_bind_with_service_token(self):
        mine = self.make_arqs(fx.PROJECT_A)
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A,
                  self.bind_body(mine), status=202)
        # Bound in the PATCH's transaction; the provider of bind_body has
        # no device, so the binding failed.
        self.assertEqual(arq_states.BIND_FAILED, self.arq_state(mine))
        self.assertEqual([mine], self.submitted)

    def test_bind_with_noauth_admin_token_needs_the_service_token(self):
        mine = self.make_arqs(fx.PROJECT_A)
        self.assert_forbidden(self.call(
            'PATCH', '/v2/accelerator_requests', {'X-Auth-Token': 'admin'},
            self.bind_body(mine)))
        self.assertEqual([], self.submitted)
        # What Nova sends in the functional tests (tests/functional/base).
        self.call('PATCH', '/v2/accelerator_requests',
                  {'X-Auth-Token': 'admin', 'X-Service-Token': 'nova'},
                  self.bind_body(mine), status=202)
        self.assertEqual([mine], self.submitted)

    def test_unbind_needs_service_token(self):
        mine = self.make_arqs(fx.PROJECT_A, arq_states.BOUND)
        body = {mine: [{'path': p, 'op': 'remove'} for p in
                       ('/hostname', '/device_rp_uuid', '/instance_uuid')]}
        self.assert_forbidden(self.call(
            'PATCH', '/v2/accelerator_requests', fx.MEMBER_A, body))
        self.assertEqual(arq_states.BOUND, self.arq_state(mine))
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A, body,
                  status=202)
        self.assertEqual(arq_states.UNBOUND, self.arq_state(mine))

    def test_service_binds_any_project(self):
        # Nova acting with an admin's token of another project.
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A,
                  self.bind_body(self.arq_b_initial), status=202)
        self.assertEqual([self.arq_b_initial], self.submitted)

    def test_bind_other_projects_arq_is_forbidden_before_lookup(self):
        # 403 whether or not the ARQ exists: nothing leaks.
        for uuid in (self.arq_b_initial, uuidutils.generate_uuid()):
            self.assert_forbidden(self.call(
                'PATCH', '/v2/accelerator_requests', fx.MEMBER_A,
                self.bind_body(uuid)))


class DeviceProfilePolicyTest(fx.AppTestBase):

    def test_member_reads(self):
        resp = self.call('GET', '/v2/device_profiles?name=dp1', fx.MEMBER_A,
                         status=200)
        self.assertEqual(['dp1'],
                         [d['name'] for d in resp.json['device_profiles']])
        self.call('GET', '/v2/device_profiles/dp1', dict(
            fx.MEMBER_A, **{'OpenStack-API-Version': 'accelerator 2.2'}),
            status=200)

    def test_member_cannot_create_or_delete(self):
        self.assert_forbidden(self.call(
            'POST', '/v2/device_profiles', fx.MEMBER_A,
            [{'name': 'dp2', 'groups': [{'resources:PGPU': '1'}]}]))
        self.assert_forbidden(self.call('DELETE', '/v2/device_profiles/dp1',
                                        fx.MEMBER_A))
        self.assert_forbidden(self.call(
            'DELETE', '/v2/device_profiles?value=dp1', fx.MEMBER_A))
        # Checked before the body: no validation detail leaks either.
        self.assert_forbidden(self.call('POST', '/v2/device_profiles',
                                        fx.MEMBER_A, {'junk': 1}))

    def test_admin_creates_and_deletes(self):
        self.call('POST', '/v2/device_profiles', fx.ADMIN,
                  [{'name': 'dp2', 'groups': [{'resources:PGPU': '1'}]}],
                  status=201)
        self.call('DELETE', '/v2/device_profiles/dp2', fx.ADMIN, status=204)
        self.call('DELETE', '/v2/device_profiles?value=dp1',
                  {'X-Auth-Token': 'admin'}, status=204)


class DevicePolicyTest(fx.AppTestBase):

    def test_devices_and_deployables_are_admin_only(self):
        some = uuidutils.generate_uuid()
        for path in ('/v2/devices', '/v2/devices/' + some,
                     '/v2/deployables', '/v2/deployables/' + some):
            self.assert_forbidden(self.call('GET', path, fx.MEMBER_A))
            self.assert_forbidden(self.call('GET', path, fx.NOVA_FOR_A))
        self.call('GET', '/v2/devices', fx.ADMIN, status=200)
        self.call('GET', '/v2/deployables', fx.ADMIN, status=200)


def _rules_checked(test):
    """The names of the rules ``accel_backend.api.policy.authorize`` checks
    during ``test``, in order (a list that fills as they are checked)."""
    rules = []
    real = policy.authorize

    def recorded(context, rule, *args, **kwargs):
        rules.append(rule)
        return real(context, rule, *args, **kwargs)
    test.useFixture(fixtures.MockPatch(
        'accel_backend.api.policy.authorize', side_effect=recorded))
    return rules


class EveryRouteIsGuardedTest(fx.AppTestBase):
    """No handler answers without asking the policy (version documents
    excepted: they are public)."""

    PUBLIC = ('', '/', '/v2', '/v2/')

    def test_every_route_calls_authorize(self):
        calls = _rules_checked(self)
        some = uuidutils.generate_uuid()
        # The newest microversion: a path of a later one answers 404
        # before it, as when it did not exist.
        member = dict(fx.MEMBER_A,
                      **{'OpenStack-API-Version': 'accelerator latest'})
        for path, methods in route_table.ROUTES.items():
            if path in self.PUBLIC:
                continue
            url = re.sub(r'\{[a-z_]+\}', some, path)
            for method in methods:
                del calls[:]
                resp = self.call(method, url, member)
                self.assertTrue(calls, '%s %s answered %s without a policy '
                                'check' % (method, path, resp.status))
                self.assertLess(resp.status_code, 500, resp.text)


class PolicyFilePerRequestTest(fx.AppTestBase):
    """The policy files are looked at once per request (not once per rule
    checked), and a changed file applies from the next request on."""

    def setUp(self):
        self.policy_dir = self.useFixture(fixtures.TempDir()).path
        self.policy_file = os.path.join(self.policy_dir, 'policy.yaml')
        self.EXTRA_CONF = {'oslo_policy': {
            'policy_file': self.policy_file}}
        super().setUp()
        self.looks = []
        real = oslo_policy.Enforcer.load_rules

        def counted(enforcer, force_reload=False):
            self.looks.append(force_reload)
            return real(enforcer, force_reload)
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_policy.policy.Enforcer.load_rules', counted))

    def write_policy(self, rules):
        with open(self.policy_file, 'w') as f:
            f.writelines('"%s": "%s"\n' % kv for kv in rules.items())
        # A new modification time, even within the file system's
        # timestamp granularity.
        stamp = os.stat(self.policy_file).st_mtime + len(self.looks) + 1
        os.utime(self.policy_file, (stamp, stamp))

    def patch(self, arq, headers):
        return self.call('PATCH', '/v2/accelerator_requests', headers, {
            arq: [{'path': '/hostname', 'op': 'add', 'value': 'h'},
                  {'path': '/device_rp_uuid', 'op': 'add',
                   'value': uuidutils.generate_uuid()},
                  {'path': '/instance_uuid', 'op': 'add',
                   'value': uuidutils.generate_uuid()}]})

    def test_a_bind_patch_looks_once_and_a_new_file_applies_next(self):
        arq = self.make_arqs(fx.PROJECT_A)
        # The version document checks no rule: no look at all.
        self.call('GET', '/v2', fx.MEMBER_A, status=200)
        self.assertEqual([], self.looks)
        # Two rules checked (update, update on the ARQ's project), the
        # files looked at once.
        self.assertEqual(202, self.patch(arq, fx.NOVA_FOR_A).status_code)
        self.assertEqual([False], self.looks)
        self.write_policy({'accelerator:arq:update': '!'})
        self.assertEqual(403, self.patch(arq, fx.NOVA_FOR_A).status_code)
        self.write_policy({'accelerator:arq:update': '@'})
        other = self.make_arqs(fx.PROJECT_A)
        self.assertEqual(202, self.patch(other, fx.MEMBER_A).status_code)
        self.assertEqual([False] * 3, self.looks)


class AllProjectsAskedOnlyForOthersTest(fx.AppTestBase):
    """``accelerator:arq:all_projects`` is checked only when an ARQ of
    another project is involved (each rule checked costs CPU)."""

    def setUp(self):
        super().setUp()
        self.rules = _rules_checked(self)

    def test_own_project_bind_and_show_skip_it(self):
        arq = self.make_arqs(fx.PROJECT_A)
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A,
                  self.bind_body(arq), status=202)
        self.call('GET', '/v2/accelerator_requests/%s' % arq, fx.MEMBER_A,
                  status=200)
        self.assertNotIn(arq_obj_policy.ALL_PROJECTS, self.rules)

    def test_other_projects_arq_still_needs_it(self):
        theirs = self.make_arqs(fx.PROJECT_B)
        self.call('GET', '/v2/accelerator_requests/%s' % theirs,
                  fx.MEMBER_A, status=404)
        # Nova (a service token) binds any project's ARQs.
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A,
                  self.bind_body(theirs), status=202)
        self.assertEqual(2, self.rules.count(arq_obj_policy.ALL_PROJECTS))
        self.call('GET', '/v2/accelerator_requests/%s' % theirs, fx.ADMIN,
                  status=200)


class OwnProjectCheckedOnceTest(fx.AppTestBase):
    """The check made before any ARQ is read is on the target of the
    caller's own project's ARQs: those ARQs are not checked again, any
    other project's are, on their own target.  The bind rule here also
    asks for the target's project."""

    def setUp(self):
        policy_file = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'policy.yaml')
        with open(policy_file, 'w') as f:
            f.write('"accelerator:arq:update": "project_id:%(project_id)s '
                    'and rule:service_token_api"\n')
        self.EXTRA_CONF = {'oslo_policy': {'policy_file': policy_file}}
        super().setUp()
        self.rules = _rules_checked(self)

    def test_own_project_bind_and_show_check_the_rule_once(self):
        arq = self.make_arqs(fx.PROJECT_A)
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A,
                  self.bind_body(arq), status=202)
        self.assertEqual(1, self.rules.count(arq_obj_policy.UPDATE))
        self.call('GET', '/v2/accelerator_requests/%s' % arq, fx.MEMBER_A,
                  status=200)
        self.assertEqual(1, self.rules.count(arq_obj_policy.GET_ONE))

    def test_other_projects_arq_is_checked_on_its_own_target(self):
        # Nova with project A's user token passes the rule before the
        # lookup, and not on project B's ARQ.
        theirs = self.make_arqs(fx.PROJECT_B)
        self.call('PATCH', '/v2/accelerator_requests', fx.NOVA_FOR_A,
                  self.bind_body(theirs), status=403)
        self.assertEqual(2, self.rules.count(arq_obj_policy.UPDATE))
