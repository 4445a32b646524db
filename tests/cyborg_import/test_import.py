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

"""``import-cyborg`` on a Cyborg 17 database made by ``cyborg-dbsync``:
SQLite, and MariaDB (Cyborg's migrations, read through PyMySQL)."""

import contextlib
import datetime
import http.server
import io
import threading
import uuid

import sqlalchemy as sa
import testtools

from accel_backend.cmd import manage
from accel_backend import cyborg_import
from accel_backend.cyborg_import import source
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from tests.cyborg_import import fixtures as cy_fixtures
from tools.fixtures import databases

HOST = 'cyborg-node'
OTHER = 'node-without-discovery'
BASE = 'http://accel/v2'


class TestImport(testtools.TestCase):
    """On SQLite (``TestImportMariaDB`` runs them on MariaDB)."""

    def cyborg_database(self):
        return cy_fixtures.CyborgDatabase()

    def setUp(self):
        super().setUp()
        self.cy = self.useFixture(self.cyborg_database())
        self.ours = self.useFixture(cy_fixtures.OurSide([HOST]))
        self.dp_id, self.dp_uuid = self.cy.add_profile('cy-dp')
        self.dep, self.rp, self.handles = self.cy.add_fake_device(HOST)
        self.instance = str(uuid.uuid4())
        self.bound = self.cy.add_arq(
            self.dp_id, 'Bound', HOST, self.rp, self.instance,
            handle=self.handles[4], deployable=self.dep, project='p1')
        self.initial = self.cy.add_arq(self.dp_id, project='p1')
        self.failed = self.cy.add_arq(self.dp_id, 'BindFailed', HOST,
                                      self.rp, str(uuid.uuid4()))
        self.deleting = self.cy.add_arq(self.dp_id, 'Deleting')

    def _run(self, apply, **kwargs):
        return cyborg_import.run(self.ours.db, self.cy.url, apply=apply,
                                 quiet_period=0, **kwargs)

    def _arqs(self):
        with self.ours.db.transaction() as session:
            return {a.uuid: arq_obj.to_dict(a, BASE)
                    for a in arq_obj.list_(session)}

    def test_dry_run_writes_nothing_and_says_what_it_would_do(self):
        report, committed = self._run(apply=False)
        self.assertFalse(committed)
        text = '\n'.join(report.actions)
        self.assertIn('create device profile cy-dp (%s)' % self.dp_uuid,
                      text)
        self.assertIn('take over resource provider %s' % self.rp, text)
        self.assertIn('import ARQ %s' % self.bound, text)
        self.assertEqual(1, len(report.unmapped), report.unmapped)
        self.assertIn('ARQ %s' % self.deleting, report.unmapped[0])
        self.assertEqual([], report.holding)
        self.assertEqual({}, self._arqs())

    def test_apply_keeps_uuids_state_binding_and_provider(self):
        report, committed = self._run(apply=True)
        self.assertTrue(committed)
        arqs = self._arqs()
        self.assertEqual({self.bound, self.initial, self.failed},
                         set(arqs))
        view = arqs[self.bound]
        cy_handle = self.cy.handle_uuid(self.handles[4])
        self.assertEqual(
            {'state': 'Bound', 'device_profile_name': 'cy-dp',
             'device_profile_group_id': 0, 'hostname': HOST,
             'device_rp_uuid': self.rp, 'instance_uuid': self.instance,
             'project_id': 'p1', 'attach_handle_type': 'TEST_PCI',
             'attach_handle_uuid': cy_handle,
             'attach_handle_info': {'domain': '0000', 'bus': '0c',
                                    'device': '0', 'function': '5'}},
            {k: view[k] for k in (
                'state', 'device_profile_name', 'device_profile_group_id',
                'hostname', 'device_rp_uuid', 'instance_uuid',
                'project_id', 'attach_handle_type', 'attach_handle_uuid',
                'attach_handle_info')})
        self.assertEqual('2026-01-02T03:04:05+00:00', view['created_at'])
        self.assertEqual('Initial', arqs[self.initial]['state'])
        self.assertEqual('BindFailed', arqs[self.failed]['state'])
        with self.ours.db.transaction() as session:
            dp = session.scalar(sa.select(models.DeviceProfile))
            self.assertEqual((self.dp_uuid, 'cy-dp'), (dp.uuid, dp.name))
            dep = session.scalar(sa.select(models.Deployable))
            self.assertEqual(self.rp, dep.rp_uuid)
            handle = session.scalar(sa.select(models.AttachHandle).where(
                models.AttachHandle.uuid == cy_handle))
            self.assertEqual((True, 'bound'), (handle.in_use, handle.state))
            self.assertEqual(1, session.scalar(sa.select(sa.func.count(
                models.AttachHandle.id)).where(
                    models.AttachHandle.in_use.is_(True))))
            self.assertEqual([None] * 3, [a.pending_event for a in
                                          arq_obj.list_(session)])

    def test_second_run_changes_nothing(self):
        self._run(apply=True)
        before = self._arqs()
        report, committed = self._run(apply=True)
        self.assertEqual([], report.actions)
        self.assertEqual(before, self._arqs())

    def test_unmapped_bound_arq_blocks_apply(self):
        _, other_rp, handles = self.cy.add_fake_device(OTHER)
        lost = self.cy.add_arq(self.dp_id, 'Bound', OTHER, other_rp,
                               str(uuid.uuid4()), handle=handles[0])
        report, committed = self._run(apply=True)
        self.assertFalse(committed)
        self.assertEqual(1, len(report.holding))
        self.assertIn(lost, report.holding[0])
        self.assertIn('was not mapped', report.holding[0])
        self.assertTrue(any('no device 0000:0c:00.0 on %s discovered' %
                            OTHER in u for u in report.unmapped))
        self.assertEqual({}, self._arqs())
        report, committed = self._run(apply=True, allow_unmapped=True)
        self.assertTrue(committed)
        self.assertNotIn(lost, self._arqs())

    def test_refuses_while_cyborg_writes(self):
        stop = threading.Event()

        def writer():
            # As a Cyborg agent's report does: devices touched.
            while not stop.is_set():
                self.cy.execute('UPDATE devices SET updated_at = :now',
                                now=datetime.datetime.now(
                                    datetime.timezone.utc).replace(
                                    tzinfo=None))
                stop.wait(0.05)
        thread = threading.Thread(target=writer)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(stop.set)
        # 0.5 s: on MariaDB (whole-second timestamps) the import waits
        # source.WHOLE_SECONDS_QUIET_PERIOD instead, without which it
        # missed this writer in 3 of 4 runs.
        exc = self.assertRaises(
            exception.CyborgImportRefused, cyborg_import.run,
            self.ours.db, self.cy.url, apply=True, quiet_period=0.5)
        self.assertIn('still writing', str(exc))
        self.assertEqual({}, self._arqs())

    def test_refuses_while_cyborg_api_answers(self):
        server = http.server.HTTPServer(
            ('127.0.0.1', 0), http.server.BaseHTTPRequestHandler)
        thread = threading.Thread(target=server.serve_forever)
        thread.start()
        self.addCleanup(thread.join)
        self.addCleanup(server.shutdown)
        url = 'http://127.0.0.1:%d/' % server.server_port
        self.assertRaises(exception.CyborgImportRefused, self._run,
                          apply=True, api_url=url)
        server.shutdown()
        report, committed = self._run(apply=True, api_url=url)
        self.assertTrue(committed)

    def test_refuses_what_is_no_cyborg_database(self):
        exc = self.assertRaises(
            exception.CyborgImportRefused, cyborg_import.run,
            self.ours.db, 'sqlite:///%s/accel.sqlite' %
            self.ours.conf.state_path, quiet_period=0)
        self.assertIn('not a Cyborg 17 database', str(exc))

    def test_profile_conflict_is_reported(self):
        with self.ours.db.transaction() as session:
            session.add(models.DeviceProfile(
                uuid=str(uuid.uuid4()), name='cy-dp',
                groups=[{'resources:FPGA': '2'}]))
        report, _ = self._run(apply=False)
        self.assertIn('other groups exists here', report.unmapped[0])
        self.assertEqual(1, len(report.holding))

    def test_command_line(self):
        out = io.StringIO()
        argv = ['--config-file', self.ours.config_file, 'import-cyborg',
                '--cyborg-connection', self.cy.url, '--quiet-period', '0']
        with contextlib.redirect_stdout(out):
            self.assertEqual(0, manage.main(argv))
        self.assertIn('Would do (', out.getvalue())
        self.assertIn('Dry run: nothing written', out.getvalue())
        self.assertEqual({}, self._arqs())
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(0, manage.main(argv + ['--apply']))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(0, manage.main(argv + ['--apply']))
        self.assertIn('Done (0 changes)', out.getvalue())


class TestImportMariaDB(TestImport):
    """The same, from a MariaDB database (``mysql+pymysql://``) whose
    schema Cyborg 17's migrations made (``cyborg-dbsync upgrade``), as in
    a devstack or production Cyborg.  One server per class, a database
    per test."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = databases.MariaDBServer()
        cls.server.setUp()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanUp()
        super().tearDownClass()

    def cyborg_database(self):
        return cy_fixtures.CyborgDatabase(mariadb=self.server)


class TestPciAddress(testtools.TestCase):

    def test_forms(self):
        for info in ('{"domain":"0000","bus":"0c","device":"0",'
                     '"function":"1"}', '0000:0c:00.1',
                     {'domain': '0', 'bus': 'c', 'device': '00',
                      'function': '1'}):
            self.assertEqual('0000:0c:00.1', source.pci_address(info))
        self.assertIsNone(source.pci_address('{"asked_type": "x"}'))
        self.assertIsNone(source.pci_address('not an address'))
