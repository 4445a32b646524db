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

"""ARQ binding: releasing devices (unbind, delete, removal) and the
binder's queue (``submit``, ``resume`` after a restart), over the shared
binder fixtures (``binder_fixtures``).
"""

import threading

from oslo_utils import uuidutils

from accel_backend.conductor import binder as binder_mod
from accel_backend.conductor import host_sync
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from tests.unit.accel_backend import binder_fixtures as fx


class TestRelease(fx.BinderTestBase):

    def _bound(self, rp=None):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, rp or self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        return arq, instance

    def test_unbind_releases_handle(self):
        arq, _ = self._bound()
        (other,) = self.new_arqs()
        self.start(other, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(other))
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        view, pending = self.arq(arq)
        self.assertEqual('Unbound', view['state'])
        self.assertIsNone(view['attach_handle_uuid'])
        self.assertIsNone(view['device_rp_uuid'])
        self.assertIsNone(view['instance_uuid'])
        self.assertIsNone(pending)
        self.assertEqual(0, self.handles_in_use())
        (new,) = self.new_arqs()
        self.start(new, self.af)
        self.assertEqual('Bound', self.binder.bind_one(new))
        # The unbound ARQ can be bound again (to the other device).
        self.start(arq, self.d8)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        self.assertEqual(2, self.handles_in_use())

    def test_unbind_idempotent(self):
        arq, _ = self._bound()
        for _ in range(2):
            with self.db.transaction() as session:
                arq_obj.unbind(arq_obj.get(session, arq))
        self.assertEqual('Unbound', self.state(arq))

    def test_delete_releases_handle(self):
        arq, _ = self._bound()
        with self.db.transaction() as session:
            arq_obj.delete(session, arq_obj.get(session, arq))
        self.assertEqual(0, self.handles_in_use())
        with self.db.transaction() as session:
            self.assertRaises(exception.ARQNotFound, arq_obj.get, session,
                              arq)
        self._bound()

    def test_delete_of_arq_bound_since_it_was_loaded(self):
        # DELETE ?instance= loads the ARQs, the binder finishes meanwhile:
        # the handle the binder took must be released too.
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        with self.db.transaction() as session:
            (loaded,) = arq_obj.list_(session, instance_uuid=instance)
            self.assertIsNone(loaded.attach_handle)
            self.assertEqual('Bound', self.binder.bind_one(arq))
            arq_obj.delete(session, loaded)
        self.assertEqual(0, self.handles_in_use())
        self._bound()

    def test_delete_of_arq_deleted_since_it_was_loaded(self):
        # Two DELETE ?instance= at once (Nova retries): not an error.
        arq, instance = self._bound()
        with self.db.transaction() as session:
            (loaded,) = arq_obj.list_(session, instance_uuid=instance)
            with self.db.transaction() as other:
                arq_obj.delete(other, arq_obj.get(other, arq))
            arq_obj.delete(session, loaded)
        self.assertEqual(0, self.handles_in_use())
        with self.db.transaction() as session:
            self.assertEqual([], arq_obj.list_(session))

    def test_delete_racing_bind_leaks_nothing(self):
        for _ in range(5):
            (arq,) = self.new_arqs()
            instance, _ = self.start(arq, self.af)
            barrier = threading.Barrier(2)

            def delete():
                barrier.wait()
                with self.db.transaction() as session:
                    for a in arq_obj.list_(session, instance_uuid=instance):
                        arq_obj.delete(session, a)

            def bind():
                barrier.wait()
                self.binder.bind_one(arq)

            threads = [threading.Thread(target=f) for f in (delete, bind)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            self.assertEqual(0, self.handles_in_use())

    def test_unbind_while_bind_started_then_bind_one(self):
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.assertIsNone(self.binder.bind_one(arq))
        self.assertEqual('Unbound', self.state(arq))
        self.assertEqual(0, self.handles_in_use())

    def test_device_vanishing_while_in_use_kept(self):
        arq, _ = self._bound()
        with self.db.transaction() as session:
            deps = host_sync.sync(session, fx.HOST, [])
            self.assertEqual([self.af], [d.rp_uuid for d in deps])
            self.assertEqual('missing', deps[0].device.status)
        self.assertEqual('Bound', self.state(arq))
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        # Released under the NoExecute taint of its absence: quarantined,
        # and kept missing so that it is cleaned if it comes back.
        with self.db.transaction() as session:
            deps = host_sync.sync(session, fx.HOST, [])
            self.assertEqual([self.af], [d.rp_uuid for d in deps])
            self.assertEqual('missing', deps[0].device.status)
            self.assertEqual(['quarantined'], [
                h.state for h in deps[0].attach_handles])


class TestSubmitAndResume(fx.BinderTestBase):

    def test_submit_binds_and_notifies(self):
        arqs = self.new_arqs('two-t4')
        instance, _ = self.start(arqs[0], self.af)
        self.start(arqs[1], self.d8, instance=instance)
        self.binder.submit(arqs)
        self.assertTrue(self.binder.wait_idle(5))
        self.assertEqual(['Bound', 'Bound'], [self.state(u) for u in arqs])
        self.assertEqual({(instance, arqs[0], 'completed'),
                          (instance, arqs[1], 'completed')},
                         set(self.notifier.sent))
        self.assertEqual([None, None], [self.arq(u)[1] for u in arqs])

    def test_resume_after_crash(self):
        # A previous process committed BindStarted (and one outcome whose
        # event it never delivered), then died.
        started = self.new_arqs(n=2)
        done = self.new_arqs()[0]
        inst = {}
        inst[started[0]], _ = self.start(started[0], self.af)
        inst[started[1]], _ = self.start(started[1], self.d8)
        inst[done], _ = self.start(done, uuidutils.generate_uuid())
        crashed = binder_mod.Binder(self.db, fx.FakeNotifier())
        crashed.stop()  # nothing was submitted: its work is lost
        self.assertEqual('BindFailed',
                         binder_mod.Binder.bind_one(crashed, done))
        self.assertEqual('failed', self.arq(done)[1])

        self.binder.resume()
        self.assertTrue(self.binder.wait_idle(5))
        self.assertEqual(['Bound', 'Bound'],
                         [self.state(u) for u in started])
        self.assertEqual(
            {(inst[started[0]], started[0], 'completed'),
             (inst[started[1]], started[1], 'completed'),
             (inst[done], done, 'failed')}, set(self.notifier.sent))
        self.assertEqual(3, len(self.notifier.sent))
        for u in started + [done]:
            self.assertIsNone(self.arq(u)[1])
        # Nothing left for the next restart.
        again = fx.FakeNotifier()
        self.make_binder(again).resume()
        self.assertEqual([], again.sent)

    def test_resume_with_nothing_to_do(self):
        self.new_arqs()
        self.binder.resume()
        self.assertTrue(self.binder.wait_idle(5))
        self.assertEqual([], self.notifier.sent)
