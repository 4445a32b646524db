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

"""A Cyborg 17 database made by Cyborg's own ``cyborg-dbsync``, with rows
written as Cyborg 17 writes them (openstack/cyborg
``cyborg/db/sqlalchemy/models.py`` and ``cyborg/accelerator/drivers/
fake.py``, 17.0.0), and our side of an import (database and discovery).
"""

import datetime
import itertools
import json
import os
import subprocess
import uuid

import fixtures
from oslo_config import cfg
import sqlalchemy as sa

from accel_backend.agent.discovery.drivers import fake as fake_driver
from accel_backend.conductor import host_sync
from accel_backend import conf as conf_mod
from accel_backend.db import api as db_api
from tools.launch import ComponentMissing
from tools.launch import cyborg as launch

FAKE_RC = 'FPGA'
FAKE_TRAIT = 'CUSTOM_FAKE_DEVICE'
GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]


def fake_rp_uuid(host):
    """What Cyborg 17's conductor names the provider of the fake device
    of ``host`` (uuid3 of the deployable's name)."""
    return str(uuid.uuid3(uuid.NAMESPACE_DNS, '%s_FakeDevice' % host))


class CyborgDatabase(fixtures.Fixture):
    """An empty Cyborg 17 database made by Cyborg's own ``cyborg-dbsync``;
    fails (never skips) without the Cyborg venv.

    SQLite (``create_schema``, as the benchmarks' Cyborg runs), or, given
    a started ``MariaDBServer`` fixture, a database of its
    (``cyborg-dbsync upgrade``: Cyborg's migrations, as devstack runs
    them on MySQL).  Rows are written with SQLAlchemy core on the
    reflected tables, so the same code writes both.

    :param mariadb: a started ``tools.fixtures.databases.
        MariaDBServer``, or None (SQLite).
    :ivar url: its SQLAlchemy URL; ``path``: the SQLite file (SQLite
        only); ``engine``: an engine on it.
    """

    _names = itertools.count()

    def __init__(self, mariadb=None):
        super().__init__()
        self.mariadb = mariadb

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.path = None
        if self.mariadb is None:
            self.path = os.path.join(tmp, 'cyborg.sqlite')
            self.url = 'sqlite:///%s' % self.path
        else:
            self.url = self.mariadb.create_database(
                'cyborg_%d_%d' % (os.getpid(), next(self._names)))
        conf = os.path.join(tmp, 'cyborg.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = %s\n' % self.url)
        try:
            if self.path:
                launch.create_schema(conf, self.path)
            else:
                launch.upgrade_schema(conf)
        except ComponentMissing as e:
            raise AssertionError(str(e))
        except subprocess.CalledProcessError as e:
            raise AssertionError('cyborg-dbsync failed: %s %s' % (
                e.stdout, e.stderr))
        self.engine = sa.create_engine(self.url)
        self.addCleanup(self.engine.dispose)
        self._meta = sa.MetaData()
        self.now = datetime.datetime(2026, 1, 2, 3, 4, 5)

    def _table(self, name):
        if name not in self._meta.tables:
            sa.Table(name, self._meta, autoload_with=self.engine)
        return self._meta.tables[name]

    def _insert(self, table, **values):
        values.setdefault('created_at', self.now)
        with self.engine.begin() as conn:
            return conn.execute(self._table(table).insert().values(
                **values)).inserted_primary_key[0]

    def execute(self, statement, **params):
        """Run one SQL statement (text) in its own transaction, as a
        Cyborg service writing would."""
        with self.engine.begin() as conn:
            conn.execute(sa.text(statement), params)

    def add_profile(self, name, groups=GROUPS):
        """:returns: ``(id, uuid)``."""
        dp_uuid = str(uuid.uuid4())
        return self._insert(
            'device_profiles', uuid=dp_uuid, name=name,
            profile_json=json.dumps({'groups': groups}),
            description='from cyborg'), dp_uuid

    def add_fake_device(self, host, total=16):
        """The fake driver's device on ``host``, reported to Placement.

        :returns: ``(deployable id, rp_uuid, [handle ids])``.
        """
        slot = '{"domain":"0000","bus":"0c","device":"00","function":"0"}'
        dev = self._insert(
            'devices', uuid=str(uuid.uuid4()), type='FPGA', vendor='0xABCD',
            model='miss model info', hostname=host, status='enabled',
            std_board_info='{}', vendor_board_info='fake_vendor_info')
        cpid = self._insert('controlpath_ids', uuid=str(uuid.uuid4()),
                            device_id=dev, cpid_type='PCI', cpid_info=slot)
        rp = fake_rp_uuid(host)
        dep = self._insert('deployables', uuid=str(uuid.uuid4()),
                           name='%s_FakeDevice' % host, device_id=dev,
                           rp_uuid=rp, num_accelerators=total,
                           driver_name='fake')
        for key, value in (('traits1', FAKE_TRAIT), ('rc', FAKE_RC)):
            self._insert('attributes', uuid=str(uuid.uuid4()),
                         deployable_id=dep, key=key, value=value)
        handles = []
        for fn in range(1, total + 1):
            info = {'domain': '0000', 'bus': '0c', 'device': str(fn // 8),
                    'function': str(fn % 8)}
            handles.append(self._insert(
                'attach_handles', uuid=str(uuid.uuid4()), deployable_id=dep,
                cpid_id=cpid, in_use=False, attach_type='TEST_PCI',
                attach_info=json.dumps(info)))
        return dep, rp, handles

    def add_arq(self, profile_id, state='Initial', host=None, rp=None,
                instance=None, handle=None, deployable=None, project=None):
        """An ARQ; a handle given is marked in use.  :returns: uuid."""
        arq_uuid = str(uuid.uuid4())
        self._insert(
            'extended_accelerator_requests', uuid=arq_uuid, state=state,
            project_id=project, device_profile_id=profile_id,
            device_profile_group_id=0, hostname=host, device_rp_uuid=rp,
            instance_uuid=instance, attach_handle_id=handle,
            deployable_id=deployable, substate='Initial')
        if handle is not None:
            self.execute('UPDATE attach_handles SET in_use = :t '
                         'WHERE id = :id', t=True, id=handle)
        return arq_uuid

    def handle_uuid(self, handle_id):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(
                'SELECT uuid FROM attach_handles WHERE id = :id'),
                {'id': handle_id}).scalar_one()


def accel_conf(host, tmp, fake_total=16):
    """accel_backend ``ConfigOpts`` of a host running the fake driver."""
    path = os.path.join(tmp, 'accel.conf')
    with open(path, 'w') as f:
        f.write('[DEFAULT]\nhost = %s\nstate_path = %s\n[database]\n'
                'connection = sqlite:///%s/accel.sqlite\n[discovery]\n'
                'enabled_drivers = fake\nfake_total = %d\n' % (
                    host, tmp, tmp, fake_total))
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf(['--config-file', path], project='accel-backend')
    return conf, path


class OurSide(fixtures.Fixture):
    """Our database at head, with what discovery finds on ``hosts`` (the
    fake driver), as ``discovery sync --no-report`` stores it."""

    def __init__(self, hosts):
        super().__init__()
        self.hosts = hosts

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.conf, self.config_file = accel_conf(self.hosts[0], tmp)
        self.db = db_api.Database.from_conf(self.conf)
        self.addCleanup(self.db.dispose)
        self.db.sync()
        for host in self.hosts:
            self.conf.set_override('host', host)
            found = fake_driver.FakeDriver(self.conf).discover()
            with self.db.transaction() as session:
                host_sync.sync(session, host, found)
        self.conf.clear_override('host')
