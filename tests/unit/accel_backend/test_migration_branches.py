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


"""Expand/contract migrations (``accel_backend.db.migration``) on SQLite:
the discipline of each branch, enforced on every migration and shown to
catch planted bad ones; the revisions a process accepts; and the
processes of two releases sharing one database during an upgrade
(``migration_checks.SharingScenarios``; PostgreSQL in
``tests/functional/test_migration_sharing.py``)."""

import os
import socket

import alembic.command
import alembic.script
import fixtures
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa
import testtools

from accel_backend.cmd import manage
from accel_backend.cmd import status
from accel_backend.db import api as db_api
from accel_backend.db import migration
from accel_backend import exception
from tests.unit.accel_backend import base
from tests.unit.accel_backend import migration_checks as checks

#: The history before the branches: frozen, nothing is added to it.
BASE = ('0001', '0002', '0003', '0004')


class _SQLite(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.tmp = self.useFixture(fixtures.TempDir()).path
        os.mkdir(os.path.join(self.tmp, 'db'))
        self._n = 0

    def new_url(self):
        self._n += 1
        return 'sqlite:///%s/db/%d.sqlite' % (self.tmp, self._n)

    def engine(self):
        engine = sa.create_engine(self.new_url())
        self.addCleanup(engine.dispose)
        return engine


class BranchLayoutTest(_SQLite):

    def test_revision_ids_name_their_branch_in_order(self):
        scripts = alembic.script.ScriptDirectory.from_config(
            migration.alembic_config())
        heads = migration.code_heads()
        self.assertEqual({'expand', 'contract'}, set(heads))
        base = []
        for branch, head in heads.items():
            numbers = []
            for rev in scripts.iterate_revisions(head, 'base'):
                number, named = migration.parse(rev.revision)
                if named is None:
                    base.append(rev.revision)
                    continue
                self.assertEqual(branch, named, rev.revision)
                self.assertIn(branch, rev.branch_labels, rev.revision)
                self.assertFalse(rev.dependencies, rev.revision)
                numbers.append(number)
            self.assertEqual(sorted(numbers, reverse=True), numbers)
            self.assertEqual(len(set(numbers)), len(numbers))
        self.assertEqual(sorted(BASE * 2), sorted(base))

    def test_parse_refuses_other_ids(self):
        for bad in ('zz', '27e647c0fad4', '0005_other', '5_expand'):
            self.assertRaises(exception.SchemaRevisionUnknown,
                              migration.parse, bad)
        self.assertEqual((7, 'contract'), migration.parse('0007_contract'))
        self.assertEqual((4, None), migration.parse('0004'))


class DisciplineTest(checks.DisciplineScenarios, _SQLite):
    """Every migration of a branch does only what its branch allows."""


class SchemaCheckTest(_SQLite):
    """The revisions a process of this release accepts at start."""

    def database(self):
        db = db_api.Database(self.new_url())
        self.addCleanup(db.dispose)
        return db

    def set_revisions(self, db, *revisions):
        with db.engine.begin() as conn:
            conn.execute(sa.text('DELETE FROM alembic_version'))
            for rev in revisions:
                conn.execute(sa.text('INSERT INTO alembic_version '
                                     'VALUES (:r)'), {'r': rev})

    def test_revisions(self):
        db = self.database()
        e = self.assertRaises(exception.SchemaOutOfDate, db.check_schema)
        self.assertIn('at revision none, this release needs 0006_expand',
                      str(e))
        db.sync()
        both = {'expand': '0006_expand', 'contract': '0005_contract'}
        self.assertEqual(both, db.check_schema())
        cases = [
            # The previous release's head: not expanded yet.
            (('0004',), exception.SchemaOutOfDate),
            # Contract without expand (contract alone is refused).
            (('0005_contract',), exception.SchemaOutOfDate),
            # Expanded, contract lagging: accepted.
            (('0006_expand',), {'expand': '0006_expand', 'contract': None}),
            # The previous release's expand: not expanded to this one.
            (('0005_expand', '0005_contract'), exception.SchemaOutOfDate),
            # A later release's expand: accepted.
            (('0009_expand', '0005_contract'),
             dict(both, expand='0009_expand')),
            # A later release's contract: refused.
            (('0009_expand', '0009_contract'),
             exception.SchemaContractedAhead),
            # Revisions no release has.
            (('0004_expand',), exception.SchemaRevisionUnknown),
            (('0003_contract', '0006_expand'),
             exception.SchemaRevisionUnknown),
            (('0007',), exception.SchemaRevisionUnknown),
            (('ae1027a6acf',), exception.SchemaRevisionUnknown),
        ]
        for revisions, expected in cases:
            self.set_revisions(db, *revisions)
            if isinstance(expected, dict):
                self.assertEqual(expected, db.check_schema(), revisions)
            else:
                self.assertRaises(expected, db.check_schema)

    def test_contract_before_expand_refused(self):
        db = self.database()
        with db.engine.begin() as conn:
            cfg = migration.alembic_config()
            cfg.attributes['connection'] = conn
            alembic.command.upgrade(cfg, '0004')
        self.assertRaises(exception.SchemaOutOfDate, db.sync,
                          (migration.CONTRACT,))
        self.assertEqual(('0004',), db.schema_revisions()[0])


class SharingTest(checks.SharingScenarios, _SQLite):
    """The scenarios on SQLite files."""


class CommandsTest(_SQLite):
    """``accel-backend-manage db ...`` and the upgrade check."""

    def manage(self, *argv, url=None):
        """``(exit status, stdout, stderr)`` of the command."""
        path = os.path.join(self.tmp, 'accel.conf')
        with open(path, 'w') as f:
            f.write('[database]\nconnection = %s\nmax_retries = 0\n' %
                    (url or self.url))
        self.useFixture(fixtures.MonkeyPatch(
            'sys.argv', ['accel-backend-manage']))
        out = self.useFixture(fixtures.StringStream('stdout'))
        err = self.useFixture(fixtures.StringStream('stderr'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err.stream))
        code = manage.main(['--config-file', path, 'db'] + list(argv))
        out.stream.flush()
        err.stream.flush()
        return (code, out.getDetails()['stdout'].as_text(),
                err.getDetails()['stderr'].as_text())

    def upgrade_check(self):
        checker = status.Checks(base.make_conf(
            self, database={'connection': self.url}))
        return checker._check_schema()

    def test_expand_then_contract(self):
        self.url = self.new_url()
        code, _, err = self.manage('contract')
        self.assertEqual(1, code)
        self.assertEqual(1, err.count('\n'), err)
        self.assertTrue(err.startswith('contract refused: the database '
                                       'schema is at revision none'), err)
        self.assertEqual(upgradecheck.Code.FAILURE, self.upgrade_check().code)
        self.assertEqual(0, self.manage('expand')[0])
        self.assertEqual(
            'expand\tdatabase 0006_expand\trelease 0006_expand\n'
            'contract\tdatabase none\trelease 0005_contract\n',
            self.manage('version')[1])
        result = self.upgrade_check()
        self.assertEqual(upgradecheck.Code.WARNING, result.code)
        self.assertIn('run accel-backend-manage db contract', result.details)
        code, out, _ = self.manage('contract')
        self.assertEqual(0, code)
        self.assertEqual('Database contracted: at revision 0005_contract, '
                         '0006_expand\n', out)
        self.assertEqual(upgradecheck.Code.SUCCESS, self.upgrade_check().code)

    def test_unknown_revision_is_one_line(self):
        self.url = self.new_url()
        self.assertEqual(0, self.manage('sync')[0])
        engine = sa.create_engine(self.url)
        self.addCleanup(engine.dispose)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = "
                                 "'ae1027a6acf' WHERE version_num = "
                                 "'0006_expand'"))
        for action in ('expand', 'contract', 'sync', 'version'):
            code, _, err = self.manage(action)
            self.assertEqual(1, code, action)
            self.assertEqual(1, err.count('\n'), err)
            self.assertIn('at revision ae1027a6acf, which this release does '
                          'not know', err)
        result = self.upgrade_check()
        self.assertEqual(upgradecheck.Code.FAILURE, result.code)
        self.assertIn('The database schema is at revision ', result.details)

    def test_database_down_is_one_line(self):
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]   # closed once the block ends
        url = 'postgresql+psycopg2://u:p@127.0.0.1:%d/accel' % port
        for action in ('expand', 'contract', 'version'):
            code, _, err = self.manage(action, url=url)
            self.assertEqual(1, code, action)
            self.assertTrue(err.startswith('accel-backend-manage: the '
                                           'database does not answer: '), err)
            self.assertEqual(1, err.count('\n'), err)
