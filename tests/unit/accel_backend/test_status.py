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

"""``accel-backend-status upgrade check`` and the Placement and database
backends of ``/healthcheck``, on a real SQLite database and a real
Placement (a real PostgreSQL server that goes away:
``tests/functional/test_status_database.py``)."""

import datetime
import json
import os

import fixtures
from oslo_upgradecheck import upgradecheck
import testtools
import webob

from accel_backend.cmd import runner
from accel_backend.cmd import status
from accel_backend.common import host_states
from accel_backend.db import api as db_api
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend.objects import host_status
from accel_backend import service as service_mod
from tests import placement_fixture
from tests.unit.accel_backend import audit_fixtures
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_dispatch

NOVA_CONF_OK = """[service_user]
send_service_user_token = true
auth_type = password
"""


class UpgradeCheckTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///%s' % os.path.join(self.tmp, 'a.sqlite')
        self.db = db_api.Database(self.url)
        self.addCleanup(self.db.dispose)
        self.db.sync()
        self.nova_conf = os.path.join(self.tmp, 'nova.conf')
        self.write(self.nova_conf, NOVA_CONF_OK)
        # Nova's compute API, for the audit's scope check.
        self.nova = audit_fixtures.NovaServers()
        self.nova_opts = audit_fixtures.intercept_nova(self, self.nova)

    def write(self, path, text):
        with open(path, 'w') as f:
            f.write(text)

    def run_check(self, nova=None, audit=None, **oslo_policy):
        conf = base.make_conf(
            self, database={'connection': self.url},
            discovery={'nova_config_file': self.nova_conf},
            nova=nova or self.nova_opts, audit=audit or {},
            oslo_policy=dict({'enforce_new_defaults': True}, **oslo_policy))
        argv = ['--config-file', conf.config_file[0], 'upgrade', 'check',
                '--json']
        out = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        code = status.main(argv)
        out.stream.flush()
        checks = json.loads(out.getDetails()['stdout'].as_text())['checks']
        return code, {c['check']: (c['result'], c['details'])
                      for c in checks}

    def test_all_pass(self):
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.SUCCESS, code, checks)
        self.assertEqual(6, len(checks))
        self.assertEqual(1, self.nova.scope_probes)

    def test_schema_behind(self):
        import alembic.command
        import alembic.config
        cfg = alembic.config.Config()
        cfg.set_main_option('script_location', db_api.MIGRATIONS_DIR)
        with self.db.engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.downgrade(cfg, '0003')
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.FAILURE, code)
        result, details = checks['Database schema']
        self.assertEqual(upgradecheck.Code.FAILURE, result)
        self.assertIn('at revision 0003', details)

    def test_nova_without_service_token(self):
        self.write(self.nova_conf, '[service_user]\nauth_type = password\n')
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.FAILURE, code)
        self.assertIn('does not send a service token',
                      checks['Nova service token'][1])
        os.unlink(self.nova_conf)
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.WARNING, code)

    def test_policy_file_naming_an_unknown_rule(self):
        path = os.path.join(self.tmp, 'policy.yaml')
        self.write(path, '"accelerator:arq:get_all": "rule:no_such_rule"\n')
        code, checks = self.run_check(policy_file=path)
        self.assertEqual(upgradecheck.Code.FAILURE, code)
        self.assertEqual(upgradecheck.Code.FAILURE,
                         checks['Policy file'][0])

    def test_json_policy_file(self):
        path = os.path.join(self.tmp, 'policy.json')
        self.write(path, '{}')
        code, checks = self.run_check(policy_file=path)
        self.assertEqual(upgradecheck.Code.FAILURE,
                         checks['Policy file'][0])

    def test_arq_stuck_in_bind_started(self):
        with self.db.transaction() as session:
            dp_obj.create(session, 'one', [{'resources:PGPU': '1'}])
            (arq,) = arq_obj.create(session, 'one')
            arq_obj.start_binding(session, arq, 'compute3', 'rp', 'inst')
            arq.updated_at = datetime.datetime(2026, 1, 1)
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.WARNING, code)
        self.assertIn('1 on compute3', checks['ARQs stuck binding'][1])

    def test_refused_discovery(self):
        with self.db.transaction() as session:
            host_status.record(session, 'compute2', host_states.REFUSED,
                               reason='bad root')
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.WARNING, code)
        self.assertIn('host compute2: discovery refused: bad root',
                      checks['Device discovery'][1])

    def test_audit_credentials_that_cannot_see_every_project(self):
        self.nova.scope_code = 403
        code, checks = self.run_check()
        self.assertEqual(upgradecheck.Code.WARNING, code)
        result, details = checks['Audit of deleted instances']
        self.assertEqual(upgradecheck.Code.WARNING, result)
        self.assertIn('deletes no ARQ of a deleted instance', details)
        self.assertIn('403', details)
        # Turned off by the operator: nothing to warn about.
        code, checks = self.run_check(
            audit={'delete_orphaned_arqs': 'false'})
        self.assertEqual(upgradecheck.Code.SUCCESS, code, checks)

    def test_audit_cannot_ask_nova(self):
        code, checks = self.run_check(nova=base.NO_NOVA)
        self.assertEqual(upgradecheck.Code.WARNING, code)
        self.assertIn('Nova cannot be asked',
                      checks['Audit of deleted instances'][1])


class AuditHealthTest(testtools.TestCase):
    """``accel_audit``: what the audit may delete, never a 503."""

    def test_scope_in_health_detail(self):
        self.useFixture(fixtures.FakeLogger())
        nova = audit_fixtures.NovaServers()
        nova.scope_code = 403
        tmp = self.useFixture(fixtures.TempDir()).path
        placement = self.useFixture(placement_fixture.PlacementFixture())
        svc = service_mod.Service(base.make_conf(
            self, database={'connection': 'sqlite:///%s/a.sqlite' % tmp},
            placement=base.placement_opts(placement.endpoint),
            nova=audit_fixtures.intercept_nova(self, nova),
            healthcheck={'detailed': 'true'}))
        self.addCleanup(svc.stop)

        def audit_health():
            resp = webob.Request.blank(
                '/healthcheck', headers={'Accept': 'application/json'}
            ).get_response(svc.app)
            self.assertEqual(200, resp.status_int, resp.text)
            (found,) = [r for r in resp.json['reasons']
                        if r['reason'].startswith('audit:')]
            return found['details']

        self.assertEqual('unknown', audit_health()['orphan_deletion'])
        svc.auditor.check_scope()
        details = audit_health()
        self.assertEqual(('off', 'own_project'),
                         (details['orphan_deletion'], details['scope']))
        self.assertIn('403', details['reason'])
        nova.scope_code = 200
        svc.auditor.check_scope()
        self.assertEqual('on', audit_health()['orphan_deletion'])


class SchemaAtStartTest(testtools.TestCase):
    """Only the embedded service migrates at start, and only with
    ``[database] sync_on_startup``; every other start checks the schema
    and refuses an old one with one line."""

    def build(self, role, db_url, **database):
        conf = base.make_conf(
            self, database=dict(connection=db_url, **database),
            placement=base.placement_opts('http://placement.invalid'),
            nova=base.NO_NOVA)
        svc = runner.build_or_refuse(conf, role, 'test-%s' % role)
        if svc is not None:
            self.addCleanup(svc.stop)
        return svc

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        tmp = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///%s/a.sqlite' % tmp

    def test_conductor_refuses_an_empty_database(self):
        self.assertIsNone(self.build(service_mod.CONDUCTOR, self.url))
        self.assertIn('test-conductor refuses to start: the database '
                      'schema is '
                      'at revision none, this release needs ',
                      self.logger.output)
        self.assertIn('run accel-backend-manage db sync', self.logger.output)
        db = db_api.Database(self.url)
        self.addCleanup(db.dispose)
        self.assertEqual((), db.schema_revisions()[0])

    def test_embedded_syncs_unless_told_not_to(self):
        self.assertIsNone(self.build(service_mod.EMBEDDED, self.url,
                                     sync_on_startup='false'))
        self.assertIn('refuses to start: the database schema',
                      self.logger.output)
        self.assertIsNotNone(self.build(service_mod.EMBEDDED, self.url))
        # Now at head: the conductor starts.
        self.assertIsNotNone(self.build(service_mod.CONDUCTOR, self.url))

    def test_agent_opens_no_database(self):
        # An empty database is no reason for an agent to refuse: it never
        # opens one (its [database] options are not read).
        svc = self.build(service_mod.AGENT, self.url)
        self.assertIsNotNone(svc)
        self.assertIsNone(svc.db)
        db = db_api.Database(self.url)
        self.addCleanup(db.dispose)
        self.assertEqual((), db.schema_revisions()[0])


class HealthPerRoleTest(testtools.TestCase):
    """An API node answers for itself: a compute host whose discovery is
    refused, or a Placement that is down, does not take every API node
    out of the load balancer; the embedded service, the whole accelerator
    side of a one-host cloud, still reports both."""

    def health(self, role):
        tmp = self.useFixture(fixtures.TempDir()).path
        db_url = 'sqlite:///%s/a.sqlite' % tmp
        db = db_api.Database(db_url)
        db.sync()
        with db.transaction() as session:
            host_status.record(session, 'compute7', host_states.REFUSED,
                               reason='bad sysfs root')
        db.dispose()
        kw = {}
        if role == service_mod.API:
            kw['transport'] = test_dispatch.fake_transport(self)
        svc = service_mod.Service(base.make_conf(
            self, database={'connection': db_url},
            placement=base.placement_opts('http://placement.invalid'),
            nova=base.NO_NOVA), role=role, **kw)
        self.addCleanup(svc.stop)
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        return resp.status_int, resp.json['reasons']

    def test_api_node_checks_its_database_only(self):
        self.useFixture(fixtures.FakeLogger())
        self.assertEqual((200, ['database OK']),
                         self.health(service_mod.API))

    def test_embedded_service_checks_everything(self):
        self.useFixture(fixtures.FakeLogger())
        status, reasons = self.health(service_mod.EMBEDDED)
        self.assertEqual(503, status)
        text = ' '.join(reasons)
        self.assertIn('host compute7: discovery refused', text)
        self.assertIn('placement unreachable', text)


class PlacementHealthTest(testtools.TestCase):

    def service(self, endpoint, connection=None,
                backends='accel_placement', detailed='true'):
        tmp = self.useFixture(fixtures.TempDir()).path
        svc = service_mod.Service(base.make_conf(
            self, database={
                'connection': connection or 'sqlite:///%s/a.sqlite' % tmp},
            placement=base.placement_opts(endpoint), nova=base.NO_NOVA,
            healthcheck={'backends': backends, 'detailed': detailed}))
        self.addCleanup(svc.stop)
        return svc

    def health(self, svc, accept='application/json'):
        return webob.Request.blank(
            '/healthcheck', headers={'Accept': accept}
        ).get_response(svc.app)

    def test_placement_reachable_or_not(self):
        self.useFixture(fixtures.FakeLogger())
        placement = self.useFixture(placement_fixture.PlacementFixture())
        self.assertEqual(200, self.health(
            self.service(placement.endpoint)).status_int)
        resp = self.health(self.service('http://placement.invalid'))
        self.assertEqual(503, resp.status_int)
        self.assertIn('placement unreachable', resp.text)
