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

"""ARQ binding: the state machine as the objects apply it, and
``Binder.bind_one`` (claims, handles, races), over the shared binder
fixtures (``binder_fixtures``).
"""

import functools
import threading

from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.conductor import bind_row
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from tests.unit.accel_backend import binder_fixtures as fx


class TestStateMachine(fx.BinderTestBase):

    def test_create_one_arq_per_unit(self):
        self.assertEqual(1, len(self.new_arqs('one-t4')))
        uuids = self.new_arqs('two-t4')
        self.assertEqual(2, len(uuids))
        views = [self.arq(u)[0] for u in uuids]
        self.assertEqual([0, 1], [v['device_profile_group_id']
                                  for v in views])
        for v in views:
            self.assertEqual('Initial', v['state'])
            # Cyborg 17's view of an ARQ without a handle.
            self.assertEqual('', v['attach_handle_type'])
            self.assertEqual({}, v['attach_handle_info'])
            self.assertEqual('p1', v['project_id'])

    def test_unknown_profile(self):
        with self.db.transaction() as session:
            self.assertRaises(exception.DeviceProfileNotFound,
                              arq_obj.create, session, 'nope')

    def test_start_binding_idempotent(self):
        (arq,) = self.new_arqs()
        instance, started = self.start(arq, self.af)
        self.assertTrue(started)
        self.assertEqual('BindStarted', self.state(arq))
        self.assertEqual((instance, False),
                         self.start(arq, self.af, instance=instance))
        self.assertEqual('Bound', self.binder.bind_one(arq))
        # Same binding again once Bound: still nothing to do.
        self.assertEqual((instance, False),
                         self.start(arq, self.af, instance=instance))
        self.assertEqual('Bound', self.state(arq))

    def test_start_binding_elsewhere_refused(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        for kw in ({'rp_uuid': self.d8, 'instance': instance},
                   {'rp_uuid': self.af},
                   {'rp_uuid': self.af, 'instance': instance,
                    'host': 'compute2'}):
            e = self.assertRaises(exception.ARQInvalidState, self.start,
                                  arq, **kw)
            self.assertEqual(409, e.status)
        self.binder.bind_one(arq)
        self.assertRaises(exception.ARQInvalidState, self.start, arq,
                          self.d8, instance)
        view = self.arq(arq)[0]
        self.assertEqual((self.af, instance, fx.HOST),
                         (view['device_rp_uuid'], view['instance_uuid'],
                          view['hostname']))

    def test_bind_failed_cannot_be_rebound_directly(self):
        (arq,) = self.new_arqs()
        self.start(arq, uuidutils.generate_uuid())
        self.assertEqual('BindFailed', self.binder.bind_one(arq))
        self.assertRaises(exception.ARQInvalidState, self.start, arq,
                          self.af)
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.start(arq, self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))

    def test_unbind_initial_is_noop(self):
        (arq,) = self.new_arqs()
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.assertEqual('Initial', self.state(arq))


class TestBindOne(fx.BinderTestBase):

    def test_bound_with_pci_handle(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        view, pending = self.arq(arq)
        self.assertEqual('Bound', view['state'])
        self.assertEqual('PCI', view['attach_handle_type'])
        self.assertEqual({'domain': '0000', 'bus': 'af', 'device': '00',
                          'function': '0'}, view['attach_handle_info'])
        self.assertTrue(uuidutils.is_uuid_like(view['attach_handle_uuid']))
        self.assertEqual(instance, view['instance_uuid'])
        self.assertEqual('completed', pending)
        self.assertEqual(1, self.handles_in_use())

    def test_bind_one_ignores_other_states(self):
        (arq,) = self.new_arqs()
        self.assertIsNone(self.binder.bind_one(arq))
        self.assertEqual('Initial', self.state(arq))
        self.assertIsNone(self.binder.bind_one(uuidutils.generate_uuid()))

    def test_unknown_rp_or_host_fails(self):
        a, b = self.new_arqs(n=2)
        self.start(a, uuidutils.generate_uuid())
        self.start(b, self.af, host='compute2')
        self.assertEqual('BindFailed', self.binder.bind_one(a))
        self.assertEqual('BindFailed', self.binder.bind_one(b))
        view, pending = self.arq(a)
        self.assertEqual('', view['attach_handle_type'])
        self.assertEqual('failed', pending)
        self.assertEqual(0, self.handles_in_use())

    def test_one_device_two_arqs(self):
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.af)
        results = sorted([self.binder.bind_one(a), self.binder.bind_one(b)])
        self.assertEqual(['BindFailed', 'Bound'], results)
        self.assertEqual(1, self.handles_in_use())

    def test_batch_of_two_arqs_for_one_device(self):
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.af)
        results = self.binder.bind_many([a, b])
        self.assertEqual(['BindFailed', 'Bound'],
                         sorted(o.state for o in results.values()))
        self.assertEqual(1, self.handles_in_use())
        # The lower ARQ id gets the device: the batch goes in lock order.
        self.assertEqual(('Bound', 'completed'),
                         (results[a].state, results[a].event))
        self.assertEqual(('BindFailed', 'failed'),
                         (results[b].state, results[b].event))

    def _statements(self, fn):
        count = []
        listener = (lambda *args: count.append(1))
        sa.event.listen(self.db.engine, 'before_cursor_execute', listener)
        try:
            fn()
        finally:
            sa.event.remove(self.db.engine, 'before_cursor_execute',
                            listener)
        return len(count)

    def test_batch_costs_a_fixed_number_of_statements(self):
        # The cost of binding the ARQs of a PATCH is set by round trips,
        # not by the number of ARQs.
        (one,) = self.new_arqs()
        self.start(one, self.af)
        single = self._statements(lambda: self.binder.bind_many([one]))
        self.assertEqual('Bound', self.state(one))
        # SQLite: the write lock, the ARQs, the claim of the provider's
        # first free handle (UPDATE ... RETURNING it, not read again) and
        # the ARQ rows.
        self.assertEqual(4, single)
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, one, for_update=True))
        with self.db.transaction() as session:
            session.execute(sa.update(models.AttachHandle).values(
                in_use=False, state='available'))
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.d8)
        pair = self._statements(lambda: self.binder.bind_many([a, b]))
        self.assertEqual(['Bound', 'Bound'], [self.state(a), self.state(b)])
        # Two providers: their free handles read in one SELECT, claimed in
        # one UPDATE ... RETURNING; the same for any number of them.
        self.assertEqual(single + 1, pair)

    def test_bound_arqs_read_and_written_as_rows(self):
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        started_at = self.arq(arq)[0]['updated_at']
        with self.db.transaction() as session:
            locked = bind_row.lock(session, [arq])
            self.binder.bind_locked(session, locked)
            # Read, claimed and written in Core (objects.bind_row.BindRow,
            # binding.claim): no ORM object of an ARQ or a handle.
            self.assertEqual([], [o for o in session if isinstance(
                o, (models.ARQ, models.AttachHandle))])
            state, handle_id = session.execute(
                sa.select(models.ARQ.state, models.ARQ.attach_handle_id)
                .where(models.ARQ.uuid == arq)).one()
            self.assertEqual('Bound', state)
            self.assertEqual(locked[0].attach_handle.id, handle_id)
        view, pending = self.arq(arq)
        self.assertEqual(('Bound', fx.HOST, self.af, 'completed'), (
            view['state'], view['hostname'], view['device_rp_uuid'],
            pending))
        self.assertEqual('PCI', view['attach_handle_type'])
        self.assertGreaterEqual(view['updated_at'], started_at)

    def test_write_writes_the_binding_columns_only(self):
        (arq,) = self.new_arqs()
        with self.db.transaction() as session:
            (locked,) = bind_row.lock(session, [arq])
            group_id = locked.device_profile_group_id
            arq_obj.start_binding(session, locked, fx.HOST, self.af, 'i-1')
            locked.device_profile_group_id = group_id + 7
            bind_row.write(session, [locked])
        with self.db.transaction() as session:
            stored = arq_obj.get(session, arq)
            self.assertEqual(('BindStarted', 'i-1', group_id), (
                stored.state, stored.instance_uuid,
                stored.device_profile_group_id))
            self.assertIsNotNone(stored.updated_at)

    def test_rows_of_another_host_written_bind_started(self):
        # An agent's binder binds its own host's ARQs; handed others in
        # a transaction, it writes them BindStarted for their agent.
        binder = self.make_binder(fx.FakeNotifier(), host='other-host')
        (arq,) = self.new_arqs()
        with self.db.transaction() as session:
            locked = bind_row.lock(session, [arq])
            arq_obj.start_binding(session, locked[0], fx.HOST, self.af, 'i')
            self.assertEqual([], binder.bind_locked(session, locked))
        view, pending = self.arq(arq)
        self.assertEqual(('BindStarted', fx.HOST, None), (
            view['state'], view['hostname'], pending))

    def test_database_without_update_returning_claims_row_by_row(self):
        # MySQL has no UPDATE ... RETURNING: each chosen handle is claimed
        # by its own conditional UPDATE, checked by row count, then read.
        dialect = self.db.engine.dialect
        dialect.update_returning = False
        self.addCleanup(delattr, dialect, 'update_returning')
        a, b, c = self.new_arqs(n=3)
        self.start(a, self.af)
        self.start(b, self.d8)
        self.start(c, self.af)
        results = self.binder.bind_many([a, b, c])
        self.assertEqual({a: 'Bound', b: 'Bound', c: 'BindFailed'},
                         {u: r.state for u, r in results.items()})
        handles = [self.arq(u)[0]['attach_handle_info'] for u in (a, b)]
        self.assertNotEqual(handles[0], handles[1])
        self.assertEqual(2, self.handles_in_use())

    def test_disabled_or_missing_device_not_bound(self):
        with self.db.transaction() as session:
            dev = session.scalar(sa.select(models.Device).where(
                models.Device.address == '0000:af:00.0'))
            dev.status = 'disabled'
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(arq))

    def test_concurrent_binds_never_share_a_device(self):
        uuids = self.new_arqs(n=20)
        for i, u in enumerate(uuids):
            self.start(u, self.af if i % 2 else self.d8)
        results = {}
        queue = list(uuids)
        qlock = threading.Lock()

        def worker():
            while True:
                with qlock:
                    if not queue:
                        return
                    u = queue.pop()
                results[u] = self.binder.bind_one(u)

        self._race([worker])
        states = [self.state(u) for u in uuids]
        self.assertEqual(2, states.count('Bound'), states)
        self.assertEqual(18, states.count('BindFailed'), states)
        self.assertEqual(sorted(results.values()), sorted(states))
        handles = {self.arq(u)[0]['attach_handle_uuid'] for u in uuids
                   if self.state(u) == 'Bound'}
        self.assertEqual(2, len(handles))
        rps = {self.arq(u)[0]['device_rp_uuid'] for u in uuids
               if self.state(u) == 'Bound'}
        self.assertEqual({self.af, self.d8}, rps)
        self.assertEqual(2, self.handles_in_use())

    def _race(self, fns, n=8):
        """Run ``n`` threads released together by a barrier, thread ``i``
        calling ``fns[i % len(fns)]()``; joins each for up to 30 s, fails
        the test if any raised, and returns what they returned."""
        errors, results, barrier = [], [], threading.Barrier(n)

        def go(i):
            barrier.wait()
            try:
                results.append(fns[i % len(fns)]())
            except Exception as e:  # noqa
                errors.append(e)

        threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual([], errors)
        return results

    def test_same_arq_bound_concurrently(self):
        # The same BindStarted ARQ handed to several workers (e.g. a
        # restarted worker's resume() while another still binds it): one
        # binding, one handle, and no worker turns it into BindFailed.
        for attempt in range(3):
            (arq,) = self.new_arqs()
            self.start(arq, self.af if attempt % 2 else self.d8)
            results = self._race([lambda: self.binder.bind_one(arq)])
            self.assertEqual('Bound', self.state(arq), results)
            self.assertEqual(1, results.count('Bound'), results)
            self.assertEqual(7, results.count(None), results)
            self.assertEqual(1, self.handles_in_use())
            with self.db.transaction() as session:
                arq_obj.unbind(arq_obj.get(session, arq))
            self.assertEqual(0, self.handles_in_use())

    def test_unbind_racing_bind_leaks_nothing(self):
        for _ in range(5):
            (arq,) = self.new_arqs()
            self.start(arq, self.af)

            def unbind():
                with self.db.transaction() as session:
                    arq_obj.unbind(arq_obj.get(session, arq,
                                               for_update=True))
            self._race([lambda: self.binder.bind_one(arq), unbind], n=2)
            self.assertEqual('Unbound', self.state(arq))
            self.assertEqual(0, self.handles_in_use())

    def test_concurrent_binds_two_database_objects(self):
        # Two Database objects on the same file stand for two API
        # workers (processes) sharing the embedded store.
        other = db_api.Database(str(self.db.engine.url))
        self.addCleanup(other.dispose)
        binders = [self.binder, self.make_binder(fx.FakeNotifier())]
        binders[1].db = other
        uuids = self.new_arqs(n=8)
        for u in uuids:
            self.start(u, self.af)
        self._race([functools.partial(binders[i % 2].bind_one, u)
                    for i, u in enumerate(uuids)])
        states = [self.state(u) for u in uuids]
        self.assertEqual(1, states.count('Bound'), states)
        self.assertEqual(7, states.count('BindFailed'), states)
