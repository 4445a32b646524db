"""A Cyborg 17 database made by Cyborg's own ``cyborg-dbsync``, with rows
written as Cyborg 17 writes them (openstack/cyborg
``cyborg/db/sqlalchemy/models.py`` and ``cyborg/accelerator/drivers/
fake.py``, 17.0.0), and our side of an import (database and discovery).
"""

import datetime
import json
import os
import sqlite3
import subprocess
import uuid

import fixtures
from oslo_config import cfg

from accel_backend import conf as conf_mod
from accel_backend.db import api as db_api
from accel_backend.discovery.drivers import fake as fake_driver
from accel_backend.objects import host_sync
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
    """An empty Cyborg 17 SQLite database (``cyborg-dbsync
    create_schema``); fails (never skips) without the Cyborg venv.

    :ivar url: its SQLAlchemy URL.
    """

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(tmp, 'cyborg.sqlite')
        conf = os.path.join(tmp, 'cyborg.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = sqlite:///%s\n' % self.path)
        try:
            launch.create_schema(conf, self.path)
        except ComponentMissing as e:
            raise AssertionError(str(e))
        except subprocess.CalledProcessError as e:
            raise AssertionError('cyborg-dbsync failed: %s %s' % (
                e.stdout, e.stderr))
        self.url = 'sqlite:///%s' % self.path
        self.now = datetime.datetime(2026, 1, 2, 3, 4, 5)

    def _insert(self, table, **values):
        values.setdefault('created_at', self.now)
        db = sqlite3.connect(self.path)
        try:
            cur = db.execute('INSERT INTO %s (%s) VALUES (%s)' % (
                table, ', '.join(values), ', '.join('?' * len(values))),
                [str(v) if isinstance(v, datetime.datetime) else v
                 for v in values.values()])
            db.commit()
            return cur.lastrowid
        finally:
            db.close()

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
            db = sqlite3.connect(self.path)
            db.execute('UPDATE attach_handles SET in_use = 1 WHERE id = ?',
                       (handle,))
            db.commit()
            db.close()
        return arq_uuid

    def handle_uuid(self, handle_id):
        db = sqlite3.connect(self.path)
        try:
            return db.execute('SELECT uuid FROM attach_handles WHERE id = ?',
                              (handle_id,)).fetchone()[0]
        finally:
            db.close()


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
