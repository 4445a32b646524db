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

"""``Binder.finish`` sends the first try of a PATCH's events on the
calling thread (the API thread, after its answer) while fewer than
``inline_events`` callers do so; beyond that, and with
``inline_events=0``, a delivery thread sends it."""

import logging
import threading

import fixtures

from accel_backend.conductor import bind_row
from tests.unit.accel_backend import binder_fixtures as fx


class ThreadNotifier(fx.FakeNotifier):
    """Accepts every event; records the sending thread, and can hold a
    send until ``release`` is set."""

    def __init__(self):
        super().__init__()
        self.threads = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def send(self, events):
        self.threads.append(threading.current_thread())
        self.entered.set()
        self.release.wait(10)
        return super().send(events)


class LogSnapshotNotifier(ThreadNotifier):
    """Keeps what ``logger`` (a ``fixtures.FakeLogger``) had written when
    each send began."""

    def __init__(self, logger):
        super().__init__()
        self.logger = logger
        self.log_at_send = []

    def send(self, events):
        self.log_at_send.append(self.logger.output)
        return super().send(events)


class BrokenNotifier(fx.FakeNotifier):
    """A bug on the way to Nova: every send raises."""

    def send(self, events):
        raise RuntimeError('a bug on the way to Nova')


class FinishInlineTest(fx.BinderTestBase):

    def bound_outcomes(self, binder):
        """A committed in-transaction binding of one new ARQ, as the
        PATCH handler hands it to ``finish``."""
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        with self.db.transaction() as session:
            locked = bind_row.lock(session, [arq])
            outcomes = binder.bind_locked(session, locked)
        return arq, outcomes

    def test_first_try_on_the_calling_thread(self):
        notifier = ThreadNotifier()
        binder = self.make_binder(notifier, inline_events=1)
        arq, outcomes = self.bound_outcomes(binder)
        binder.finish(outcomes)
        # Sent before finish returned, from this thread, and forgotten.
        self.assertEqual([threading.current_thread()], notifier.threads)
        self.assertEqual([arq], [a for _, a, _ in notifier.sent])
        self.assertIsNone(self.arq(arq)[1])

    def test_beyond_the_bound_a_delivery_thread_sends_it(self):
        notifier = ThreadNotifier()
        binder = self.make_binder(notifier, inline_events=1)
        first, first_outcomes = self.bound_outcomes(binder)
        second, second_outcomes = self.bound_outcomes(binder)
        notifier.release.clear()
        holder = threading.Thread(target=binder.finish,
                                  args=(first_outcomes,))
        holder.start()
        self.assertTrue(notifier.entered.wait(10))
        # The one inline slot is taken: this finish returns at once.
        binder.finish(second_outcomes)
        notifier.release.set()
        holder.join(10)
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual(2, len(notifier.threads))
        self.assertIs(holder, notifier.threads[0])
        self.assertNotIn(notifier.threads[1],
                         (holder, threading.current_thread()))
        self.assertEqual({first, second},
                         {a for _, a, _ in notifier.sent})

    def test_without_inline_events_a_delivery_thread_sends_it(self):
        notifier = ThreadNotifier()
        binder = self.make_binder(notifier)
        arq, outcomes = self.bound_outcomes(binder)
        binder.finish(outcomes)
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual([arq], [a for _, a, _ in notifier.sent])
        self.assertNotEqual(threading.current_thread(), notifier.threads[0])

    def test_bound_logged_once_committed(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.conductor.binder', level=logging.INFO))
        binder = self.make_binder(fx.FakeNotifier(), inline_events=1)
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        with self.db.transaction() as session:
            locked = bind_row.lock(session, [arq])
            outcomes = binder.bind_locked(session, locked)
            # Not committed yet (the PATCH has not answered either).
            self.assertNotIn('Bound', logger.output)
        binder.finish(outcomes)
        self.assertIn('Bound 1 ARQs: %s to PCI' % arq, logger.output)

    def test_event_sent_before_the_log_line(self):
        # Nova's instance waits on the event, nobody on the log line.
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.conductor.binder', level=logging.INFO))
        notifier = LogSnapshotNotifier(logger)
        binder = self.make_binder(notifier, inline_events=1)
        arq, outcomes = self.bound_outcomes(binder)
        binder.finish(outcomes)
        self.assertEqual([arq], [a for _, a, _ in notifier.sent])
        self.assertNotIn('Bound', notifier.log_at_send[0])
        self.assertIn('Bound 1 ARQs: %s' % arq, logger.output)

    def test_logged_when_the_first_try_raises(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.conductor.binder', level=logging.INFO))
        binder = self.make_binder(BrokenNotifier(), inline_events=1)
        arq, outcomes = self.bound_outcomes(binder)
        self.assertRaises(RuntimeError, binder.finish, outcomes)
        self.assertIn('Bound 1 ARQs: %s' % arq, logger.output)
