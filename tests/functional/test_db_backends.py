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

"""``accel-backend-manage db sync`` and the service on PostgreSQL and
MariaDB (MySQL).

Each test class starts one throwaway server
(``tools.fixtures.databases``); every test gets its own empty
database on it.  The tests check that:

* ``db sync`` (the console script) succeeds twice on an empty database and
  leaves exactly the schema of ``accel_backend.db.models`` (tables,
  columns, indexes, unique and foreign keys, as alembic's autogenerate
  compares them) at the newest revision;
* a whole ``Service`` works on it: discovery stored and reported to a real
  Placement (in-process fixture), device profiles, ARQs created, bound by
  the binder threads (row locks on a real server), resolved, unbound and
  deleted through the API, the Nova stub told.
"""

import json
import os
import textwrap
import time

from alembic import autogenerate
from alembic import migration
from alembic import script
import fixtures
import requests
import sqlalchemy as sa
import testtools
import webob

from accel_backend import conf as accel_conf
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import service as accel_service
from tests.functional.fixtures import database_server
from tests.functional.fixtures import servers
from tests import placement_fixture
from tools.fixtures import databases
from tools.fixtures import nova_stub
from tools.fixtures import process
from tools.launch import accel_backend as launch_accel

T4_GROUP = {'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'}
BIND_TIMEOUT = 20


class _DatabaseBackendTests(database_server.ServerPerClass):
    """Mixed into a TestCase with ``SERVER`` (a fixture class of
    ``databases``)."""

    def setUp(self):
        super().setUp()
        self.tmpdir = self.useFixture(fixtures.TempDir()).path
        self.url = self.new_database('accel')

    def write_conf(self, extra=''):
        path = os.path.join(self.tmpdir, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(textwrap.dedent('''\
                [DEFAULT]
                host = %s
                state_path = %s
                [database]
                connection = %s
                ''') % (servers.HOST, self.tmpdir, self.url) + extra)
        return path

    def engine(self):
        engine = sa.create_engine(self.url)
        self.addCleanup(engine.dispose)
        return engine

    # -- db sync -----------------------------------------------------------

    def test_db_sync_twice_creates_the_models_schema(self):
        conf_file = self.write_conf()
        for _ in range(2):
            process.run([process.venv_program('accel-backend-manage'),
                         '--config-file', conf_file, 'db', 'sync'],
                        env=process.code_env())

        engine = self.engine()
        inspector = sa.inspect(engine)
        self.assertEqual(
            sorted(list(models.Base.metadata.tables) + ['alembic_version']),
            sorted(inspector.get_table_names()))
        heads = script.ScriptDirectory(db_api.MIGRATIONS_DIR).get_heads()
        with engine.connect() as conn:
            self.assertEqual(
                sorted(heads), sorted(migration.MigrationContext.configure(
                    conn).get_current_heads()))
            diff = autogenerate.compare_metadata(
                migration.MigrationContext.configure(conn),
                models.Base.metadata)
        self.assertEqual([], diff)
        # The lookups the API and binder make are indexed.
        indexed = {(t, tuple(ix['column_names']))
                   for t in inspector.get_table_names()
                   for ix in inspector.get_indexes(t)}
        indexed |= {(t, tuple(uc['column_names']))
                    for t in inspector.get_table_names()
                    for uc in inspector.get_unique_constraints(t)}
        for key in [('accelerator_requests', ('instance_uuid',)),
                    ('accelerator_requests', ('uuid',)),
                    ('device_profiles', ('name',)),
                    ('devices', ('hostname', 'address')),
                    ('deployables', ('rp_uuid',))]:
            self.assertIn(key, indexed)

    # -- the service on it ---------------------------------------------------

    def start_service(self):
        placement = self.useFixture(placement_fixture.PlacementFixture())
        requests.post(placement.endpoint + '/resource_providers',
                      json={'name': servers.HOST},
                      headers={'x-auth-token': 'admin',
                               'openstack-api-version': 'placement 1.20'}
                      ).raise_for_status()
        self.nova = self.useFixture(nova_stub.NovaStub())
        conf_file = self.write_conf(launch_accel.config(
            placement.endpoint, self.nova.endpoint, servers.SYSFS_TWO_GPUS,
            [servers.T4_SPEC], binding={'workers': 4},
            nova={'event_retry_timeout': 5}))
        svc = accel_service.Service(
            accel_conf.new_conf(config_files=[conf_file]))
        self.addCleanup(svc.stop)
        self.addCleanup(svc.binder.wait_idle, 10)
        return svc

    def api(self, svc, method, path, body=None, expect=(200,)):
        # Binding needs the service token Nova sends.
        req = webob.Request.blank(path, method=method, headers={
            'X-Auth-Token': 'admin', 'X-Service-Token': 'nova',
            'Accept': 'application/json'})
        if body is not None:
            req.content_type = 'application/json'
            req.body = json.dumps(body).encode()
        resp = req.get_response(svc.app)
        self.assertIn(resp.status_code, expect, resp.text)
        return resp.json if resp.body else None

    def wait_resolved(self, svc, instance):
        deadline = time.monotonic() + BIND_TIMEOUT
        while True:
            try:
                return self.api(
                    svc, 'GET', '/v2/accelerator_requests?instance=%s'
                    '&bind_state=resolved' % instance)['arqs']
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.05)

    def bind_patch(self, arq_uuids, rps, instance):
        return {u: [{'op': 'add', 'path': '/hostname',
                     'value': servers.HOST},
                    {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
                    {'op': 'add', 'path': '/instance_uuid',
                     'value': instance}]
                for u, rp in zip(arq_uuids, rps)}

    def test_service_smoke(self):
        svc = self.start_service()
        records = svc.discover_and_report()
        rps = {r.address: r.rp_uuid for r in records}
        self.assertEqual(['0000:af:00.0', '0000:d8:00.0'], sorted(rps))
        self.assertEqual(2, len(self.api(svc, 'GET', '/v2/devices')
                                ['devices']))
        self.assertEqual(1, len(self.api(svc, 'GET', '/v2/deployables'
                                         '?limit=1')['deployables']))

        self.api(svc, 'POST', '/v2/device_profiles',
                 [{'name': 'one', 'groups': [T4_GROUP]}], expect=(201,))
        self.api(svc, 'POST', '/v2/device_profiles',
                 [{'name': 'two', 'groups': [T4_GROUP, T4_GROUP],
                   'description': 'zwei \u00e9'}], expect=(201,))
        [two] = self.api(svc, 'GET', '/v2/device_profiles?name=two')[
            'device_profiles']
        self.assertEqual(([T4_GROUP, T4_GROUP], 'zwei \u00e9'),
                         (two['groups'], two['description']))
        self.api(svc, 'POST', '/v2/device_profiles',
                 [{'name': 'one', 'groups': [T4_GROUP]}], expect=(409,))

        arqs = self.api(svc, 'POST', '/v2/accelerator_requests',
                        {'device_profile_name': 'two'},
                        expect=(201,))['arqs']
        self.assertEqual([0, 1], [a['device_profile_group_id']
                                  for a in arqs])
        [extra] = self.api(svc, 'POST', '/v2/accelerator_requests',
                           {'device_profile_name': 'one'},
                           expect=(201,))['arqs']

        # Both GPUs to one instance, in one PATCH (concurrent binders).
        vm1, vm2 = ('11111111-1111-4111-8111-111111111111',
                    '22222222-2222-4222-8222-222222222222')
        self.api(svc, 'PATCH', '/v2/accelerator_requests', self.bind_patch(
            [a['uuid'] for a in arqs],
            [rps['0000:af:00.0'], rps['0000:d8:00.0']], vm1),
            expect=(202,))
        resolved = self.wait_resolved(svc, vm1)
        self.assertEqual(['Bound', 'Bound'], [a['state'] for a in resolved])
        self.assertEqual(['af', 'd8'], sorted(
            a['attach_handle_info']['bus'] for a in resolved))
        # No GPU left for a third ARQ.
        self.api(svc, 'PATCH', '/v2/accelerator_requests', self.bind_patch(
            [extra['uuid']], [rps['0000:af:00.0']], vm2), expect=(202,))
        self.assertEqual(['BindFailed'], [
            a['state'] for a in self.wait_resolved(svc, vm2)])

        self.api(svc, 'DELETE', '/v2/device_profiles/two', expect=(409,))
        unbind = {arqs[0]['uuid']: [{'op': 'remove', 'path': '/hostname'},
                                    {'op': 'remove',
                                     'path': '/device_rp_uuid'},
                                    {'op': 'remove',
                                     'path': '/instance_uuid'}]}
        self.api(svc, 'PATCH', '/v2/accelerator_requests', unbind,
                 expect=(202,))
        self.assertEqual('Unbound', self.api(
            svc, 'GET', '/v2/accelerator_requests/' + arqs[0]['uuid'])[
            'state'])
        for vm in (vm1, vm2):
            self.api(svc, 'DELETE', '/v2/accelerator_requests?instance=' + vm,
                     expect=(204,))
        self.api(svc, 'DELETE', '/v2/accelerator_requests?arqs=' +
                 arqs[0]['uuid'], expect=(204,))
        self.assertEqual([], self.api(svc, 'GET', '/v2/accelerator_requests')
                         ['arqs'])
        self.api(svc, 'DELETE', '/v2/device_profiles/two', expect=(204,))
        self.api(svc, 'DELETE', '/v2/device_profiles?value=one',
                 expect=(204,))

        svc.binder.wait_idle(10)
        self.assertEqual(
            sorted([(vm1, arqs[0]['uuid'], 'completed'),
                    (vm1, arqs[1]['uuid'], 'completed'),
                    (vm2, extra['uuid'], 'failed')]),
            sorted((e['server_uuid'], e['tag'], e['status'])
                   for e in self.nova.received()))


class TestPostgreSQL(_DatabaseBackendTests, testtools.TestCase):
    SERVER = databases.PostgreSQLServer


class TestMariaDB(_DatabaseBackendTests, testtools.TestCase):
    SERVER = databases.MariaDBServer
