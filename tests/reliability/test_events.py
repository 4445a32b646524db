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

"""Event delivery to Nova: retried with backoff until delivered, never
lost on restart.

Real processes (Placement, ``accel-backend`` on SQLite with 8 GPUs) and a
Nova stub in this process that can be down (nothing listening), answer
5xx, answer per-event 422 (the instance has no host yet) or be slow.
``[nova] event_retry_interval = 0.1`` (doubling up to 30 s).
"""

import time
import uuid

from testtools import content

from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability import test_crash
from tests import waiting

GPUS = 8


@reliability.slow
class TestEventDelivery(test_crash.CrashTestBase):

    gpus = GPUS

    def setUp(self):
        super().setUp()
        self.accel = self.start_accel()
        self.deps = self.accel.wait_for_devices(GPUS, timeout=60)
        self.accel.request('POST', '/v2/device_profiles', [
            {'name': 'a100', 'groups': [{'resources:PGPU': '1'}]}],
            expect=(201,))
        self.next_dep = 0

    def bind(self, n):
        """Create and bind ``n`` ARQs in one PATCH (one delivery task);
        returns ``{arq: instance}``."""
        body, out = {}, {}
        for _ in range(n):
            arq = self.accel.request(
                'POST', '/v2/accelerator_requests',
                {'device_profile_name': 'a100'},
                expect=(201,))['arqs'][0]['uuid']
            rp = self.deps[self.next_dep]['rp_uuid']
            self.next_dep += 1
            instance = str(uuid.uuid4())
            body[arq] = [
                {'op': 'add', 'path': '/hostname',
                 'value': rel_fixtures.HOST},
                {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
                {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
            out[arq] = instance
        self.accel.request('PATCH', '/v2/accelerator_requests', body,
                           expect=(202,))
        return out

    def wait_delivered(self, arqs, timeout=30):
        waiting.wait_for(
            'events delivered', lambda: set(arqs) <= set(
                self.nova.events_by_tag()) and not any(
                u in arqs for u, _ in self.accel.pending_events()),
            timeout, log=self.accel.all_logs)
        events = self.nova.events_by_tag()
        for arq in arqs:
            self.assertEqual({'completed'}, set(events[arq]))

    def wait_pending(self, arqs, timeout=15):
        waiting.wait_for(
            'events pending', lambda: set(arqs) <= {
                u for u, _ in self.accel.pending_events()}, timeout,
            log=self.accel.all_logs)

    def attempt_gaps(self, arqs):
        times = [t for t, _, tags in self.nova.attempts()
                 if set(tags) & set(arqs)]
        return [round(b - a, 3) for a, b in zip(times, times[1:])]

    def test_nova_unreachable_then_back(self):
        self.nova.stop()
        arqs = self.bind(2)
        self.wait_pending(arqs)
        time.sleep(2)
        self.assertEqual({}, self.nova.events_by_tag())
        t0 = time.monotonic()
        self.nova.start()
        self.wait_delivered(arqs)
        back_s = time.monotonic() - t0
        # Retrying went on through the outage: the first request Nova
        # could take carried both events, and it took them.
        self.assertEqual([(200, sorted(arqs))], [
            (st, sorted(tags)) for _, st, tags in self.nova.attempts()
            if set(tags) & set(arqs)])
        test_crash.record_result('event_nova_down_2s', {
            'delivered_after_back_s': round(back_s, 2)})

    def _status_then_ok(self, status, count):
        self.nova.fail_next(*[status] * count)
        arqs = self.bind(2)
        self.wait_delivered(arqs)
        gaps = self.attempt_gaps(arqs)
        self.addDetail('gaps', content.text_content(repr(gaps)))
        self.assertEqual(count, len(gaps))
        # Exponential backoff: 0.1, 0.2, 0.4, ... (request time aside).
        for i, gap in enumerate(gaps):
            self.assertGreaterEqual(gap, 0.1 * 2 ** i * 0.9, gaps)
        return gaps

    def test_5xx_retried_with_backoff(self):
        for status in (500, 503):
            gaps = self._status_then_ok(status, 4)
        test_crash.record_result('event_5xx', {'retry_gaps_s': gaps})

    def test_whole_request_422_retried(self):
        self._status_then_ok(422, 3)

    def test_per_event_422_retried(self):
        self.nova.refuse = 3
        arqs = self.bind(2)
        self.wait_delivered(arqs)
        codes = [st for _, st, tags in self.nova.attempts()
                 if set(tags) & set(arqs)]
        self.assertEqual([207, 207, 207, 200], codes)

    def test_pending_events_survive_kill_and_stop(self):
        for how in ('kill', 'terminate'):
            self.nova.stop()
            arqs = self.bind(2)
            self.wait_pending(arqs)
            if how == 'kill':
                self.accel.kill()
            else:
                self.accel.proc.terminate()
                self.accel.proc.wait(15)
            self.assertEqual(set(arqs), {
                u for u, _ in self.accel.pending_events()} & set(arqs))
            self.nova.start()
            t0 = time.monotonic()
            self.accel.start()
            self.wait_delivered(arqs)
            test_crash.record_result('event_after_%s' % how, {
                'delivered_after_restart_s': round(
                    time.monotonic() - t0, 2)})
        self.assertEqual([], self.accel.consistency_problems())
