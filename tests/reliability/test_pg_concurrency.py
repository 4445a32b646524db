"""Concurrent binds, unbinds and deletes from several API processes on
PostgreSQL.

Started here: RabbitMQ, a throwaway PostgreSQL, Placement, a Nova stub,
one ``accel-backend-agent`` (host ``node1``, 8 generated GPUs) and two
``accel-backend-api`` processes (``[api] workers = 8`` each) on the
shared database.  16 client threads, 8 per API process, each with its own
``requests.Session``, send for ``ACCEL_CONCURRENCY_SECONDS`` (25) a
random mix on a shared pool of ARQs and 6 shared instances:

    create ARQ; bind 1-3 ARQs in one PATCH (keys in random order) to a
    random one of the 8 GPUs; unbind 1-2 ARQs; delete ?arqs= (1-3, random
    order); delete ?instance=; show an ARQ

so many requests contend for the same ARQ rows and the same devices.
Accepted answers: the intended one, or 404/409 where another thread got
there first (ARQ deleted, ARQ not in a bindable state).  Checked: no 5xx,
no other status, every request answered (client timeout 60 s: none means
no deadlock hung a worker); after the agent is idle no ARQ is left
``BindStarted``, no attach handle is held by two ARQs, no Bound ARQ
lacks a handle in use, no handle is in use without a Bound ARQ, no ARQ
that is not Bound holds a handle; PostgreSQL counted no deadlock
(``pg_stat_database.deadlocks`` and its log).  After deleting everything
all handles come back free.
"""

import collections
import os
import random
import threading
import time
import uuid

import fixtures
import requests
import sqlalchemy as sa
import testtools
from testtools import content

from tests.functional.fixtures import accel_nodes
from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability import test_crash
from tests import waiting
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import databases
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import rabbitmq

HOST = 'node1'
GPUS = 8
API_PROCESSES = 2
API_WORKERS = 8
THREADS = 16
INSTANCES = 6
SECONDS = float(os.environ.get('ACCEL_CONCURRENCY_SECONDS', '25'))
CLIENT_TIMEOUT = 60

CONSISTENCY = {
    'handle held by two ARQs':
        'SELECT attach_handle_id FROM accelerator_requests WHERE '
        'attach_handle_id IS NOT NULL GROUP BY attach_handle_id '
        'HAVING COUNT(*) > 1',
    'Bound ARQ without a handle in use':
        'SELECT a.uuid FROM accelerator_requests a LEFT JOIN '
        'attach_handles h ON a.attach_handle_id = h.id WHERE '
        "a.state = 'Bound' AND (h.id IS NULL OR NOT h.in_use)",
    'handle in use without a Bound ARQ':
        'SELECT h.uuid FROM attach_handles h WHERE h.in_use AND '
        'NOT EXISTS (SELECT 1 FROM accelerator_requests a WHERE '
        "a.attach_handle_id = h.id AND a.state = 'Bound')",
    'ARQ not Bound holding a handle':
        'SELECT uuid FROM accelerator_requests WHERE '
        "attach_handle_id IS NOT NULL AND state != 'Bound'",
    'ARQ BindStarted':
        "SELECT uuid FROM accelerator_requests WHERE state = 'BindStarted'",
}


@reliability.slow
class TestPostgreSQLConcurrency(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer(wait=False))
        self.pg = self.useFixture(databases.PostgreSQLServer())
        self.dbname = 'accel_concurrency'
        url = self.pg.create_database(self.dbname)
        self.engine = sa.create_engine(url)
        self.addCleanup(self.engine.dispose)
        self.placement = self.useFixture(placement_fx.PlacementServer())
        self.nova = self.useFixture(nova_stub.NovaStub())
        self.placement.create_provider(HOST)
        sysfs = self.useFixture(fixtures.TempDir()).path
        rel_fixtures.write_many_gpus(sysfs, GPUS)
        self.rabbit.wait_ready()
        self.conf = accel_nodes.MultiNodeConf(
            url, self.rabbit.url, self.placement, self.nova,
            sysfs_root=sysfs, spec=rel_fixtures.MANY_GPUS_SPEC,
            api_workers=API_WORKERS)
        self.conf.db_sync(self.useFixture(fixtures.TempDir()).path)
        self.agent = self.useFixture(accel_nodes.AgentProcess(
            self.conf, HOST))
        self.apis = [self.useFixture(accel_nodes.ApiServer(
            self.conf, 'api%d' % (i + 1))) for i in range(API_PROCESSES)]
        self.agent.wait_started()

    def query(self, sql):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(sql)).fetchall()

    def problems(self):
        return [(name, rows) for name, rows in
                ((n, self.query(q)) for n, q in CONSISTENCY.items()) if rows]

    def logs(self):
        return '\n'.join('--- %s:\n%s' % (n, t[-4000:]) for n, t in
                         [('agent', self.agent.log_text())] +
                         [(a.name, a.log_text()) for a in self.apis])

    def test_parallel_binds_unbinds_deletes(self):
        api = self.apis[0]

        def reported():
            deps = api.request('GET', '/v2/deployables')['deployables']
            ok = [d for d in deps if d.get('rp_uuid')]
            return ok if len(ok) == GPUS else None
        deps = waiting.wait_for('%d deployables' % GPUS, reported, 60,
                                log=self.logs)
        rps = [d['rp_uuid'] for d in deps]
        api.request('POST', '/v2/device_profiles', [
            {'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]}],
            expect=(201,))
        instances = [str(uuid.uuid4()) for _ in range(INSTANCES)]

        lock = threading.Lock()
        pool = []               # ARQ UUIDs believed to exist
        statuses = collections.Counter()
        errors = []
        deadline = time.monotonic() + SECONDS

        def call(session, root, name, method, path, allowed, body=None):
            try:
                resp = session.request(method, root + path, json=body,
                                       headers=accel_fx.NOVA_HEADERS,
                                       timeout=CLIENT_TIMEOUT)
            except requests.RequestException as e:
                with lock:
                    statuses[(name, 'error')] += 1
                    errors.append((name, method, path, repr(e)))
                return None
            with lock:
                statuses[(name, resp.status_code)] += 1
                if resp.status_code not in allowed:
                    errors.append((name, method, path, resp.status_code,
                                   resp.text[:300]))
            return resp

        def pick(rnd, n):
            with lock:
                if not pool:
                    return []
                return rnd.sample(pool, min(n, len(pool)))

        def forget(uuids):
            with lock:
                for u in uuids:
                    if u in pool:
                        pool.remove(u)

        def worker(index):
            rnd = random.Random(index)
            root = self.apis[index % API_PROCESSES].root
            session = requests.Session()
            while time.monotonic() < deadline:
                with lock:
                    size = len(pool)
                op = rnd.choices(
                    ['create', 'bind', 'unbind', 'delete_arqs',
                     'delete_instance', 'show'],
                    [4 if size < 40 else 1, 5, 2, 2 if size < 40 else 4,
                     1, 1])[0]
                if op == 'create':
                    resp = call(session, root, op, 'POST',
                                '/v2/accelerator_requests', (201,),
                                {'device_profile_name': 'gpu'})
                    if resp is not None and resp.status_code == 201:
                        with lock:
                            pool.extend(a['uuid']
                                        for a in resp.json()['arqs'])
                elif op == 'bind':
                    arqs = pick(rnd, rnd.randint(1, 3))
                    if not arqs:
                        continue
                    instance = rnd.choice(instances)
                    body = {a: [
                        {'op': 'add', 'path': '/hostname', 'value': HOST},
                        {'op': 'add', 'path': '/device_rp_uuid',
                         'value': rnd.choice(rps)},
                        {'op': 'add', 'path': '/instance_uuid',
                         'value': instance}] for a in arqs}
                    call(session, root, op, 'PATCH',
                         '/v2/accelerator_requests', (202, 404, 409), body)
                elif op == 'unbind':
                    arqs = pick(rnd, rnd.randint(1, 2))
                    if not arqs:
                        continue
                    body = {a: [{'op': 'remove', 'path': p} for p in
                                ('/hostname', '/device_rp_uuid',
                                 '/instance_uuid')] for a in arqs}
                    call(session, root, op, 'PATCH',
                         '/v2/accelerator_requests', (202, 404, 409), body)
                elif op == 'delete_arqs':
                    arqs = pick(rnd, rnd.randint(1, 3))
                    if not arqs:
                        continue
                    # 404 (and nothing deleted) when another thread
                    # deleted one of them first: ?arqs= is not idempotent,
                    # as in Cyborg 17.
                    resp = call(session, root, op, 'DELETE',
                                '/v2/accelerator_requests?arqs=' +
                                ','.join(arqs), (204, 404))
                    if resp is not None and resp.status_code == 204:
                        forget(arqs)
                elif op == 'delete_instance':
                    call(session, root, op, 'DELETE',
                         '/v2/accelerator_requests?instance=' +
                         rnd.choice(instances), (204,))
                    # The pool learns of these deletes from 404s.
                else:
                    arqs = pick(rnd, 1)
                    if not arqs:
                        continue
                    resp = call(session, root, op, 'GET',
                                '/v2/accelerator_requests/' + arqs[0],
                                (200, 404))
                    if resp is not None and resp.status_code == 404:
                        forget(arqs)

        elapsed, threads = waiting.run_threads(
            worker, [(i,) for i in range(THREADS)],
            SECONDS + 4 * CLIENT_TIMEOUT)
        self.assertEqual([], [t.name for t in threads if t.is_alive()])
        total = sum(statuses.values())
        self.addDetail('statuses', content.text_content('\n'.join(
            '%s %s: %d' % (k[0], k[1], v)
            for k, v in sorted(statuses.items(), key=str))))

        # The agent finishes what was accepted: nothing stays BindStarted.
        waiting.wait_for('no ARQ BindStarted', lambda: not self.query(
            CONSISTENCY['ARQ BindStarted']), 60, log=self.logs)
        time.sleep(2)
        states = dict(self.query(
            'SELECT state, COUNT(*) FROM accelerator_requests '
            'GROUP BY state'))
        problems = self.problems()
        deadlocks = self.query(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = '%s'"
            % self.dbname)[0][0]
        pg_log = self.pg.log_text()
        log_deadlocks = pg_log.count('deadlock detected')
        server_errors = sum(v for (n, s), v in statuses.items()
                            if isinstance(s, int) and s >= 500)
        tracebacks = sum(a.log_text().count('Traceback') for a in self.apis)
        figures = {
            'requests': total, 'threads': THREADS,
            'api_processes': API_PROCESSES, 'api_workers': API_WORKERS,
            'gpus': GPUS, 'seconds': round(elapsed, 1),
            'requests_per_s': round(total / elapsed, 1),
            'outcomes': {'%s %s' % k: v for k, v in
                         sorted(statuses.items(), key=str)},
            'server_errors': server_errors,
            'client_errors': len([e for e in errors if len(e) == 4]),
            'final_arq_states': states,
            'handles_in_use': self.query(
                'SELECT COUNT(*) FROM attach_handles WHERE in_use')[0][0],
            'pg_deadlocks': deadlocks, 'pg_log_deadlocks': log_deadlocks,
            'api_tracebacks': tracebacks,
        }
        self.addDetail('figures', content.json_content(figures))
        test_crash.record_result('pg_concurrency', figures)
        self.assertEqual([], errors[:20], self.logs())
        self.assertEqual([], problems)
        self.assertEqual((0, 0), (deadlocks, log_deadlocks), pg_log[-4000:])
        self.assertEqual(0, tracebacks, self.logs())
        self.assertGreater(statuses[('bind', 202)], 0)

        # Deleting everything gives every device back.
        for instance in instances:
            api.request('DELETE', '/v2/accelerator_requests?instance=' +
                        instance, expect=(204,))
        left = [a['uuid'] for a in api.request(
            'GET', '/v2/accelerator_requests')['arqs']]
        if left:
            api.request('DELETE', '/v2/accelerator_requests?arqs=' +
                        ','.join(left), expect=(204,))
        waiting.wait_for('all handles available', lambda: self.query(
            "SELECT COUNT(*) FROM attach_handles WHERE in_use OR "
            "state != 'available'")[0][0] == 0, 60, log=self.logs)
