"""Authorization of accel_backend's API: default rules, the enforcer, and
every handler's checks, against the real WSGI app of a ``Service``
(``auth_strategy = noauth``: identity comes from the X-Roles, X-Project-Id
and X-Service-Roles headers keystonemiddleware would set; the
keystonemiddleware path is tests/functional/test_auth.py).

Rows are inserted through ``accel_backend.objects``; no Placement and no
devices are needed, and the binder's ``submit`` is replaced by a recorder
so a 202 bind starts no background work.
"""

import importlib.metadata
import json
import os
import re
import subprocess
import sys

import fixtures
from oslo_policy import policy as oslo_policy
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend.api import context as context_mod
from accel_backend.api import routes
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend import policies
from accel_backend import policy
from accel_backend import service as service_mod
from tests.unit.accel_backend import base

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))

# The secure defaults: a change here is a change of the API's security
# contract (document it in the release notes).
EXPECTED_DEFAULTS = {
    'admin_api': 'role:admin',
    'project_manager_api': 'role:manager and project_id:%(project_id)s',
    'project_member_api': 'role:member and project_id:%(project_id)s',
    'project_reader_api': 'role:reader and project_id:%(project_id)s',
    'service_api': 'role:service',
    'service_token_api': 'service_roles:service',
    'project_reader_or_admin': 'rule:project_reader_api or rule:admin_api',
    'project_manager_or_admin':
        'rule:project_manager_api or rule:admin_api',
    'project_member_or_service':
        'rule:project_member_api or rule:service_api',
    'admin_or_owner': 'rule:admin_api or project_id:%(project_id)s',
    'accelerator:device_profile:get_all':
        'rule:project_reader_or_admin or rule:service_api',
    'accelerator:device_profile:get_one':
        'rule:project_reader_or_admin or rule:service_api',
    'accelerator:device_profile:create': 'rule:admin_api',
    'accelerator:device_profile:delete': 'rule:admin_api',
    'accelerator:arq:get_all': 'rule:project_reader_or_admin or '
                               'rule:service_api or rule:service_token_api',
    'accelerator:arq:get_one': 'rule:project_reader_or_admin or '
                               'rule:service_api or rule:service_token_api',
    'accelerator:arq:all_projects':
        'rule:admin_api or rule:service_api or rule:service_token_api',
    'accelerator:arq:create': 'rule:project_member_or_service',
    'accelerator:arq:update': 'rule:service_token_api',
    'accelerator:arq:delete':
        'rule:project_member_or_service or rule:service_token_api',
    'accelerator:arq:delete_bound': 'rule:service_token_api',
    'accelerator:device:get_all': 'rule:project_manager_or_admin',
    'accelerator:device:get_one': 'rule:project_manager_or_admin',
    'accelerator:device:enable': 'rule:admin_api',
    'accelerator:device:disable': 'rule:admin_api',
    'accelerator:deployable:get_all': 'rule:project_manager_or_admin',
    'accelerator:deployable:get_one': 'rule:project_manager_or_admin',
    'accelerator:deployable:program': 'rule:admin_api',
    'accelerator:attribute:get_all': 'rule:project_manager_or_admin',
    'accelerator:attribute:get_one': 'rule:project_manager_or_admin',
    'accelerator:attribute:create': 'rule:admin_api',
    'accelerator:attribute:delete': 'rule:admin_api',
}
BASE_RULES = tuple(name for name in EXPECTED_DEFAULTS
                   if not name.startswith('accelerator:'))
# Moving a device between tenants: a service token, whatever the user's
# roles; no legacy default may loosen it (CVE-2026-40214).
SERVICE_TOKEN_RULES = ('accelerator:arq:update',
                       'accelerator:arq:delete_bound')
# The legacy defaults kept as deprecated rules (enforce_new_defaults =
# False ORs them in).
LEGACY_DEFAULTS = {
    'accelerator:device_profile:get_all': '@',
    'accelerator:device_profile:get_one': '@',
    'accelerator:arq:get_all': 'rule:admin_api or project_id:%(project_id)s',
    'accelerator:arq:get_one': 'rule:admin_api or project_id:%(project_id)s',
    'accelerator:arq:create': 'rule:admin_api or project_id:%(project_id)s',
    'accelerator:arq:delete': 'rule:admin_api or project_id:%(project_id)s',
    'accelerator:device:get_all': 'rule:admin_api',
    'accelerator:device:get_one': 'rule:admin_api',
    'accelerator:deployable:get_all': 'rule:admin_api',
    'accelerator:deployable:get_one': 'rule:admin_api',
    'accelerator:attribute:get_all': 'rule:admin_api',
    'accelerator:attribute:get_one': 'rule:admin_api',
}

PROJECT_A = 'a' * 32
PROJECT_B = 'b' * 32
ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'c' * 32,
         'X-User-Id': 'admin-user'}
MEMBER_A = {'X-Roles': 'member,reader', 'X-Project-Id': PROJECT_A,
            'X-User-Id': 'user-a'}
MEMBER_B = {'X-Roles': 'member,reader', 'X-Project-Id': PROJECT_B,
            'X-User-Id': 'user-b'}
# What keystonemiddleware sets when Nova adds its X-Service-Token to the
# user's request ([service_user] send_service_user_token).
NOVA_FOR_A = dict(MEMBER_A, **{'X-Service-Roles': 'service,admin'})


def ctx(roles=(), project_id=None, service_roles=(), enforcer=None,
        system_scope=None):
    return context_mod.RequestContext(
        user_id='u', project_id=project_id, roles=list(roles),
        service_roles=list(service_roles), enforcer=enforcer,
        system_scope=system_scope)


class RulesTest(testtools.TestCase):
    """The default rules as the sample generator sees them."""

    def test_defaults_are_the_documented_secure_ones(self):
        rules = {r.name: r.check_str for r in policies.list_rules()}
        self.assertEqual(EXPECTED_DEFAULTS,
                         {k: rules.get(k) for k in EXPECTED_DEFAULTS})
        # Whatever else is registered is a resource rule (checked below).
        self.assertTrue(all(name.startswith('accelerator:')
                            for name in set(rules) - set(EXPECTED_DEFAULTS)))

    def test_resource_rules_are_documented_and_project_scoped(self):
        names = [r.name for r in policies.list_rules()]
        self.assertEqual(len(names), len(set(names)))
        for rule in policies.list_rules():
            if rule.name in BASE_RULES:
                continue
            self.assertIsInstance(rule, oslo_policy.DocumentedRuleDefault)
            self.assertRegex(rule.name,
                             r'^accelerator:[a-z_]+:[a-z_]+$')
            self.assertEqual(['project'], rule.scope_types, rule.name)
            self.assertTrue(rule.operations, rule.name)
            for op in rule.operations:
                self.assertIn(op['method'],
                              ('GET', 'POST', 'PATCH', 'DELETE'))
                self.assertTrue(op['path'].startswith('/v2/'), op)
            self.assertTrue(rule.description)

    def test_legacy_defaults_are_deprecated_rules(self):
        rules = {r.name: r for r in policies.list_rules()}
        self.assertEqual(
            LEGACY_DEFAULTS,
            {name: rule.deprecated_rule.check_str
             for name, rule in rules.items() if rule.deprecated_rule})
        for name in SERVICE_TOKEN_RULES:
            self.assertIsNone(rules[name].deprecated_rule, name)

    def test_arq_module_documents_the_cyborg_deviation(self):
        from accel_backend.policies import arq
        self.assertIn('CVE', arq.__doc__)
        self.assertIn('Cyborg', arq.__doc__)


class EnforcerTest(testtools.TestCase):
    """``policy.authorize`` on contexts, without HTTP."""

    def setUp(self):
        super().setUp()
        conf = base.make_conf(self)
        self.enforcer = policy.new_enforcer(conf)

    def can(self, rule, context, target=None):
        context.enforcer = self.enforcer
        return policy.authorize(context, rule, target, fatal=False)

    def test_admin_passes_everything_but_moving_devices(self):
        # Keystone's implied roles: an admin is a manager, member, reader.
        admin = ctx(roles=['admin', 'manager', 'member', 'reader'],
                    project_id=PROJECT_A)
        for name in EXPECTED_DEFAULTS:
            if name in BASE_RULES:
                continue
            self.assertEqual(name not in SERVICE_TOKEN_RULES,
                             self.can(name, admin, policy.target(PROJECT_A)),
                             name)
        with_token = ctx(roles=['admin'], project_id=PROJECT_A,
                         service_roles=['service'])
        for name in SERVICE_TOKEN_RULES:
            self.assertTrue(self.can(name, with_token,
                                     policy.target(PROJECT_B)), name)

    def test_system_scoped_admin_is_refused_everywhere(self):
        # Every rule is project-scoped: oslo.policy refuses the scope.
        system_admin = ctx(roles=['admin'], system_scope='all',
                           service_roles=['service'])
        for name in EXPECTED_DEFAULTS:
            if name not in BASE_RULES:
                self.assertFalse(self.can(name, system_admin), name)

    def test_legacy_defaults_only_with_enforce_new_defaults_false(self):
        # oslo.policy 6 enforces the new defaults unless told otherwise.
        manager = ctx(roles=['manager'], project_id=PROJECT_A)
        self.assertTrue(self.can('accelerator:device:get_all', manager))
        # A role-less user of the project passes only the legacy owner
        # check; a reader passes the new one.
        nobody = ctx(roles=[], project_id=PROJECT_A)
        self.assertFalse(self.can('accelerator:arq:get_all', nobody))
        self.assertTrue(self.can('accelerator:arq:get_all', ctx(
            roles=['reader'], project_id=PROJECT_A)))
        conf = base.make_conf(self, oslo_policy={
            'enforce_new_defaults': False})
        self.enforcer = policy.new_enforcer(conf)
        self.assertTrue(self.can('accelerator:arq:get_all', nobody))
        self.assertTrue(self.can('accelerator:device:get_all', manager))
        # No legacy default reopens binding to a user token.
        admin = ctx(roles=['admin'], project_id=PROJECT_A)
        for name in SERVICE_TOKEN_RULES:
            self.assertFalse(self.can(name, admin), name)

    def test_owner_check(self):
        member = ctx(roles=['member', 'reader'], project_id=PROJECT_A)
        rule = 'accelerator:arq:get_one'
        self.assertTrue(self.can(rule, member, policy.target(PROJECT_A)))
        self.assertFalse(self.can(rule, member, policy.target(PROJECT_B)))

    def test_no_project_never_owns_an_ownerless_object(self):
        # str(None) == str(None) would otherwise grant it.
        nobody = ctx(roles=['member'], project_id=None)
        self.assertFalse(self.can('accelerator:arq:get_one', nobody,
                                  policy.target(None)))
        self.assertFalse(self.can('accelerator:arq:create', nobody))

    def test_bind_needs_service_role_of_the_service_token(self):
        rule = 'accelerator:arq:update'
        self.assertFalse(self.can(rule, ctx(roles=['member', 'service'],
                                            project_id=PROJECT_A)))
        self.assertTrue(self.can(rule, ctx(roles=['member'],
                                           project_id=PROJECT_A,
                                           service_roles=['service'])))

    def test_forbidden_is_raised_with_the_stable_code(self):
        member = ctx(roles=['member'], project_id=PROJECT_A,
                     enforcer=self.enforcer)
        err = self.assertRaises(exception.Forbidden, member.can,
                                'accelerator:device_profile:create')
        self.assertEqual(403, err.status)
        self.assertEqual('accel.policy.forbidden', err.code)
        self.assertIn('accelerator:device_profile:create', err.detail)

    def test_unregistered_rule_is_a_bug(self):
        self.assertRaises(oslo_policy.PolicyNotRegistered, self.can,
                          'accelerator:arq:typo', ctx(roles=['admin']))

    def test_policy_file_overrides_defaults(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'policy.yaml')
        with open(path, 'w') as f:
            f.write('"accelerator:device_profile:create": '
                    '"role:member"\n')
        conf = base.make_conf(self, oslo_policy={'policy_file': path})
        self.enforcer = policy.new_enforcer(conf)
        self.assertTrue(self.can('accelerator:device_profile:create',
                                 ctx(roles=['member'])))


class ContextTest(testtools.TestCase):

    def test_noauth_admin_token_is_admin_but_no_service(self):
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'admin'}, True)
        self.assertTrue(c.is_admin)
        self.assertEqual(['admin', 'manager', 'member', 'reader'], c.roles)
        self.assertEqual([], c.service_roles)
        self.assertEqual(('admin', 'admin'), (c.user_id, c.project_id))

    def test_noauth_service_token_gives_the_service_role(self):
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'admin',
                                      'HTTP_X_SERVICE_TOKEN': 'nova'}, True)
        self.assertEqual(['service'], c.service_roles)
        # Not without noauth: keystonemiddleware sets the roles.
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'admin',
                                      'HTTP_X_SERVICE_TOKEN': 'nova'}, False)
        self.assertEqual([], c.service_roles)

    def test_noauth_other_tokens_are_members_of_their_project(self):
        # Placement's noauth2: "user[:project]"; X-Project-Id wins.
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'alice:proj'},
                                     True)
        self.assertEqual(('alice', 'proj', ['member', 'reader']),
                         (c.user_id, c.project_id, c.roles))
        self.assertFalse(c.is_admin)
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'bob',
                                      'HTTP_X_PROJECT_ID': 'p2'}, True)
        self.assertEqual(('bob', 'p2'), (c.user_id, c.project_id))

    def test_system_scope_is_carried(self):
        c = context_mod.from_environ({
            'HTTP_X_ROLES': 'admin', 'HTTP_OPENSTACK_SYSTEM_SCOPE': 'all'},
            False)
        self.assertEqual('all', c.to_policy_values()['system_scope'])

    def test_admin_token_means_nothing_with_keystone(self):
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'admin'}, False)
        self.assertFalse(c.is_admin)
        self.assertEqual([], c.service_roles)

    def test_explicit_roles_win_over_the_admin_token(self):
        c = context_mod.from_environ({'HTTP_X_AUTH_TOKEN': 'admin',
                                      'HTTP_X_ROLES': 'member'}, True)
        self.assertFalse(c.is_admin)
        self.assertEqual([], c.service_roles)

    def test_headers(self):
        c = context_mod.from_environ({
            'HTTP_X_ROLES': 'member, reader', 'HTTP_X_PROJECT_ID': 'p',
            'HTTP_X_USER_ID': 'u', 'HTTP_X_SERVICE_ROLES': 'service'},
            False)
        self.assertEqual((['member', 'reader'], 'p', 'u', ['service']),
                         (c.roles, c.project_id, c.user_id,
                          c.service_roles))
        empty = context_mod.from_environ({'HTTP_X_PROJECT_ID': ''}, False)
        self.assertIsNone(empty.project_id)


class AppTestBase(testtools.TestCase):
    """A ``Service`` (noauth) and helpers to call its app."""

    AUTH_STRATEGY = 'noauth'
    EXTRA_CONF = {}

    def setUp(self):
        super().setUp()
        groups = {'api': {'auth_strategy': self.AUTH_STRATEGY},
                  'binding': {'workers': '1'}}
        groups.update(self.EXTRA_CONF)
        conf = base.make_conf(self, **groups)
        self.svc = service_mod.Service(conf)
        self.addCleanup(self.svc.stop)
        self.submitted = []
        self.useFixture(fixtures.MockPatchObject(
            self.svc.binder, 'submit', side_effect=self.submitted.extend))
        with self.svc.db.transaction() as session:
            dp_obj.create(session, 'dp1', [{'resources:PGPU': '1'}])

    def call(self, method, path, headers=None, body=None, status=None):
        req = webob.Request.blank(path, method=method,
                                  headers=headers or {})
        if body is not None:
            req.body = json.dumps(body).encode('utf-8')
            req.content_type = 'application/json'
        resp = req.get_response(self.svc.app)
        if status is not None:
            self.assertEqual(status, resp.status_code,
                             '%s %s: %s' % (method, path, resp.text))
        return resp

    def assert_forbidden(self, resp):
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertEqual('accel.policy.forbidden',
                         resp.json['errors'][0]['code'])

    def make_arqs(self, project_id, state=arq_obj.INITIAL, instance=None):
        """One ARQ of ``project_id`` in ``state``; returns its UUID."""
        with self.svc.db.transaction() as session:
            arq = arq_obj.create(session, 'dp1', project_id=project_id)[0]
            arq.state = state
            if state != arq_obj.INITIAL:
                arq.hostname = 'compute1'
                arq.device_rp_uuid = uuidutils.generate_uuid()
                arq.instance_uuid = instance or uuidutils.generate_uuid()
            return arq.uuid

    def arq_state(self, uuid):
        with self.svc.db.transaction() as session:
            try:
                return arq_obj.get(session, uuid).state
            except exception.ARQNotFound:
                return None

    def bind_body(self, uuid, instance=None):
        return {uuid: [
            {'path': '/hostname', 'op': 'add', 'value': 'compute1'},
            {'path': '/device_rp_uuid', 'op': 'add',
             'value': uuidutils.generate_uuid()},
            {'path': '/instance_uuid', 'op': 'add',
             'value': instance or uuidutils.generate_uuid()}]}


class ARQPolicyTest(AppTestBase):

    def setUp(self):
        super().setUp()
        self.inst_b = uuidutils.generate_uuid()
        self.arq_b = self.make_arqs(PROJECT_B, arq_obj.BOUND, self.inst_b)
        self.arq_b_initial = self.make_arqs(PROJECT_B)

    def uuids(self, resp):
        return sorted(a['uuid'] for a in resp.json['arqs'])

    def test_create_belongs_to_the_callers_project(self):
        resp = self.call('POST', '/v2/accelerator_requests', MEMBER_A,
                         {'device_profile_name': 'dp1'}, status=201)
        self.assertEqual([PROJECT_A],
                         [a['project_id'] for a in resp.json['arqs']])

    def test_create_needs_a_project(self):
        self.assert_forbidden(self.call(
            'POST', '/v2/accelerator_requests', {'X-Roles': 'member'},
            {'device_profile_name': 'dp1'}))

    def test_list_shows_only_own_project(self):
        mine = self.make_arqs(PROJECT_A)
        resp = self.call('GET', '/v2/accelerator_requests', MEMBER_A,
                         status=200)
        self.assertEqual([mine], self.uuids(resp))
        resp = self.call('GET', '/v2/accelerator_requests?instance=%s'
                         % self.inst_b, MEMBER_A, status=200)
        self.assertEqual([], self.uuids(resp))
        resp = self.call('GET', '/v2/accelerator_requests?instance=%s'
                         '&bind_state=resolved' % self.inst_b, MEMBER_A,
                         status=200)
        self.assertEqual([], self.uuids(resp))

    def test_list_without_project_shows_nothing(self):
        # An ownerless ARQ (created by an admin without a project) is not
        # anyone's.
        self.make_arqs(None)
        self.assert_forbidden(self.call('GET', '/v2/accelerator_requests',
                                        {'X-Roles': 'member'}))

    def test_admin_and_service_list_every_project(self):
        mine = self.make_arqs(PROJECT_A)
        expected = sorted([mine, self.arq_b, self.arq_b_initial])
        for headers in (ADMIN, NOVA_FOR_A, {'X-Auth-Token': 'admin'}):
            resp = self.call('GET', '/v2/accelerator_requests', headers,
                             status=200)
            self.assertEqual(expected, self.uuids(resp))

    def test_show_other_project_is_404(self):
        resp = self.call('GET', '/v2/accelerator_requests/%s' % self.arq_b,
                         MEMBER_A, status=404)
        self.assertEqual('accel.arq.not_found',
                         resp.json['errors'][0]['code'])
        self.call('GET', '/v2/accelerator_requests/%s' % self.arq_b,
                  MEMBER_B, status=200)
        self.call('GET', '/v2/accelerator_requests/%s' % self.arq_b,
                  ADMIN, status=200)

    def test_delete_other_projects_arqs_touches_nothing(self):
        # Invisible is unknown: 404, as Cyborg answers for unknown ARQs.
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s,%s'
                  % (self.arq_b, self.arq_b_initial), MEMBER_A, status=404)
        self.call('DELETE', '/v2/accelerator_requests?instance=%s'
                  % self.inst_b, MEMBER_A, status=204)
        self.assertEqual(arq_obj.BOUND, self.arq_state(self.arq_b))
        self.assertEqual(arq_obj.INITIAL, self.arq_state(self.arq_b_initial))

    def test_member_deletes_own_unbound_arqs_only(self):
        initial = self.make_arqs(PROJECT_A)
        unbound = self.make_arqs(PROJECT_A, arq_obj.UNBOUND)
        inst = uuidutils.generate_uuid()
        bound = self.make_arqs(PROJECT_A, arq_obj.BOUND, inst)
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s,%s'
                  % (initial, unbound), MEMBER_A, status=204)
        self.assertIsNone(self.arq_state(initial))
        self.assertIsNone(self.arq_state(unbound))
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?instance=%s' % inst,
            MEMBER_A))
        self.assertEqual(arq_obj.BOUND, self.arq_state(bound))
        # Nova deletes them with its service token.
        self.call('DELETE', '/v2/accelerator_requests?instance=%s' % inst,
                  NOVA_FOR_A, status=204)
        self.assertIsNone(self.arq_state(bound))

    def test_forbidden_delete_deletes_nothing(self):
        initial = self.make_arqs(PROJECT_A)
        bound = self.make_arqs(PROJECT_A, arq_obj.BOUND)
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?arqs=%s,%s'
            % (initial, bound), MEMBER_A))
        self.assertEqual(arq_obj.INITIAL, self.arq_state(initial))

    def test_service_deletes_any_project_admin_only_its_own(self):
        self.call('DELETE', '/v2/accelerator_requests?instance=%s'
                  % self.inst_b, NOVA_FOR_A, status=204)
        self.assertIsNone(self.arq_state(self.arq_b))
        # Cyborg 17's new default (project_member_or_service): an admin of
        # another project sees B's ARQ but may not delete it.
        self.assert_forbidden(self.call(
            'DELETE', '/v2/accelerator_requests?arqs=%s'
            % self.arq_b_initial, ADMIN))
        self.assertEqual(arq_obj.INITIAL, self.arq_state(self.arq_b_initial))
        self.call('DELETE', '/v2/accelerator_requests?arqs=%s'
                  % self.arq_b_initial, NOVA_FOR_A, status=204)
        self.assertIsNone(self.arq_state(self.arq_b_initial))

    def test_bind_without_service_token_is_forbidden(self):
        mine = self.make_arqs(PROJECT_A)
        for headers in (MEMBER_A,
                        dict(MEMBER_A, **{'X-Roles': 'member,service'})):
            self.assert_forbidden(self.call(
                'PATCH', '/v2/accelerator_requests', headers,
                self.bind_body(mine)))
        self.assertEqual(arq_obj.INITIAL, self.arq_state(mine))
        self.assertEqual([], self.submitted)

    def test_bind_with_service_token(self):
        mine = self.make_arqs(PROJECT_A)
        self.call('PATCH', '/v2/accelerator_requests', NOVA_FOR_A,
                  self.bind_body(mine), status=202)
        self.assertEqual(arq_obj.BIND_STARTED, self.arq_state(mine))
        self.assertEqual([mine], self.submitted)

    def test_bind_with_noauth_admin_token_needs_the_service_token(self):
        mine = self.make_arqs(PROJECT_A)
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
        mine = self.make_arqs(PROJECT_A, arq_obj.BOUND)
        body = {mine: [{'path': p, 'op': 'remove'} for p in
                       ('/hostname', '/device_rp_uuid', '/instance_uuid')]}
        self.assert_forbidden(self.call(
            'PATCH', '/v2/accelerator_requests', MEMBER_A, body))
        self.assertEqual(arq_obj.BOUND, self.arq_state(mine))
        self.call('PATCH', '/v2/accelerator_requests', NOVA_FOR_A, body,
                  status=202)
        self.assertEqual(arq_obj.UNBOUND, self.arq_state(mine))

    def test_service_binds_any_project(self):
        # Nova acting with an admin's token of another project.
        self.call('PATCH', '/v2/accelerator_requests', NOVA_FOR_A,
                  self.bind_body(self.arq_b_initial), status=202)
        self.assertEqual([self.arq_b_initial], self.submitted)

    def test_bind_other_projects_arq_is_forbidden_before_lookup(self):
        # 403 whether or not the ARQ exists: nothing leaks.
        for uuid in (self.arq_b_initial, uuidutils.generate_uuid()):
            self.assert_forbidden(self.call(
                'PATCH', '/v2/accelerator_requests', MEMBER_A,
                self.bind_body(uuid)))


class DeviceProfilePolicyTest(AppTestBase):

    def test_member_reads(self):
        resp = self.call('GET', '/v2/device_profiles?name=dp1', MEMBER_A,
                         status=200)
        self.assertEqual(['dp1'],
                         [d['name'] for d in resp.json['device_profiles']])
        self.call('GET', '/v2/device_profiles/dp1', dict(
            MEMBER_A, **{'OpenStack-API-Version': 'accelerator 2.2'}),
            status=200)

    def test_member_cannot_create_or_delete(self):
        self.assert_forbidden(self.call(
            'POST', '/v2/device_profiles', MEMBER_A,
            [{'name': 'dp2', 'groups': [{'resources:PGPU': '1'}]}]))
        self.assert_forbidden(self.call('DELETE', '/v2/device_profiles/dp1',
                                        MEMBER_A))
        self.assert_forbidden(self.call(
            'DELETE', '/v2/device_profiles?value=dp1', MEMBER_A))
        # Checked before the body: no validation detail leaks either.
        self.assert_forbidden(self.call('POST', '/v2/device_profiles',
                                        MEMBER_A, {'junk': 1}))

    def test_admin_creates_and_deletes(self):
        self.call('POST', '/v2/device_profiles', ADMIN,
                  [{'name': 'dp2', 'groups': [{'resources:PGPU': '1'}]}],
                  status=201)
        self.call('DELETE', '/v2/device_profiles/dp2', ADMIN, status=204)
        self.call('DELETE', '/v2/device_profiles?value=dp1',
                  {'X-Auth-Token': 'admin'}, status=204)


class DevicePolicyTest(AppTestBase):

    def test_devices_and_deployables_are_admin_only(self):
        some = uuidutils.generate_uuid()
        for path in ('/v2/devices', '/v2/devices/' + some,
                     '/v2/deployables', '/v2/deployables/' + some):
            self.assert_forbidden(self.call('GET', path, MEMBER_A))
            self.assert_forbidden(self.call('GET', path, NOVA_FOR_A))
        self.call('GET', '/v2/devices', ADMIN, status=200)
        self.call('GET', '/v2/deployables', ADMIN, status=200)


class EveryRouteIsGuardedTest(AppTestBase):
    """No handler answers without asking the policy (version documents
    excepted: they are public)."""

    PUBLIC = ('', '/', '/v2', '/v2/')

    def test_every_route_calls_authorize(self):
        calls = []
        real = policy.authorize

        def spy(context, rule, *args, **kwargs):
            calls.append(rule)
            return real(context, rule, *args, **kwargs)

        self.useFixture(fixtures.MockPatch(
            'accel_backend.policy.authorize', side_effect=spy))
        some = uuidutils.generate_uuid()
        for path, methods in routes.ROUTES.items():
            if path in self.PUBLIC:
                continue
            url = re.sub(r'\{[a-z_]+\}', some, path)
            for method in methods:
                del calls[:]
                resp = self.call(method, url, MEMBER_A)
                self.assertTrue(calls, '%s %s answered %s without a policy '
                                'check' % (method, path, resp.status))
                self.assertLess(resp.status_code, 500, resp.text)


class SampleGeneratorTest(testtools.TestCase):
    """``oslopolicy-sample-generator --namespace accel_backend`` (needs the
    package installed for its entry points: ``pip install --no-deps .``;
    the code itself comes from this tree through PYTHONPATH)."""

    def run_tool(self, tool, *args):
        eps = importlib.metadata.entry_points(group='oslo.policy.policies')
        if 'accel_backend' not in [ep.name for ep in eps]:
            self.fail('entry point oslo.policy.policies:accel_backend is '
                      'not registered: pip install --no-deps %s' % REPO)
        exe = os.path.join(os.path.dirname(sys.executable), tool)
        env = dict(os.environ, PYTHONPATH=REPO)
        proc = subprocess.run([exe] + list(args), capture_output=True,
                              text=True, env=env, timeout=120, cwd=REPO)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout

    def test_sample_lists_every_rule(self):
        out = self.run_tool('oslopolicy-sample-generator', '--namespace',
                            'accel_backend')
        for name, check in EXPECTED_DEFAULTS.items():
            self.assertIn('#"%s": "%s"' % (name, check), out)
        self.assertIn('# PATCH  /v2/accelerator_requests', out)

    def test_policy_generator_uses_the_enforcer_entry_point(self):
        out = self.run_tool('oslopolicy-policy-generator', '--namespace',
                            'accel_backend')
        self.assertIn('"accelerator:arq:update": "rule:service_token_api"',
                      out)
