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

"""ARQ binding and Nova: the ``accelerator-request-bound`` events the
notifier posts to a Nova stub over HTTP (keystoneauth, wsgi-intercept),
and the binder's retries and give-ups, over the shared binder fixtures
(``binder_fixtures``).
"""

import socket
import threading

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.conductor import binder as binder_mod
from accel_backend.conductor import nova_notifier as notifier_mod
from accel_backend.db import models
from tests.unit.accel_backend import binder_fixtures as fx
from tests import waiting


class TestNovaNotifier(fx.NovaTestBase):

    def test_event_body_and_headers(self):
        inst, arq = uuidutils.generate_uuid(), uuidutils.generate_uuid()
        done, retry = self.real_notifier.send([(inst, arq, 'completed')])
        self.assertEqual(({arq}, set()), (done, retry))
        (req,) = self.nova.posts
        self.assertEqual({'events': [{
            'name': 'accelerator-request-bound', 'server_uuid': inst,
            'tag': arq, 'status': 'completed'}]}, req['body'])
        headers = {k.lower(): v for k, v in req['headers'].items()}
        self.assertEqual('compute 2.82', headers['openstack-api-version'])
        self.assertEqual('admin', headers['x-auth-token'])

    def test_nothing_to_send(self):
        self.assertEqual((set(), set()), self.real_notifier.send([]))
        self.assertEqual([], self.nova.posts)

    def test_per_event_codes(self):
        gone, early, ok = (uuidutils.generate_uuid() for _ in range(3))
        self.nova.codes = {gone: 404, early: 422}
        done, retry = self.real_notifier.send([
            (gone, 'a-gone', 'completed'), (early, 'a-early', 'failed'),
            (ok, 'a-ok', 'completed')])
        self.assertEqual({'a-gone', 'a-ok'}, done)
        self.assertEqual({'a-early'}, retry)

    def test_whole_request_errors(self):
        ev = [(uuidutils.generate_uuid(), 'a1', 'completed')]
        for status, expect in ((500, (set(), {'a1'})),
                               (503, (set(), {'a1'})),
                               (404, ({'a1'}, set()))):
            self.nova.fail_next(status)
            self.assertEqual(expect, self.real_notifier.send(ev))

    def test_connection_refused_is_retry(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        notifier = notifier_mod.NovaNotifier(
            fx.nova_adapter('http://127.0.0.1:%d/v2.1' % port))
        self.assertEqual((set(), {'a1'}), notifier.send(
            [(uuidutils.generate_uuid(), 'a1', 'completed')]))
        self.assertIn('Cannot reach Nova', self.notifier_log.output)


class TestBinderWithNova(fx.NovaTestBase):

    def _bind(self, rp=None, n=1):
        arqs = self.new_arqs(n=n)
        inst = {}
        for u in arqs:
            inst[u], _ = self.start(u, rp or self.af)
        binder = self.make_binder(self.real_notifier)
        binder.submit(arqs)
        self.assertTrue(binder.wait_idle(5))
        return arqs, inst, binder

    def test_422_retried_until_accepted(self):
        self.nova.refuse = 3
        (arq,), inst, _ = self._bind()
        self.assertEqual(4, len(self.nova.posts))
        self.assertEqual([arq] * 4, [e['tag'] for e in self.nova.sent()])
        self.assertEqual({'completed'},
                         {e['status'] for e in self.nova.sent()})
        self.assertEqual(inst[arq], self.nova.sent()[-1]['server_uuid'])
        self.assertIsNone(self.arq(arq)[1])
        self.assertEqual('Bound', self.state(arq))

    def test_failed_status_sent(self):
        (arq,), _, _ = self._bind(rp=uuidutils.generate_uuid())
        self.assertEqual([('accelerator-request-bound', arq, 'failed')],
                         [(e['name'], e['tag'], e['status'])
                          for e in self.nova.sent()])
        self.assertIsNone(self.arq(arq)[1])

    def test_404_drops_event(self):
        arqs = self.new_arqs()
        inst, _ = self.start(arqs[0], self.af)
        self.nova.codes[inst] = 404
        binder = self.make_binder(self.real_notifier)
        binder.submit(arqs)
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual(1, len(self.nova.posts))
        self.assertIsNone(self.arq(arqs[0])[1])

    def test_5xx_retried(self):
        self.nova.fail_next(500, 502)
        (arq,), _, _ = self._bind()
        self.assertEqual(3, len(self.nova.posts))
        self.assertIsNone(self.arq(arq)[1])

    def test_only_refused_events_resent(self):
        arqs = self.new_arqs(n=2)
        early, _ = self.start(arqs[0], self.af)
        self.start(arqs[1], self.d8)
        # Nova refuses the first event's first two deliveries only.
        self.nova.codes[early] = [422, 422]
        binder = self.make_binder(self.real_notifier)
        binder.submit(arqs)
        self.assertTrue(binder.wait_idle(5))
        tags = [e['tag'] for e in self.nova.sent()]
        self.assertEqual(1, tags.count(arqs[1]))
        self.assertGreater(tags.count(arqs[0]), 1)
        self.assertEqual([None, None], [self.arq(u)[1] for u in arqs])

    def test_connection_refused_retried(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        calls = []

        class Flaky:
            """First two sends go to a closed port, then to the stub."""

            def __init__(inner):
                inner.dead = notifier_mod.NovaNotifier(
                    fx.nova_adapter('http://127.0.0.1:%d/v2.1' % port))

            def send(inner, events):
                calls.append(events)
                if len(calls) <= 2:
                    return inner.dead.send(events)
                return self.real_notifier.send(events)

        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        binder = self.make_binder(Flaky())
        binder.submit([arq])
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual(3, len(calls))
        self.assertEqual(1, len(self.nova.posts))
        self.assertIsNone(self.arq(arq)[1])

    def test_give_up_after_timeout(self):
        self.nova.refuse = 10 ** 6
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        binder = self.make_binder(self.real_notifier, retry_interval=0.05,
                                  retry_timeout=0.3)
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.conductor.binder'))
        binder.submit([arq])
        self.assertTrue(binder.wait_idle(5))
        self.assertIn('Giving up', logger.output)
        self.assertLess(len(self.nova.posts), 10)
        self.assertIsNone(self.arq(arq)[1])
        self.assertEqual('Bound', self.state(arq))

    def test_resume_resends_pending_event(self):
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        # Bound, but the process died before Nova took the event.
        self.assertEqual('Bound', self.binder.bind_one(arq))
        self.assertEqual('completed', self.arq(arq)[1])
        self.assertEqual([], self.nova.posts)
        binder = self.make_binder(self.real_notifier)
        binder.resume()
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual([(arq, 'completed')],
                         [(e['tag'], e['status'])
                          for e in self.nova.sent()])
        self.assertIsNone(self.arq(arq)[1])

    def test_delivered_event_forgotten_unless_it_changed_since(self):
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.d8)
        self.assertEqual('Bound', self.binder.bind_one(a))
        self.assertEqual('Bound', self.binder.bind_one(b))
        # b was unbound and failed to bind again while its first event
        # was on the way: its new event is still to be sent.
        with self.db.transaction() as session:
            session.execute(sa.update(models.ARQ)
                            .where(models.ARQ.uuid == b)
                            .values(pending_event='failed'))
        self.binder.events.forget({a: 'completed', b: 'completed'})
        self.assertIsNone(self.arq(a)[1])
        self.assertEqual('failed', self.arq(b)[1])

    def test_stop_interrupts_retries(self):
        self.nova.refuse = 10 ** 6
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        binder = binder_mod.Binder(self.db, self.real_notifier,
                                   retry_interval=5, retry_timeout=600)
        binder.submit([arq])
        for _ in range(200):
            if self.nova.posts:
                break
            threading.Event().wait(0.01)
        binder.stop()  # must not wait out the 5 s backoff
        self.assertEqual(1, len(self.nova.posts))
        # The event is still pending for the next process.
        self.assertEqual('completed', self.arq(arq)[1])

    def test_refused_events_do_not_hold_the_bind_workers(self):
        # Nova takes no event (422 for every request): the first PATCH's
        # retries go on, and a second PATCH still binds at once, with a
        # single bind worker.
        self.nova.refuse = 10 ** 6
        first, second = self.new_arqs(n=2)
        self.start(first, self.af)
        self.start(second, self.d8)
        binder = self.make_binder(self.real_notifier, workers=1,
                                  retry_interval=0.05, retry_timeout=600)
        binder.submit([first])
        self.wait_for(lambda: len(self.nova.posts) >= 2)
        binder.submit([second])
        self.wait_for(lambda: self.state(second) == 'Bound')
        # Both events stay pending and are still being retried.
        self.wait_for(lambda: {first, second} <= {
            e['tag'] for e in self.nova.sent()[2:]})
        self.assertEqual(('completed', 'completed'),
                         (self.arq(first)[1], self.arq(second)[1]))

    def wait_for(self, check, timeout=5):
        waiting.wait_for('condition', check, timeout, interval=0.01)
