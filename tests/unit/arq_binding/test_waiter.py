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

"""Tests for nova_accel.arq_binding.waiter.wait_for_bound_arqs."""

import contextlib
import threading
import time
from unittest import mock

from nova.compute import manager as compute_manager
from nova import exception as nova_exception
from nova import objects

from nova_accel.arq_binding import exception
from nova_accel.arq_binding import waiter as binding
from tests.unit.virt import base

INSTANCE_UUID = 'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b'
UUID_A = base.PCI_ARQ['uuid']
UUID_B = base.PCI_ARQ_2['uuid']


class FakeInstance(object):
    uuid = INSTANCE_UUID
    vm_state = 'building'
    task_state = 'spawning'


class FakeVirtAPI(object):
    """Minimal VirtAPI with Nova 34's wait/exit-early contract.

    Events are registered on entry, waited for on exit with one deadline
    for all, ``exit_wait_early`` skips the events it names, a non
    ``completed`` status goes to ``error_callback`` (or raises
    NovaException like Nova's default) and a missed deadline raises
    ``nova.exception.InstanceEventTimeout``.  ``deliver()`` is what a thread
    handling ``POST /os-server-external-events`` would do.
    """

    class ExitEarly(Exception):
        def __init__(self, events):
            super().__init__()
            self.events = events

    def __init__(self):
        self.lock = threading.Lock()
        self.pending = {}        # (name, tag) -> [threading.Event, status]
        self.prepared = threading.Event()
        self.calls = []

    def deliver(self, name, tag, status='completed'):
        self.prepared.wait(5)
        with self.lock:
            slot = self.pending.get((name, tag))
        if slot is not None:
            slot[1] = status
            slot[0].set()

    @contextlib.contextmanager
    def wait_for_instance_event(self, instance, event_names, timeout=300,
                                error_callback=None):
        self.calls.append(('wait', list(event_names), timeout))
        with self.lock:
            for key in event_names:
                self.pending[tuple(key)] = [threading.Event(), None]
        self.prepared.set()
        skipped = set()
        try:
            yield
        except self.ExitEarly as e:
            skipped = {tuple(k) for k in e.events}
        deadline = time.monotonic() + timeout
        for key in event_names:
            key = tuple(key)
            if key in skipped:
                continue
            ev, _ = self.pending[key]
            if not ev.wait(max(0, deadline - time.monotonic())):
                raise nova_exception.InstanceEventTimeout()
            if self.pending[key][1] != 'completed':
                if error_callback is None:
                    raise nova_exception.NovaException('Instance event failed')
                if error_callback('%s-%s' % key, instance) is False:
                    break

    def exit_wait_early(self, events):
        self.calls.append(('exit_wait_early', list(events)))
        raise self.ExitEarly(events)


class FakeClient(object):
    """Accelerator client returning ``self.arqs``; only_resolved filters."""

    RESOLVED = ('Bound', 'BindFailed', 'Deleting')

    def __init__(self, arqs):
        self.arqs = {a['uuid']: dict(a) for a in arqs}
        self.calls = []

    def set_state(self, uuid, state):
        self.arqs[uuid]['state'] = state

    def get_arqs_for_instance(self, instance_uuid, only_resolved=False):
        self.calls.append((instance_uuid, only_resolved))
        arqs = [dict(a) for a in self.arqs.values()]
        if only_resolved:
            arqs = [a for a in arqs if a['state'] in self.RESOLVED]
        return arqs


def _arq(uuid, state):
    return dict(base.PCI_ARQ, uuid=uuid, state=state)


class WaitForBoundARQsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.virtapi = FakeVirtAPI()
        self.instance = FakeInstance()
        self.threads = []

    def _later(self, delay, fn, *args):
        def run():
            time.sleep(delay)
            fn(*args)
        t = threading.Thread(target=run)
        t.start()
        self.threads.append(t)
        self.addCleanup(t.join, 10)

    def _wait(self, client, uuids, timeout=5):
        return binding.wait_for_bound_arqs(self.virtapi, client,
                                           self.instance, uuids, timeout)

    def test_already_resolved_returns_at_once(self):
        client = FakeClient([_arq(UUID_A, 'Bound'), _arq(UUID_B, 'Bound')])
        start = time.monotonic()
        arqs = self._wait(client, [UUID_B, UUID_A], timeout=30)
        self.assertLess(time.monotonic() - start, 1)
        self.assertEqual([UUID_B, UUID_A], [a['uuid'] for a in arqs])
        self.assertEqual(['Bound', 'Bound'], [a['state'] for a in arqs])
        self.assertEqual(
            ('exit_wait_early',
             [('accelerator-request-bound', UUID_B),
              ('accelerator-request-bound', UUID_A)]),
            self.virtapi.calls[1])
        # One read, inside the context, of resolved ARQs only.
        self.assertEqual([(INSTANCE_UUID, True)], client.calls)

    def test_events_requested_with_timeout(self):
        client = FakeClient([_arq(UUID_A, 'Bound')])
        self._wait(client, [UUID_A], timeout=7)
        self.assertEqual(
            ('wait', [('accelerator-request-bound', UUID_A)], 7),
            self.virtapi.calls[0])

    def test_default_timeout_is_arq_binding_timeout(self):
        self.flags(arq_binding_timeout=42)
        client = FakeClient([_arq(UUID_A, 'Bound')])
        binding.wait_for_bound_arqs(self.virtapi, client, self.instance,
                                    [UUID_A])
        self.assertEqual(42, self.virtapi.calls[0][2])

    def test_event_arrives_later(self):
        client = FakeClient([_arq(UUID_A, 'Bound'),
                             _arq(UUID_B, 'BindStarted')])

        def bind_b():
            client.set_state(UUID_B, 'Bound')
            self.virtapi.deliver('accelerator-request-bound', UUID_B)

        self._later(0.2, bind_b)
        start = time.monotonic()
        arqs = self._wait(client, [UUID_A, UUID_B])
        self.assertGreaterEqual(time.monotonic() - start, 0.15)
        self.assertEqual([UUID_A, UUID_B], [a['uuid'] for a in arqs])
        self.assertEqual(['Bound', 'Bound'], [a['state'] for a in arqs])
        # Only A was skipped; B was waited for, then everything re-read.
        self.assertEqual(
            ('exit_wait_early', [('accelerator-request-bound', UUID_A)]),
            self.virtapi.calls[1])
        self.assertEqual([(INSTANCE_UUID, True), (INSTANCE_UUID, False)],
                         client.calls)

    def test_failed_event(self):
        client = FakeClient([_arq(UUID_A, 'BindStarted')])

        def fail_a():
            client.set_state(UUID_A, 'BindFailed')
            self.virtapi.deliver('accelerator-request-bound', UUID_A,
                                 status='failed')

        self._later(0.1, fail_a)
        exc = self.assertRaises(exception.ARQBindingFailed, self._wait,
                                client, [UUID_A])
        self.assertEqual([UUID_A], exc.arq_uuids)
        self.assertIn(UUID_A, str(exc))
        self.assertIn(INSTANCE_UUID, str(exc))
        self.assertIsInstance(exc, nova_exception.NovaException)

    def test_failed_event_even_if_state_not_yet_updated(self):
        client = FakeClient([_arq(UUID_A, 'BindStarted')])
        self._later(0.1, self.virtapi.deliver, 'accelerator-request-bound',
                    UUID_A, 'failed')
        exc = self.assertRaises(exception.ARQBindingFailed, self._wait,
                                client, [UUID_A])
        self.assertEqual([UUID_A], exc.arq_uuids)

    def test_already_bind_failed(self):
        client = FakeClient([_arq(UUID_A, 'Bound'),
                             _arq(UUID_B, 'BindFailed')])
        start = time.monotonic()
        exc = self.assertRaises(exception.ARQBindingFailed, self._wait,
                                client, [UUID_A, UUID_B], 30)
        self.assertLess(time.monotonic() - start, 1)
        self.assertEqual([UUID_B], exc.arq_uuids)
        self.assertIn('BindFailed', str(exc))

    def test_completed_event_but_state_not_bound(self):
        client = FakeClient([_arq(UUID_A, 'BindStarted')])
        self._later(0.1, self.virtapi.deliver, 'accelerator-request-bound',
                    UUID_A)
        exc = self.assertRaises(exception.ARQBindingFailed, self._wait,
                                client, [UUID_A])
        self.assertIn('BindStarted', str(exc))

    def test_timeout(self):
        client = FakeClient([_arq(UUID_A, 'Bound'),
                             _arq(UUID_B, 'BindStarted')])
        start = time.monotonic()
        exc = self.assertRaises(exception.ARQBindingTimeout, self._wait,
                                client, [UUID_A, UUID_B], 0.3)
        self.assertGreaterEqual(time.monotonic() - start, 0.25)
        self.assertEqual(0.3, exc.timeout)
        self.assertEqual([UUID_B], exc.arq_uuids)
        self.assertIn('0.3 seconds', str(exc))
        self.assertIn('arq_binding_timeout', str(exc))
        self.assertIn(UUID_B, str(exc))
        self.assertIsInstance(exc, nova_exception.NovaException)

    def test_empty_list_does_not_wait(self):
        client = FakeClient([])
        self.assertEqual([], self._wait(client, []))
        self.assertEqual([], self.virtapi.calls)

    def test_none_means_all_arqs_of_instance(self):
        client = FakeClient([_arq(UUID_A, 'Bound'), _arq(UUID_B, 'Bound')])
        arqs = self._wait(client, None)
        self.assertEqual({UUID_A, UUID_B}, {a['uuid'] for a in arqs})

    def test_other_arqs_of_instance_ignored(self):
        client = FakeClient([_arq(UUID_A, 'Bound'),
                             _arq(UUID_B, 'BindFailed')])
        arqs = self._wait(client, [UUID_A])
        self.assertEqual([UUID_A], [a['uuid'] for a in arqs])


class WithNovaComputeVirtAPITest(base.TestCase):
    """Same waiter against Nova 34's real ComputeVirtAPI/InstanceEvents."""

    def setUp(self):
        super().setUp()
        compute = mock.Mock(spec=['reportclient', 'instance_events'])
        compute.instance_events = compute_manager.InstanceEvents()
        self.events = compute.instance_events
        self.virtapi = compute_manager.ComputeVirtAPI(compute)
        self.instance = FakeInstance()

    def _deliver(self, tag, status='completed', delay=0.2, before=None):
        def run():
            time.sleep(delay)
            if before is not None:
                before()
            event = objects.InstanceExternalEvent(
                instance_uuid=INSTANCE_UUID, name='accelerator-request-bound',
                tag=tag, status=status, data={})
            waiter = self.events.pop_instance_event(self.instance, event)
            if waiter is not None:
                waiter.set(event)
        t = threading.Thread(target=run)
        t.start()
        self.addCleanup(t.join, 10)

    def test_event_arrives_later(self):
        client = FakeClient([_arq(UUID_A, 'Bound'),
                             _arq(UUID_B, 'BindStarted')])
        self._deliver(UUID_B,
                      before=lambda: client.set_state(UUID_B, 'Bound'))
        start = time.monotonic()
        arqs = binding.wait_for_bound_arqs(self.virtapi, client,
                                           self.instance, [UUID_A, UUID_B], 5)
        self.assertGreaterEqual(time.monotonic() - start, 0.15)
        self.assertEqual([UUID_A, UUID_B], [a['uuid'] for a in arqs])
        self.assertEqual(['Bound', 'Bound'], [a['state'] for a in arqs])

    def test_already_resolved(self):
        client = FakeClient([_arq(UUID_A, 'Bound')])
        start = time.monotonic()
        arqs = binding.wait_for_bound_arqs(self.virtapi, client,
                                           self.instance, [UUID_A], 30)
        self.assertLess(time.monotonic() - start, 1)
        self.assertEqual([UUID_A], [a['uuid'] for a in arqs])

    def test_failed_event(self):
        client = FakeClient([_arq(UUID_A, 'BindStarted')])
        self._deliver(UUID_A, status='failed')
        exc = self.assertRaises(
            exception.ARQBindingFailed, binding.wait_for_bound_arqs,
            self.virtapi, client, self.instance, [UUID_A], 5)
        self.assertEqual([UUID_A], exc.arq_uuids)

    def test_timeout(self):
        client = FakeClient([_arq(UUID_A, 'BindStarted')])
        exc = self.assertRaises(
            exception.ARQBindingTimeout, binding.wait_for_bound_arqs,
            self.virtapi, client, self.instance, [UUID_A], 1)
        self.assertIn('within 1 seconds', str(exc))
