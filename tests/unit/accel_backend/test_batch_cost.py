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

"""What a PATCH and a DELETE of many ARQs cost in SQL statements: the
number of round trips, not the number of ARQs; and the PATCH
that binds in its own transaction (embedded, ``[binding] mode = inline``).

A ``Service`` over the recorded four-GPU server, its real WSGI app and
SQLite database; statements counted on its engine.
"""

import json
import threading

import fixtures
from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa
import webob

from accel_backend.conductor import claim
from accel_backend.conductor import dispatcher as dispatcher_mod
from accel_backend.db import models
from accel_backend.objects import device_profile as dp_obj
from tests.unit.accel_backend import test_lifecycle as lifecycle

NOVA = dict(lifecycle.V23, **{'X-Service-Token': 'nova',
                              'Content-Type': 'application/json'})


class _Held:
    """A binder that only keeps what it is given (``submit``)."""

    def __init__(self, into):
        self.into = into

    def submit(self, arq_uuids):
        self.into.extend(arq_uuids)


class PatchTestBase(lifecycle.ServiceTestBase):

    def setUp(self):
        super().setUp()
        self.svc = self.make_service()
        self.svc.discover_and_report()
        with self.svc.db.transaction() as session:
            dp_obj.create(session, 'one', [{'resources:PGPU': '1'}])
            dp_obj.create(session, 'three', [{'resources:PGPU': '1'}] * 3)

    def request(self, method, path, body=None, status=200):
        req = webob.Request.blank(path, method=method, headers=NOVA)
        if body is not None:
            req.body = json.dumps(body).encode()
        resp = req.get_response(self.svc.app)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp

    def counted(self, fn):
        """How many statements ``fn`` runs in this thread (the events'
        delivery threads are not counted)."""
        return len(self.recorded(fn))

    def recorded(self, fn):
        """The statements ``fn`` runs in this thread, in order."""
        statements = []
        me = threading.get_ident()

        def listener(conn, cursor, statement, *args):
            if threading.get_ident() == me:
                statements.append(statement)  # an executemany counts once
        sa.event.listen(self.svc.db.engine, 'before_cursor_execute',
                        listener)
        try:
            fn()
        finally:
            sa.event.remove(self.svc.db.engine, 'before_cursor_execute',
                            listener)
        return statements

    def boot(self, profile, gpus, in_transaction=True):
        """Create the profile's ARQs and PATCH-bind them to distinct GPUs;
        bound in the PATCH's transaction (embedded, ``mode = inline``), or
        after it by ``Binder.bind_many`` (what an agent runs).

        :returns: (instance, statements of the PATCH request, of the
            binder after it: 0 when bound in the PATCH's transaction).
        """
        arqs = self.request('POST', '/v2/accelerator_requests',
                            {'device_profile_name': profile},
                            status=201).json['arqs']
        instance = uuidutils.generate_uuid()
        patch = self.bind_patch([a['uuid'] for a in arqs], gpus, instance)
        queued = []
        if not in_transaction:
            # As accel-backend-api: BindStarted committed, then handed to
            # a binder; this one (given to the dispatcher's constructor)
            # holds them until the PATCH request has been counted.
            self.svc.dispatcher = dispatcher_mod.LocalDispatcher(
                _Held(queued), in_transaction=False)
        request = self.counted(lambda: self.request(
            'PATCH', '/v2/accelerator_requests', patch, status=202))
        uuids = list(queued)
        self.assertEqual(sorted(patch) if queued else [], sorted(uuids))
        bind = self.counted(
            lambda: self.svc.binder.bind_many(uuids)) if uuids else 0
        states = {self.request('GET', '/v2/accelerator_requests/%s' % u
                               ).json['state'] for u in patch}
        self.assertEqual({'Bound'}, states)
        return instance, request, bind

    def bind_patch(self, arqs, gpus, instance):
        return {a: [
            {'path': '/hostname', 'op': 'add', 'value': lifecycle.COMPUTE},
            {'path': '/device_rp_uuid', 'op': 'add',
             'value': lifecycle.rp_uuid(gpu)},
            {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
            for a, gpu in zip(arqs, gpus)}


class BatchCostTest(PatchTestBase):

    def check_same_cost(self, in_transaction):
        # Released devices go to cleaning: each boot has its own GPUs.
        one, patch_one, bind_one = self.boot('one', ['0000:e3:00.0'],
                                             in_transaction)
        delete_one = self.counted(lambda: self.request(
            'DELETE', '/v2/accelerator_requests?instance=%s' % one,
            status=204))
        three, patch_three, bind_three = self.boot(
            'three', ['0000:17:00.0', '0000:65:00.0', '0000:ca:00.0'],
            in_transaction)
        delete_three = self.counted(lambda: self.request(
            'DELETE', '/v2/accelerator_requests?instance=%s' % three,
            status=204))
        # One provider claims in one statement (``claim._FIRST_FREE``),
        # several in two, whatever their number.
        self.assertEqual(delete_one, delete_three)
        return (patch_one, bind_one), (patch_three, bind_three)

    def test_patch_binding_in_its_transaction_costs_the_same_for_three(self):
        (patch, bind), (patch_three, bind_three) = self.check_same_cost(
            in_transaction=True)
        self.assertEqual((0, 0), (bind, bind_three))
        # The whole bind in the PATCH: lock (BEGIN IMMEDIATE on SQLite),
        # read, claim (UPDATE ... RETURNING of the first free handle of
        # the one provider; for three, a SELECT of the free handles and
        # an UPDATE ... RETURNING), one UPDATE of the ARQs; COMMIT is not
        # a cursor statement.
        self.assertEqual((4, 5), (patch, patch_three))

    def test_patch_takes_the_sqlite_write_lock_with_begin_immediate(self):
        # The lock is the transaction's first statement, not a write that
        # changes nothing (one ORM statement less on the bind path).
        arqs = [a['uuid'] for a in self.request(
            'POST', '/v2/accelerator_requests',
            {'device_profile_name': 'one'}, status=201).json['arqs']]
        statements = self.recorded(lambda: self.request(
            'PATCH', '/v2/accelerator_requests', self.bind_patch(
                arqs, ['0000:e3:00.0'], uuidutils.generate_uuid()),
            status=202))
        self.assertEqual('BEGIN IMMEDIATE', statements[0])
        self.assertEqual(1, sum(s.startswith('UPDATE attach_handles')
                                for s in statements), statements)
        self.assertFalse([s for s in statements
                          if 'state=accelerator_requests.state' in s])

    def test_patch_then_binder_cost_the_same_for_three_arqs(self):
        (patch, bind), (patch_three, bind_three) = self.check_same_cost(
            in_transaction=False)
        self.assertEqual(patch, patch_three)
        self.assertGreater(bind, 0)
        self.assertEqual(bind + 1, bind_three)


class PatchTransactionTest(PatchTestBase):
    """The embedded service binds in the PATCH's own transaction."""

    def create(self, profile='three'):
        return [a['uuid'] for a in self.request(
            'POST', '/v2/accelerator_requests',
            {'device_profile_name': profile}, status=201).json['arqs']]

    def handles_in_use(self):
        with self.svc.db.transaction() as session:
            return session.scalar(sa.select(sa.func.count()).where(
                models.AttachHandle.in_use.is_(True)))

    def test_bound_and_committed_when_the_patch_answers(self):
        arqs = self.create()
        submitted = self.useFixture(fixtures.MockPatchObject(
            self.svc.binder, 'submit')).mock
        instance = uuidutils.generate_uuid()
        self.request('PATCH', '/v2/accelerator_requests', self.bind_patch(
            arqs, ['0000:17:00.0', '0000:65:00.0', '0000:ca:00.0'],
            instance), status=202)
        # Read at once, without waiting for any binder thread.
        views = [self.request('GET', '/v2/accelerator_requests/%s' % u).json
                 for u in arqs]
        self.assertEqual({'Bound'}, {v['state'] for v in views})
        self.assertEqual(3, len({v['attach_handle_uuid'] for v in views}))
        self.assertEqual(3, self.handles_in_use())
        submitted.assert_not_called()
        with self.svc.db.transaction() as session:
            pending = set(session.scalars(sa.select(
                models.ARQ.pending_event).where(
                models.ARQ.uuid.in_(arqs))))
        # No Nova here: the events stay pending, to be sent again.
        self.assertEqual({'completed'}, pending)

    def test_events_start_once_the_answer_is_sent(self):
        # The server calls the body's close() after its last byte; only
        # then do the events start, so the 202 does not wait for them.
        arqs = self.create('one')
        finish = self.useFixture(fixtures.MockPatchObject(
            self.svc.binder, 'finish')).mock
        req = webob.Request.blank('/v2/accelerator_requests',
                                  method='PATCH', headers=NOVA)
        req.body = json.dumps(self.bind_patch(
            arqs, ['0000:17:00.0'], uuidutils.generate_uuid())).encode()
        started = []
        body = self.svc.app(req.environ,
                            lambda status, headers: started.append(status))
        self.assertEqual(['202 Accepted'], started)
        b''.join(body)
        finish.assert_not_called()
        # Committed before the answer, events or not.
        self.assertEqual('Bound', self.request(
            'GET', '/v2/accelerator_requests/%s' % arqs[0]).json['state'])
        body.close()
        finish.assert_called_once()
        (outcomes,), _ = finish.call_args
        self.assertEqual([arqs[0]], [o[1]['uuid'] for o in outcomes])

    def test_deadlock_runs_the_whole_patch_again(self):
        # PostgreSQL may pick the PATCH's claim as a deadlock victim: the
        # transaction is rolled back and runs again from the lock of the
        # ARQs, so nothing is claimed twice.
        arqs = self.create('one')
        real = claim.claim
        calls = []

        def deadlock_once(session, wanted, **kw):
            calls.append(dict(wanted))
            got = real(session, wanted, **kw)
            if len(calls) == 1:
                raise db_exc.DBDeadlock()
            return got
        self.useFixture(fixtures.MockPatchObject(
            claim, 'claim', side_effect=deadlock_once))
        self.request('PATCH', '/v2/accelerator_requests', self.bind_patch(
            arqs, ['0000:17:00.0'], uuidutils.generate_uuid()), status=202)
        self.assertEqual(2, len(calls))
        self.assertEqual('Bound', self.request(
            'GET', '/v2/accelerator_requests/%s' % arqs[0]).json['state'])
        self.assertEqual(1, self.handles_in_use())

    def test_refused_patch_binds_nothing(self):
        # One ARQ that cannot be bound (already bound elsewhere) refuses
        # the whole PATCH: no other ARQ of it is bound, no handle taken.
        first = self.create('one')
        self.request('PATCH', '/v2/accelerator_requests', self.bind_patch(
            first, ['0000:17:00.0'], uuidutils.generate_uuid()), status=202)
        arqs = self.create('one') + first
        self.request('PATCH', '/v2/accelerator_requests', self.bind_patch(
            arqs, ['0000:65:00.0', '0000:ca:00.0'],
            uuidutils.generate_uuid()), status=409)
        self.assertEqual('Initial', self.request(
            'GET', '/v2/accelerator_requests/%s' % arqs[0]).json['state'])
        self.assertEqual(1, self.handles_in_use())
