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

"""What the audit tests share (``test_audit``, ``test_audit_repairs``): a
Nova stub answering ``GET /v2.1/servers/<uuid>`` with a per-server status,
served with wsgi-intercept; a cleaner that records what it is handed; a
test base with an auditor over accel_backend's own SQLite database and the
two T4s of the recorded ``two-gpus`` tree; and a clock the test moves.
"""

import datetime

import fixtures
import sqlalchemy as sa
import webob
import webob.dec
from wsgi_intercept import interceptor

from accel_backend.agent.placement import client as pclient
from accel_backend.conductor import audit
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from tests import placement_fixture
from tests.unit.accel_backend import base
from tests.unit.accel_backend import binder_fixtures

HOST = binder_fixtures.HOST
NOVA_URL = 'http://nova-audit.test:8774'
GRACE = 60


class NovaServers:
    """Nova's compute API as the audit and the binder use it:
    ``GET /v2.1/servers/<uuid>`` answers ``codes[uuid]`` (default 200);
    ``GET /v2.1/servers?all_tenants=1`` answers ``scope_code``;
    ``POST /v2.1/os-server-external-events`` answers 503 to the first
    ``refuse`` posts, then accepts every event (recorded in ``events``).
    """

    def __init__(self):
        self.codes = {}
        self.asked = []
        self.refuse = 0
        self.events = []
        #: Answer to ``GET /v2.1/servers?all_tenants=1`` (403: Nova 34's
        #: answer to credentials without get_all_tenants).
        self.scope_code = 200
        self.scope_probes = 0

    @webob.dec.wsgify
    def __call__(self, req):
        if req.method == 'POST' and \
                req.path == '/v2.1/os-server-external-events':
            if self.refuse > 0:
                self.refuse -= 1
                return webob.Response(status=503)
            events = [dict(e, code=200) for e in req.json['events']]
            self.events.extend(events)
            return webob.Response(json_body={'events': events})
        if req.method == 'GET' and req.path == '/v2.1/servers' and \
                req.GET.get('all_tenants') == '1':
            self.scope_probes += 1
            return webob.Response(status=self.scope_code,
                                  json_body={'servers': []})
        prefix = '/v2.1/servers/'
        if req.method != 'GET' or not req.path.startswith(prefix):
            return webob.Response(status=404)
        server = req.path[len(prefix):]
        self.asked.append(server)
        code = self.codes.get(server, 200)
        body = ({'server': {'id': server, 'status': 'ACTIVE'}}
                if code == 200 else {'error': code})
        return webob.Response(status=code, json_body=body)


def intercept_nova(test, nova, url=NOVA_URL):
    """Serve ``nova`` (a ``NovaServers``) at ``url`` with wsgi-intercept
    until ``test`` ends; returns the ``[nova]`` options of a service
    talking to it."""
    icpt = interceptor.RequestsInterceptor(lambda: nova, url=url)
    icpt.install_intercept()
    test.addCleanup(icpt.uninstall_intercept)
    return {'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': url + '/v2.1', 'endpoint_override': url + '/v2.1'}


class FakeCleaner:
    """``submit_pending`` as a cleaner whose workers are all busy with
    ``busy`` (those are not queued again) and queue everything else."""

    def __init__(self, db, busy=()):
        self.db = db
        self.busy = set(busy)
        self.calls = 0

    def submit_pending(self):
        self.calls += 1
        with self.db.transaction() as session:
            todo = device_obj.handles_to_clean(session, HOST)
        return [u for u in todo if u not in self.busy]


class AuditTestBase(binder_fixtures.BinderTestBase):

    def setUp(self):
        super().setUp()
        self.nova = NovaServers()
        self.useFixture(fixtures.MockPatchObject(
            audit.LOG, 'warning'))
        intercept_nova(self, self.nova)
        self.cleaner = FakeCleaner(self.db)
        self.auditor = self.make_auditor()

    def use_placement(self):
        """A real Placement in this process (``self.placement``) and a
        client of it (``self.pclient``), for audits that ask it."""
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        conf = base.make_conf(
            self, placement={'auth_type': 'admin_token', 'token': 'admin',
                             'endpoint': self.placement.endpoint,
                             'endpoint_override': self.placement.endpoint})
        self.pclient = pclient.PlacementClient(pclient.adapter_from_conf(conf))

    def make_auditor(self, **kw):
        kw.setdefault('nova', binder_fixtures.nova_adapter(NOVA_URL + '/v2.1'))
        kw.setdefault('binder', self.binder)
        kw.setdefault('cleaner', self.cleaner)
        kw.setdefault('grace_period', GRACE)
        kw.setdefault('cleaning_timeout', 30)
        return audit.Auditor(self.db, HOST, **kw)

    def bound(self, rp=None, instance=None):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, rp or self.af, instance=instance)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        return arq, instance

    def age_arq(self, arq_uuid, seconds=GRACE * 2):
        old = audit._utcnow() - datetime.timedelta(seconds=seconds)
        with self.db.transaction() as session:
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.uuid == arq_uuid).values(updated_at=old))

    def handle_of(self, arq_uuid):
        with self.db.transaction() as session:
            arq = arq_obj.get(session, arq_uuid)
            return arq.attach_handle.uuid if arq.attach_handle else None

    def handle(self, handle_uuid):
        with self.db.transaction() as session:
            h = device_obj.get_handle(session, handle_uuid)
            return h.in_use, h.state, h.state_reason

    def set_handle(self, handle_uuid, age=None, **values):
        if age is not None:
            values['updated_at'] = audit._utcnow() - datetime.timedelta(
                seconds=age)
        with self.db.transaction() as session:
            session.execute(sa.update(models.AttachHandle).where(
                models.AttachHandle.uuid == handle_uuid).values(**values))

    def set_arq(self, arq_uuid, **values):
        with self.db.transaction() as session:
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.uuid == arq_uuid).values(**values))

    def arq_exists(self, arq_uuid):
        with self.db.transaction() as session:
            return session.scalar(sa.select(models.ARQ.id).where(
                models.ARQ.uuid == arq_uuid)) is not None

    def af_handle(self):
        with self.db.transaction() as session:
            return session.scalar(
                sa.select(models.AttachHandle.uuid)
                .join(models.Deployable)
                .where(models.Deployable.rp_uuid == self.af))


class Clock:
    """A monotonic clock the test moves (seconds)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now
