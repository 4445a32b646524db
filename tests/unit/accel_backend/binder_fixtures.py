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

"""What the binder tests share: an accel_backend database (SQLite file,
alembic sync) with the devices GenericPCIDriver finds in the recorded
``two-gpus`` tree and two device profiles, a recording notifier, and the
Nova stub of ``tools.fixtures.nova_stub`` behind wsgi-intercept (events
go over HTTP through keystoneauth).

Used by ``test_binder*``, ``test_audit`` and ``test_dispatch``.
"""

import os
import threading

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools
from wsgi_intercept import interceptor

from accel_backend.agent.discovery.drivers import generic_pci
from accel_backend.conductor import binder as binder_mod
from accel_backend.conductor import host_sync
from accel_backend.conductor import nova_notifier as notifier_mod
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from tests.unit.accel_backend import base
from tools.fixtures import nova_stub

HOST = 'compute1'
NOVA_URL = 'http://nova.test:8774'


def nova_adapter(url=NOVA_URL + '/v2.1'):
    auth = token_endpoint.Token(url, 'admin')
    sess = ks_session.Session(auth=auth)
    return ks_adapter.Adapter(sess, service_type='compute',
                              endpoint_override=url)


class FakeNotifier:
    """Accepts every event; records them."""

    def __init__(self):
        self.sent = []
        self.lock = threading.Lock()

    def send(self, events):
        with self.lock:
            self.sent.extend(events)
        return {arq for _, arq, _ in events}, set()


class BinderTestBase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Keep expected warnings out of the test output (root logger).
        self.useFixture(fixtures.FakeLogger())
        tmp = self.useFixture(fixtures.TempDir()).path
        self.db = db_api.Database('sqlite:///%s' % os.path.join(
            tmp, 'accel.sqlite'))
        self.addCleanup(self.db.dispose)
        self.db.sync()
        found = generic_pci.GenericPCIDriver(base.make_conf(self)).discover()
        with self.db.transaction() as session:
            deps = host_sync.sync(session, HOST, found)
            self.rps = {d.device.address: d.rp_uuid for d in deps}
            dp_obj.create(session, 'one-t4', [
                {'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'}])
            dp_obj.create(session, 'two-t4', [
                {'resources:PGPU': '1'}, {'resources:PGPU': '1'}])
        self.af = self.rps['0000:af:00.0']
        self.d8 = self.rps['0000:d8:00.0']
        self.notifier = FakeNotifier()
        self.binder = self.make_binder(self.notifier)

    def make_binder(self, notifier, **kw):
        kw.setdefault('retry_interval', 0.01)
        kw.setdefault('retry_timeout', 5)
        kw.setdefault('workers', 2)
        b = binder_mod.Binder(self.db, notifier, **kw)
        self.addCleanup(b.stop)
        return b

    def new_arqs(self, profile='one-t4', n=1):
        with self.db.transaction() as session:
            uuids = []
            for _ in range(n):
                uuids += [a.uuid for a in arq_obj.create(session, profile,
                                                         project_id='p1')]
        return uuids

    def start(self, arq_uuid, rp_uuid, instance=None, host=HOST):
        instance = instance or uuidutils.generate_uuid()
        with self.db.transaction() as session:
            arq = arq_obj.get(session, arq_uuid, for_update=True)
            started = arq_obj.start_binding(session, arq, host, rp_uuid,
                                            instance)
        return instance, started

    def arq(self, arq_uuid):
        with self.db.transaction() as session:
            arq = arq_obj.get(session, arq_uuid)
            return arq_obj.to_dict(arq, 'http://x/v2'), arq.pending_event

    def state(self, arq_uuid):
        return self.arq(arq_uuid)[0]['state']

    def handles_in_use(self):
        with self.db.transaction() as session:
            return session.scalar(sa.select(sa.func.count()).where(
                models.AttachHandle.in_use.is_(True)))


class NovaTestBase(BinderTestBase):

    def setUp(self):
        super().setUp()
        self.notifier_log = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.conductor.nova_notifier'))
        self.nova = nova_stub.NovaStub(serve=False)
        icpt = interceptor.RequestsInterceptor(lambda: self.nova,
                                               url=NOVA_URL)
        icpt.install_intercept()
        self.addCleanup(icpt.uninstall_intercept)
        self.real_notifier = notifier_mod.NovaNotifier(nova_adapter())
