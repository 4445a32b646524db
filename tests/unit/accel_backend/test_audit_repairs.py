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

"""The periodic audit (``accel_backend.conductor.audit``), the repairs other
than
of deleted instances (``test_audit``): attach handles, ARQs bound without
a handle, stuck bindings, cleanings, and one run of them all.

The fixtures are ``audit_fixtures``'; drift is made by writing rows
directly, as a crash, an older release or an operator would leave them.
"""

import datetime
import os
import sys

import fixtures
import sqlalchemy as sa

from accel_backend.conductor import audit
from accel_backend.db import models
from accel_backend.objects import device as device_obj
from accel_backend import periodic
from accel_backend import service as service_mod
from tests.unit.accel_backend.audit_fixtures import AuditTestBase
from tests.unit.accel_backend.audit_fixtures import GRACE
from tests.unit.accel_backend.audit_fixtures import HOST
from tests.unit.accel_backend import base


class TestHandles(AuditTestBase):

    def test_handle_in_use_without_arq_released(self):
        handle = self.af_handle()
        self.set_handle(handle, in_use=True, state='bound')
        report = self.auditor.run()
        self.assertEqual([handle], report.released_handles)
        self.assertEqual((False, 'available', None), self.handle(handle))
        # Bindable again.
        self.bound(rp=self.af)

    def test_released_handle_that_needs_cleaning_goes_dirty(self):
        handle = self.af_handle()
        with self.db.transaction() as session:
            session.execute(sa.update(models.Deployable).where(
                models.Deployable.rp_uuid == self.af).values(cleaning='flr'))
        self.set_handle(handle, in_use=True, state='bound')
        self.assertEqual([handle], self.auditor.run().released_handles)
        self.assertEqual((False, 'dirty', None), self.handle(handle))

    def test_handle_of_bound_arq_kept(self):
        arq, _ = self.bound()
        report = self.auditor.run()
        self.assertEqual(0, report.repairs())
        self.assertEqual((True, 'bound', None),
                         self.handle(self.handle_of(arq)))

    def test_handle_held_by_failed_arq_released(self):
        arq, _ = self.bound()
        handle = self.handle_of(arq)
        self.set_arq(arq, state='BindFailed')
        report = self.auditor.run()
        self.assertEqual([handle], report.unheld_handles)
        self.assertIsNone(self.handle_of(arq))
        self.assertEqual('BindFailed', self.state(arq))
        self.assertEqual((False, 'available', None), self.handle(handle))

    def test_bound_arq_handle_not_in_use_reclaimed(self):
        arq, _ = self.bound()
        handle = self.handle_of(arq)
        self.set_handle(handle, in_use=False, state='available')
        report = self.auditor.run()
        self.assertEqual([handle], report.reclaimed_handles)
        self.assertEqual((True, 'bound', None), self.handle(handle))
        # Nobody else can claim it now.
        (other,) = self.new_arqs()
        self.start(other, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(other))


class TestBoundWithoutHandle(AuditTestBase):

    def test_marked_failed_and_nova_told(self):
        arq, instance = self.bound()
        handle = self.handle_of(arq)
        self.set_arq(arq, attach_handle_id=None, pending_event=None)
        self.set_handle(handle, in_use=False, state='available')
        report = self.auditor.run()
        self.assertEqual([arq], report.failed_arqs)
        self.assertEqual('BindFailed', self.state(arq))
        self.assertTrue(self.binder.wait_idle())
        self.assertIn((instance, arq, 'failed'), self.notifier.sent)
        self.assertIsNone(self.arq(arq)[1])
        # Nothing left on a second run.
        self.assertEqual(0, self.auditor.run().repairs())


class TestStuckBindings(AuditTestBase):

    def test_old_bind_started_bound_again(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        # The task was lost (nothing called bind_one).
        report = self.auditor.run()
        self.assertEqual([], report.requeued_bindings)
        self.age_arq(arq)
        report = self.auditor.run()
        self.assertEqual([arq], report.requeued_bindings)
        self.assertTrue(self.binder.wait_idle())
        self.assertEqual('Bound', self.state(arq))
        self.assertIn((instance, arq, 'completed'), self.notifier.sent)


class TestCleanings(AuditTestBase):

    def test_stale_cleaning_requeued(self):
        handle = self.af_handle()
        self.set_handle(handle, state='cleaning', age=GRACE + 31)
        report = self.auditor.run()
        self.assertEqual([handle], report.requeued_cleanings)
        self.assertEqual(1, self.cleaner.calls)

    def test_recent_cleaning_left_alone(self):
        handle = self.af_handle()
        self.set_handle(handle, state='cleaning', age=GRACE)
        report = self.auditor.run()
        self.assertEqual(0, report.repairs())
        self.assertEqual(0, self.cleaner.calls)

    def test_stale_dirty_requeued(self):
        handle = self.af_handle()
        self.set_handle(handle, state='dirty', age=GRACE + 31)
        self.assertEqual([handle], self.auditor.run().requeued_cleanings)

    def test_hanging_cleaning_failed(self):
        handle = self.af_handle()
        self.cleaner.busy.add(handle)
        self.set_handle(handle, state='cleaning', age=GRACE + 31)
        report = self.auditor.run()
        self.assertEqual([handle], report.stuck_cleanings)
        in_use, state, reason = self.handle(handle)
        self.assertEqual('clean_failed', state)
        self.assertIn('did not finish within 90 s', reason)
        # The hung step finishing later changes nothing.
        with self.db.transaction() as session:
            device_obj.finish_cleaning(session, handle)
        self.assertEqual('clean_failed', self.handle(handle)[1])

    def test_real_cleaner_finishes_requeued_cleaning(self):
        from accel_backend.agent import cleaning
        from accel_backend.conductor import store
        conf = base.make_conf(self)
        cleaner = cleaning.Cleaner(store.HostStore(self.db, HOST), None,
                                   conf, HOST)
        cleaner.start()
        self.addCleanup(cleaner.stop)
        handle = self.af_handle()
        self.set_handle(handle, state='cleaning', age=GRACE + 31)
        report = self.make_auditor(cleaner=cleaner).run()
        self.assertIn(report.requeued_cleanings, ([handle], []))
        self.assertTrue(cleaner.wait_idle())
        self.assertEqual((False, 'available', None), self.handle(handle))

    def test_cleaning_waiting_for_a_worker_not_failed(self):
        # A service restarted long after it crashed mid-cleaning: its
        # cleaner queued the handle left ``cleaning`` (stale updated_at)
        # behind another cleaning that holds its only worker.  The step
        # has not started, so it does not hang: the audit must leave it
        # to the cleaner, not mark it clean_failed.
        from accel_backend.agent import cleaning
        from accel_backend.conductor import store
        tmp = self.useFixture(fixtures.TempDir()).path
        gate = os.path.join(tmp, 'gate')
        script = os.path.join(tmp, 'wait_for_gate.py')
        with open(script, 'w') as f:
            f.write(_WAIT_FOR_GATE)
        conf = base.make_conf(self, cleaning={
            'command': '%s %s %s' % (sys.executable, script, gate),
            'timeout': 30})
        cleaner = cleaning.Cleaner(store.HostStore(self.db, HOST), None,
                                   conf, HOST, workers=1)
        self.addCleanup(cleaner.stop)
        # Cleanups run last first: the gate opens before the stop waits.
        self.addCleanup(lambda: open(gate, 'w').close())
        # The T4 cleaned first (lower handle id) runs the waiting command.
        (first_rp, first), (_, waiting) = self.handles_by_id()
        with self.db.transaction() as session:
            session.execute(sa.update(models.Deployable).where(
                models.Deployable.rp_uuid == first_rp).values(
                    cleaning='command'))
        self.set_handle(first, state='dirty')
        self.set_handle(waiting, state='cleaning', age=GRACE + 31)
        self.assertEqual([first, waiting], cleaner.submit_pending())
        report = self.make_auditor(cleaner=cleaner).run()
        self.assertEqual([], report.stuck_cleanings)
        self.assertEqual([waiting], report.requeued_cleanings)
        self.assertEqual((False, 'cleaning', None), self.handle(waiting))
        open(gate, 'w').close()
        self.assertTrue(cleaner.wait_idle(timeout=30))
        self.assertEqual((False, 'available', None), self.handle(first))
        self.assertEqual((False, 'available', None), self.handle(waiting))

    def handles_by_id(self):
        """``[(rp_uuid, handle_uuid)]`` of the two T4s, lower id first."""
        with self.db.transaction() as session:
            return [tuple(row) for row in session.execute(
                sa.select(models.Deployable.rp_uuid,
                          models.AttachHandle.uuid)
                .join(models.Deployable)
                .where(models.Deployable.rp_uuid.in_((self.af, self.d8)))
                .order_by(models.AttachHandle.id))]


# ``[cleaning] command`` of test_cleaning_waiting_for_a_worker_not_failed:
# waits (20 s at most) for the file its first argument names.
_WAIT_FOR_GATE = """import os, sys, time
deadline = time.monotonic() + 20
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.02)
sys.exit(0 if os.path.exists(sys.argv[1]) else 1)
"""


class TestRun(AuditTestBase):

    def test_failing_step_does_not_stop_the_others(self):
        handle = self.af_handle()
        self.set_handle(handle, in_use=True, state='bound')

        def boom(report):
            raise RuntimeError('boom')
        self.useFixture(fixtures.MockPatchObject(
            self.auditor, '_deleted_instances', boom))
        self.useFixture(fixtures.MockPatchObject(audit.LOG, 'exception'))
        report = self.auditor.run()
        self.assertEqual([('deleted_instances', 'boom')], report.errors)
        self.assertEqual([handle], report.released_handles)

    def test_service_runs_audit_periodically(self):
        conf = base.make_conf(
            self, DEFAULT={'host': HOST}, audit={'interval': 1},
            placement={'auth_type': 'admin_token', 'token': 'admin',
                       'endpoint': 'http://127.0.0.1:9'},
            nova={'auth_type': 'admin_token', 'token': 'admin',
                  'endpoint': 'http://127.0.0.1:9'},
            discovery={'report_interval': 3600})
        self.assertEqual(600, conf.audit.grace_period)
        self.assertTrue(conf.audit.delete_orphaned_arqs)
        svc = service_mod.Service(conf)
        calls = []
        svc.auditor.run = lambda: calls.append(1) or audit.AuditReport()
        svc.start()
        self.addCleanup(svc.stop)
        deadline = datetime.datetime.now() + datetime.timedelta(seconds=10)
        while not calls and datetime.datetime.now() < deadline:
            svc._stop.wait(0.1)
        self.assertTrue(calls)
        self.assertEqual(1, svc._audit_loop.interval)

    def test_interval_zero_disables(self):
        loop = periodic.AuditLoop(self.auditor, 0)
        loop.start()
        self.assertIsNone(loop._thread)
        loop.stop()
