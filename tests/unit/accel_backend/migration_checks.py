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


"""What the expand/contract tests share (``accel_backend.db.migration``):

* ``walk``: apply a branch's migrations one at a time and report what
  each changed that its branch must not change (``violations``), by
  reflecting the schema (SQLAlchemy's inspector) before and after;
* ``plant``: revision files of a later release, in a directory handed to
  ``migration.alembic_config`` (a good expand and contract pair, and two
  bad ones);
* ``SharingScenarios``: the processes of one release on a database
  another release migrated, mixed into a test case that gives ``url()``.
"""

import os

import alembic.command
import alembic.script
from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.agent.discovery.drivers import generic_pci
from accel_backend.conductor import binder as binder_mod
from accel_backend.conductor import host_sync
from accel_backend.db import api as db_api
from accel_backend.db import migration
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_common import arq_states
from tests.unit.accel_backend import base
from tests.unit.accel_backend import binder_fixtures

_HEAD = '''from alembic import op
import sqlalchemy as sa

revision = %r
down_revision = %r
branch_labels = None
depends_on = None


def upgrade():
'''

#: A later release's expand: a table, a nullable column, an index.
LATER_EXPAND = ('0007_expand', '0006_expand', '''\
    op.create_table(
        'arq_events',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('arq_uuid', sa.String(36), nullable=False, index=True),
        sa.Column('event', sa.String(32), nullable=False))
    op.add_column('accelerator_requests',
                  sa.Column('bound_at', sa.DateTime))
    op.add_column('devices', sa.Column(
        'numa_node', sa.Integer, nullable=False, server_default='-1'))
    op.create_index('ix_arq_hostname', 'accelerator_requests', ['hostname'])
''')
#: Its contract: the planned drop of ``attach_handles.in_use``.
LATER_CONTRACT = ('0006_contract', '0005_contract', '''\
    op.drop_column('attach_handles', 'in_use')
''')
#: Bad: an expand that drops a column and tightens another.
BAD_EXPAND = ('0007_expand', '0006_expand', '''\
    with op.batch_alter_table('attach_handles') as batch:
        batch.drop_column('state_reason')
        batch.add_column(sa.Column('slot', sa.Integer, nullable=False,
                                   server_default='0'))
    with op.batch_alter_table('accelerator_requests') as batch:
        batch.add_column(sa.Column('zone', sa.String(16), nullable=False))
        batch.alter_column('hostname', existing_type=sa.String(255),
                           nullable=False)
''')
#: Bad: a contract that adds a column.
BAD_CONTRACT = ('0006_contract', '0005_contract', '''\
    op.add_column('devices', sa.Column('numa_node', sa.Integer))
''')


def plant(directory, *migrations):
    """Write ``migrations`` (``(revision, down_revision, body)``) as
    revision files in ``directory``; returns the alembic config of this
    code plus them."""
    for revision, down, body in migrations:
        with open(os.path.join(directory, revision + '.py'), 'w') as f:
            f.write(_HEAD % (revision, down) + body)
    return migration.alembic_config([directory])


def reflect(engine):
    """``{table: {'columns': {name: (nullable, type, has server
    default)}, 'indexes': {(name, columns, unique)}}}`` of the database."""
    inspector = sa.inspect(engine)
    schema = {}
    for table in inspector.get_table_names():
        columns = {c['name']: (c['nullable'], str(c['type']).upper(),
                               c.get('default') is not None)
                   for c in inspector.get_columns(table)}
        indexes = {(ix['name'], tuple(ix['column_names']),
                    bool(ix['unique']))
                   for ix in inspector.get_indexes(table)}
        schema[table] = {'columns': columns, 'indexes': indexes}
    return schema


def violations(branch, before, after):
    """What a migration of ``branch`` did that its branch forbids, from
    the schemas ``reflect`` gave before and after it (list of str).

    expand: nothing dropped, renamed, retyped or made NOT NULL; new
    columns nullable or with a server default (the previous release's
    inserts do not name them).  contract: no new table or column (what
    this release's code needs must exist before contract runs).
    """
    found = []
    for table in sorted(set(before) - set(after)):
        found.append('drops table %s' % table)
    for table in sorted(set(after) - set(before)):
        if branch == migration.CONTRACT:
            found.append('adds table %s' % table)
    for table in sorted(set(before) & set(after)):
        old, new = before[table]['columns'], after[table]['columns']
        for name in sorted(set(old) - set(new)):
            found.append('drops column %s.%s' % (table, name))
        for name in sorted(set(new) - set(old)):
            if branch == migration.CONTRACT:
                found.append('adds column %s.%s' % (table, name))
            elif not new[name][0] and not new[name][2]:
                found.append('adds NOT NULL column %s.%s without a server '
                             'default' % (table, name))
        for name in sorted(set(old) & set(new)):
            if old[name][0] and not new[name][0]:
                found.append('makes %s.%s NOT NULL' % (table, name))
            if old[name][1] != new[name][1]:
                found.append('changes the type of %s.%s' % (table, name))
        for index in sorted(before[table]['indexes'] -
                            after[table]['indexes']):
            found.append('drops index %s of %s' % (index[0], table))
    if branch == migration.CONTRACT:
        return [v for v in found if v.startswith('adds')]
    return found


def walk(engine, branch, cfg=None):
    """Apply ``branch``'s migrations one at a time to the database of
    ``engine`` (first the other branch's to its head when ``branch`` is
    contract, as an upgrade does); returns ``[(revision, violations)]``
    in the order applied."""
    cfg = cfg or migration.alembic_config()
    scripts = alembic.script.ScriptDirectory.from_config(cfg)
    head = migration.code_heads(cfg)[branch]
    chain = [r.revision for r in scripts.iterate_revisions(head, 'base')
             if migration.parse(r.revision)[1] == branch]
    first = scripts.get_revision(chain[-1]).down_revision
    targets = [first] + (['expand@head'] if branch == migration.CONTRACT
                         else [])
    for target in targets:
        _upgrade(engine, cfg, target)
    report = []
    for revision in reversed(chain):
        before = reflect(engine)
        _upgrade(engine, cfg, revision)
        report.append((revision, violations(branch, before,
                                            reflect(engine))))
    return report


def _upgrade(engine, cfg, target):
    with engine.begin() as conn:
        cfg.attributes['connection'] = conn
        alembic.command.upgrade(cfg, target)


class DisciplineScenarios:
    """Each branch's discipline checked on a backend's own DDL: a
    ``testtools.TestCase`` mixin whose class gives ``engine()`` (a fresh,
    empty database's engine) and ``self.tmp`` (a directory)."""

    def test_expand_migrations_only_add(self):
        report = walk(self.engine(), migration.EXPAND)
        self.assertEqual(['0005_expand', '0006_expand'],
                         [r[0] for r in report])
        self.assertEqual([], [r for r in report if r[1]])

    def test_contract_migrations_only_remove(self):
        report = walk(self.engine(), migration.CONTRACT)
        self.assertEqual('0005_contract', report[0][0])
        self.assertEqual([], [r for r in report if r[1]])

    def test_later_release_pair_passes(self):
        cfg = plant(self.tmp, LATER_EXPAND, LATER_CONTRACT)
        for branch in migration.BRANCHES:
            report = walk(self.engine(), branch, cfg)
            want = {migration.EXPAND: ['0005_expand', '0006_expand',
                                       '0007_expand'],
                    migration.CONTRACT: ['0005_contract', '0006_contract']}
            self.assertEqual(want[branch], [r[0] for r in report])
            self.assertEqual([], [r for r in report if r[1]])

    def test_bad_expand_is_caught(self):
        cfg = plant(self.tmp, BAD_EXPAND)
        report = walk(self.engine(), migration.EXPAND, cfg)
        self.assertEqual(('0007_expand', [
            'adds NOT NULL column accelerator_requests.zone without a '
            'server default',
            'makes accelerator_requests.hostname NOT NULL',
            'drops column attach_handles.state_reason']), report[-1])

    def test_bad_contract_is_caught(self):
        cfg = plant(self.tmp, BAD_CONTRACT)
        report = walk(self.engine(), migration.CONTRACT, cfg)
        self.assertEqual(('0006_contract', ['adds column devices.numa_node']),
                         report[-1])


class SharingScenarios:
    """Old and new processes on one database during an upgrade.  Mixed
    into a ``testtools.TestCase`` that has ``new_url()`` (an empty
    database's URL) and a ``tmp`` directory.

    "This release" is the code under test; the later release is
    ``LATER_EXPAND`` and ``LATER_CONTRACT``, planted; the previous
    release's schema is revision 0004 (the head before the branches).
    """

    def database(self, url):
        db = db_api.Database(url)
        self.addCleanup(db.dispose)
        return db

    def exercise(self, db):
        """This release's basic work on ``db``: discovery stored, a device
        profile created, an ARQ created, bound by the binder and listed.

        Each call discovers the devices of a new host and binds there.

        :returns: the number of ARQs in the database afterwards.
        """
        found = generic_pci.GenericPCIDriver(base.make_conf(self)).discover()
        host = 'compute-' + uuidutils.generate_uuid()[:8]
        with db.transaction() as session:
            deps = host_sync.sync(session, host, found)
            rp = deps[0].rp_uuid
            profile = dp_obj.create(session, 'p-' + uuidutils.generate_uuid(),
                                    [{'resources:PGPU': '1'}])
            (arq,) = arq_obj.create(session, profile.name, project_id='p1')
            arq = arq_obj.get(session, arq.uuid, for_update=True)
            arq_obj.start_binding(session, arq, host, rp,
                                  uuidutils.generate_uuid())
        binder = binder_mod.Binder(db, binder_fixtures.FakeNotifier(),
                                   retry_interval=0.01, retry_timeout=5,
                                   workers=1)
        self.addCleanup(binder.stop)
        self.assertEqual(arq_states.BOUND, binder.bind_one(arq.uuid))
        with db.transaction() as session:
            bound = arq_obj.to_dict(arq_obj.get(session, arq.uuid), 'http://x')
            self.assertEqual(arq_states.BOUND, bound['state'])
            self.assertTrue(bound['attach_handle_info'])
            return len(arq_obj.list_(session))

    def test_previous_release_runs_on_expanded_schema(self):
        url = self.new_url()
        db = self.database(url)
        db.engine.dispose()
        with db.engine.begin() as conn:
            cfg = migration.alembic_config()
            cfg.attributes['connection'] = conn
            alembic.command.upgrade(cfg, '0004')
        # This release's code reads what its expand adds (the device
        # taints of 0006_expand), so it cannot stand in for the previous
        # release's processes before the upgrade; db expand comes first.
        self.assertRaises(exception.SchemaOutOfDate, db.check_schema)
        db.sync((migration.EXPAND,))
        found = db.check_schema()
        self.assertTrue(migration.contract_pending(found,
                                                   migration.code_heads()))
        # Work done on the expanded schema, contract still pending.
        self.assertEqual(1, self.exercise(db))
        db.sync((migration.CONTRACT,))
        self.assertFalse(migration.contract_pending(db.check_schema(),
                                                    migration.code_heads()))
        self.assertEqual(2, self.exercise(db))

    def test_this_release_runs_after_later_expand(self):
        db = self.database(self.new_url())
        db.sync()
        self.assertEqual(1, self.exercise(db))
        later = plant(self.tmp, LATER_EXPAND, LATER_CONTRACT)
        migration.upgrade(db.engine, (migration.EXPAND,), cfg=later)
        with db.engine.connect() as conn:
            self.assertEqual(('0005_contract', '0007_expand'),
                             tuple(sorted(migration.database_heads(conn))))
        # This release's processes accept the later expand and work on...
        self.assertEqual({'expand': '0007_expand',
                          'contract': '0005_contract'}, db.check_schema())
        self.assertEqual(2, self.exercise(db))
        # ...while the later release uses what it added.
        with db.engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO arq_events (arq_uuid, event) "
                "SELECT uuid, 'bound' FROM accelerator_requests"))
            conn.execute(sa.text(
                "UPDATE accelerator_requests SET bound_at = updated_at"))
        self.assertEqual(3, self.exercise(db))
        # This release's own db expand has nothing left to do.
        db.sync((migration.EXPAND,))
        # The later release's contract drops what this release uses: its
        # processes refuse the database from then on.
        migration.upgrade(db.engine, (migration.CONTRACT,), cfg=later)
        e = self.assertRaises(exception.SchemaContractedAhead,
                              db.check_schema)
        self.assertIn('0006_contract', str(e))
        with db.engine.connect() as conn:
            self.assertEqual(
                {'expand': '0007_expand', 'contract': '0006_contract'},
                migration.check(migration.database_heads(conn), later))
