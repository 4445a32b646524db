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

"""Bounded load on loopback against the real ``accel-backend`` process.

Placement (gunicorn), ``accel-backend`` (SQLite, ``[api] workers = 16``)
over 64 generated GPUs, and a Nova stub.  16 client threads, each with
its own ``requests.Session`` and 4 GPUs of its own, run ARQ life cycles
until 10,000 requests (``ACCEL_LOAD_REQUESTS``) have been sent (a
cycle once started is finished, so a few more are):

    POST ARQ -> PATCH bind -> GET ARQ until Bound -> GET ?instance=&
    bind_state=resolved -> GET device_profiles?name= -> GET devices?limit=
    -> GET an ARQ that does not exist (404, on purpose) -> POST ARQ of an
    unknown profile (404, on purpose) -> DELETE ?instance=

Every answer must be the expected one (no 5xx, no unexpected 4xx, no
connection error).  Afterwards the database is consistent (no handle in
use without a Bound ARQ, no Bound ARQ without a handle, nothing left in
use), the audit finds nothing to repair, and Nova got one ``completed``
event per binding.  Throughput and latencies go to the test details (and
the results file, see ``test_crash.record_result``).
"""

import collections
import os
import statistics
import threading
import time
import uuid

import requests
from testtools import content

from accel_backend.conductor import audit
from accel_backend.db import api as db_api
from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability import test_crash
from tests import waiting
from tools.fixtures import accel_backend as accel_fx

REQUESTS = int(os.environ.get('ACCEL_LOAD_REQUESTS', '10000'))
THREADS = 16
GPUS_PER_THREAD = 4


class _Traffic:
    """The client threads of the load: their shared request budget
    (``REQUESTS``), and what they saw: ``statuses`` (``{(name, status):
    count}``), ``latencies`` (``{name: [seconds]}``), ``errors`` and the
    ARQs they bound (``binds``)."""

    def __init__(self, accel, rps):
        self.accel, self.rps = accel, rps
        self.lock = threading.Lock()
        self.sent = 0
        self.errors = []
        self.statuses = collections.Counter()
        self.latencies = collections.defaultdict(list)
        self.binds = []

    def take(self):
        """Count one request against the budget; False once it is spent."""
        with self.lock:
            if self.sent >= REQUESTS:
                return False
            self.sent += 1
            return True

    def call(self, session, name, method, path, expect, body=None):
        """One request; its status and latency recorded, and an error
        when the status is not ``expect``."""
        t0 = time.perf_counter()
        try:
            resp = session.request(method, self.accel.root + path,
                                   json=body,
                                   headers=accel_fx.NOVA_HEADERS,
                                   timeout=30)
        except requests.RequestException as e:
            with self.lock:
                self.errors.append((name, method, path, repr(e)))
            raise
        dt = time.perf_counter() - t0
        with self.lock:
            self.statuses[(name, resp.status_code)] += 1
            self.latencies[name].append(dt)
            if resp.status_code != expect:
                self.errors.append((name, method, path, resp.status_code,
                                    resp.text[:300]))
        return resp

    def worker(self, index):
        """Thread ``index``: ARQ life cycles on its own GPUs until the
        budget is spent."""
        session = requests.Session()
        mine = self.rps[index * GPUS_PER_THREAD:(index + 1) *
                        GPUS_PER_THREAD]
        n = 0
        try:
            while True:
                rp = mine[n % GPUS_PER_THREAD]
                n += 1
                instance = str(uuid.uuid4())
                if not self.take():
                    return
                if not self.cycle(session, rp, instance):
                    return
        except Exception as e:
            with self.lock:
                self.errors.append(('thread %d' % index, repr(e)))

    def cycle(self, session, rp, instance):
        """One ARQ's life cycle on provider ``rp`` for ``instance``; False
        when the ARQ ended in a state other than ``Bound`` (recorded)."""
        # A cycle started is finished (its ARQ deleted), past the budget
        # too.
        arq = self.call(session, 'create', 'POST',
                        '/v2/accelerator_requests', 201,
                        {'device_profile_name': 'a100'}
                        ).json()['arqs'][0]['uuid']
        self.take()
        self.call(session, 'bind', 'PATCH',
                  '/v2/accelerator_requests', 202, {arq: [
                      {'op': 'add', 'path': '/hostname',
                       'value': rel_fixtures.HOST},
                      {'op': 'add', 'path': '/device_rp_uuid',
                       'value': rp},
                      {'op': 'add', 'path': '/instance_uuid',
                       'value': instance}]})
        with self.lock:
            self.binds.append(arq)
        while True:
            self.take()
            state = self.call(session, 'show', 'GET',
                              '/v2/accelerator_requests/' + arq,
                              200).json()['state']
            if state == 'Bound':
                break
            if state != 'BindStarted':
                with self.lock:
                    self.errors.append(('state', arq, state))
                return False
            time.sleep(0.02)
        for name, method, path, expect in (
                ('list_resolved', 'GET',
                 '/v2/accelerator_requests?instance=%s&'
                 'bind_state=resolved' % instance, 200),
                ('profile_by_name', 'GET',
                 '/v2/device_profiles?name=a100', 200),
                ('devices', 'GET', '/v2/devices?limit=10', 200),
                ('show_missing_404', 'GET',
                 '/v2/accelerator_requests/' +
                 str(uuid.uuid4()), 404),
                ('create_unknown_404', 'POST',
                 '/v2/accelerator_requests', 404),
                ('delete', 'DELETE',
                 '/v2/accelerator_requests?instance=' +
                 instance, 204)):
            self.take()
            self.call(session, name, method, path, expect,
                      {'device_profile_name': 'nope'}
                      if name == 'create_unknown_404' else None)
        return True


def _figures(traffic, elapsed, total):
    """Throughput, statuses and latencies of ``traffic`` (``_Traffic``)
    that ran ``elapsed`` seconds and sent ``total`` requests, for the
    test's details and the results file."""
    statuses, latencies = traffic.statuses, traffic.latencies

    def ms(values, q):
        values = sorted(values)
        return round(1000 * values[min(len(values) - 1,
                                       int(q * len(values)))], 1)
    figures = {
        'requests': total, 'threads': THREADS,
        'seconds': round(elapsed, 1),
        'requests_per_s': round(total / elapsed, 1),
        'bindings': len(traffic.binds),
        'bindings_per_s': round(len(traffic.binds) / elapsed, 1),
        'expected_404s': sum(v for (n, s), v in statuses.items()
                             if s == 404),
        'status_counts': {str(s): sum(v for (n, st), v in
                                      statuses.items() if st == s)
                          for s in sorted({s for _, s in statuses})},
        'latency_ms': {name: {'p50': ms(v, 0.5), 'p95': ms(v, 0.95),
                              'mean': round(1000 * statistics.mean(v),
                                            1)}
                       for name, v in sorted(latencies.items())},
    }
    return figures


@reliability.slow
class TestLoad(test_crash.CrashTestBase):

    gpus = THREADS * GPUS_PER_THREAD

    def test_mixed_load(self):
        accel = self.start_accel(api={'workers': THREADS},
                                 binding={'workers': 4})
        deps = accel.wait_for_devices(self.gpus, timeout=60)
        accel.request('POST', '/v2/device_profiles', [
            {'name': 'a100', 'groups': [{'resources:PGPU': '1'}]}],
            expect=(201,))
        rps = [d['rp_uuid'] for d in deps]

        traffic = _Traffic(accel, rps)
        elapsed, _ = waiting.run_threads(
            traffic.worker, [(i,) for i in range(THREADS)], 600)
        statuses, errors, binds = (traffic.statuses, traffic.errors,
                                   traffic.binds)
        total = sum(statuses.values())

        self.addDetail('statuses', content.text_content('\n'.join(
            '%s %s: %d' % (k[0], k[1], v)
            for k, v in sorted(statuses.items()))))
        self.assertEqual([], errors[:20])
        self.assertGreaterEqual(total, REQUESTS)

        # Every binding told Nova once it was done.
        waiting.wait_for('events', lambda: set(binds) <= set(
            self.nova.events_by_tag()), 30, log=accel.log_text)
        events = self.nova.events_by_tag()
        self.assertEqual([], [a for a in binds
                              if set(events[a]) != {'completed'}])
        self.assertEqual([], accel.consistency_problems())
        with accel.db() as conn:
            self.assertEqual((0, 0), conn.execute(
                'SELECT (SELECT COUNT(*) FROM attach_handles WHERE in_use),'
                ' (SELECT COUNT(*) FROM accelerator_requests)').fetchone())
        db = db_api.Database('sqlite:///' + accel.db_path)
        self.addCleanup(db.dispose)
        report = audit.Auditor(db, rel_fixtures.HOST, grace_period=0).run()
        self.assertEqual(0, report.repairs(), report)

        figures = _figures(traffic, elapsed, total)
        self.addDetail('figures', content.json_content(figures))
        test_crash.record_result('load', figures)
