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

"""Authorization rules of accel_backend: the default rules, the
enforcer and the request context (the checks of every handler through the
real WSGI app are ``test_policy_api``'s; the keystonemiddleware path is
tests/functional/test_auth.py; the sample generators, run as programs,
tests/functional/test_policy_samples.py).
"""

import os

import fixtures
from oslo_policy import policy as oslo_policy
import testtools

from accel_backend.api import context as context_mod
from accel_backend.api import policies
from accel_backend.api import policy
from accel_backend import exception
from tests.unit.accel_backend import base
from tests.unit.accel_backend import policy_fixtures as fx


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
    'accelerator:deployable:taint': 'rule:admin_api',
    'accelerator:deployable:untaint': 'rule:admin_api',
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
        from accel_backend.api.policies import arq
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
                    project_id=fx.PROJECT_A)
        for name in EXPECTED_DEFAULTS:
            if name in BASE_RULES:
                continue
            self.assertEqual(
                name not in SERVICE_TOKEN_RULES,
                self.can(name, admin, policy.target(fx.PROJECT_A)), name)
        with_token = ctx(roles=['admin'], project_id=fx.PROJECT_A,
                         service_roles=['service'])
        for name in SERVICE_TOKEN_RULES:
            self.assertTrue(self.can(name, with_token,
                                     policy.target(fx.PROJECT_B)), name)

    def test_system_scoped_admin_is_refused_everywhere(self):
        # Every rule is project-scoped: oslo.policy refuses the scope.
        system_admin = ctx(roles=['admin'], system_scope='all',
                           service_roles=['service'])
        for name in EXPECTED_DEFAULTS:
            if name not in BASE_RULES:
                self.assertFalse(self.can(name, system_admin), name)

    def test_legacy_defaults_only_with_enforce_new_defaults_false(self):
        # oslo.policy 6 enforces the new defaults unless told otherwise.
        manager = ctx(roles=['manager'], project_id=fx.PROJECT_A)
        self.assertTrue(self.can('accelerator:device:get_all', manager))
        # A role-less user of the project passes only the legacy owner
        # check; a reader passes the new one.
        nobody = ctx(roles=[], project_id=fx.PROJECT_A)
        self.assertFalse(self.can('accelerator:arq:get_all', nobody))
        self.assertTrue(self.can('accelerator:arq:get_all', ctx(
            roles=['reader'], project_id=fx.PROJECT_A)))
        conf = base.make_conf(self, oslo_policy={
            'enforce_new_defaults': False})
        self.enforcer = policy.new_enforcer(conf)
        self.assertTrue(self.can('accelerator:arq:get_all', nobody))
        self.assertTrue(self.can('accelerator:device:get_all', manager))
        # No legacy default reopens binding to a user token.
        admin = ctx(roles=['admin'], project_id=fx.PROJECT_A)
        for name in SERVICE_TOKEN_RULES:
            self.assertFalse(self.can(name, admin), name)

    def test_owner_check(self):
        member = ctx(roles=['member', 'reader'], project_id=fx.PROJECT_A)
        rule = 'accelerator:arq:get_one'
        self.assertTrue(self.can(rule, member, policy.target(fx.PROJECT_A)))
        self.assertFalse(self.can(rule, member, policy.target(fx.PROJECT_B)))

    def test_no_project_never_owns_an_ownerless_object(self):
        # str(None) == str(None) would otherwise grant it.
        nobody = ctx(roles=['member'], project_id=None)
        self.assertFalse(self.can('accelerator:arq:get_one', nobody,
                                  policy.target(None)))
        self.assertFalse(self.can('accelerator:arq:create', nobody))

    def test_bind_needs_service_role_of_the_service_token(self):
        rule = 'accelerator:arq:update'
        self.assertFalse(self.can(rule, ctx(roles=['member', 'service'],
                                            project_id=fx.PROJECT_A)))
        self.assertTrue(self.can(rule, ctx(roles=['member'],
                                           project_id=fx.PROJECT_A,
                                           service_roles=['service'])))

    def test_forbidden_is_raised_with_the_stable_code(self):
        member = ctx(roles=['member'], project_id=fx.PROJECT_A,
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
