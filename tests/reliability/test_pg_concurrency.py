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

"""Concurrent binds, unbinds and deletes on PostgreSQL, in both
deployments:

``TestPostgreSQLConcurrency``
    RabbitMQ, one ``accel-backend-agent`` (host ``node1``, 8 generated
    GPUs, no database credentials), one ``accel-backend-conductor`` and
    two ``accel-backend-api`` processes (``[api] workers = 8`` each) on
    the shared database: the API commits ``BindStarted`` and the conductor
    binds in transactions of its own.
``TestPostgreSQLConcurrencyEmbedded``
    one embedded ``accel-backend`` (host ``node1``, the same 8 GPUs,
    ``[api] workers = 8``, ``[binding] mode = inline``): each bind PATCH
    binds its ARQs in its own transaction, run again after a deadlock.
    A reader polling the database during the run (every 50 ms) must
    never see an ARQ ``BindStarted``: it is committed together with the
    outcome.  (With the conductor it is routinely seen: a figure only.)

Both also start a throwaway PostgreSQL, Placement and a Nova stub.  16
client threads, spread over the API processes, each with its own
``requests.Session``, send for ``ACCEL_CONCURRENCY_SECONDS`` (25) the
random mix of ``tests.reliability.arq_mix`` on a shared pool of ARQs and
6 shared instances, so many requests contend for the same ARQ rows and
the same devices.  Accepted answers: the intended one, or 404/409 where
another thread got there first.  Checked: no 5xx, no other status, every
request answered (client timeout 60 s: none means no deadlock hung a
worker); once binding is idle no ARQ is left ``BindStarted``, no attach
handle is held by two ARQs, no Bound ARQ lacks a handle in use, no handle
is in use without a Bound ARQ, no ARQ that is not Bound holds a handle;
PostgreSQL counted no deadlock (``pg_stat_database.deadlocks`` and its
log), so no PATCH was run again for one either; no traceback in the
servers' logs.  After deleting everything all handles come back free.
"""

import os
import threading
import time
import uuid

import fixtures
import sqlalchemy as sa
import testtools
from testtools import content

from tests.functional.fixtures import accel_nodes
from tests import reliability
from tests.reliability import arq_mix
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


class ConcurrencyTest:
    """The test and its checks; a subclass (also a ``TestCase``) starts
    the servers in ``start_servers`` and sets:

    ``roots``
        the API base URLs the client threads spread over (list).
    ``api``
        an ``AccelBackendServer`` to call for set-up and tear-down.
    ``log_sources``
        ``[(name, callable returning the log text)]`` of every server
        process: attached on failure, searched for tracebacks.
    ``RESULT``
        the name ``record_result`` files the figures under;
        ``deployment`` the figures' extra entries (dict).
    ``BIND_STARTED_COMMITTED``
        whether ``BindStarted`` is committed on its own (the agent binds
        in a later transaction); if not, no reader may ever see it.
    """

    RESULT = None
    deployment = {}
    BIND_STARTED_COMMITTED = True
    #: Seconds between two reads of the BindStarted count during the run.
    SAMPLE_INTERVAL = 0.05

    def setUp(self):
        super().setUp()
        self.start_early()
        self.pg = self.useFixture(databases.PostgreSQLServer())
        self.dbname = 'accel_concurrency'
        self.url = self.pg.create_database(self.dbname)
        self.engine = sa.create_engine(self.url)
        self.addCleanup(self.engine.dispose)
        self.placement = self.useFixture(placement_fx.PlacementServer())
        self.nova = self.useFixture(nova_stub.NovaStub())
        self.placement.create_provider(HOST)
        self.sysfs = self.useFixture(fixtures.TempDir()).path
        rel_fixtures.write_many_gpus(self.sysfs, GPUS)
        self.start_servers()

    def start_early(self):
        """Start what takes long before the rest (optional)."""

    def start_servers(self):
        """Start the accel_backend processes on ``self.url`` and set
        ``roots``, ``api`` and ``log_sources``."""
        raise NotImplementedError

    def query(self, sql):
        with self.engine.connect() as conn:
            return conn.execute(sa.text(sql)).fetchall()

    def problems(self):
        return [(name, rows) for name, rows in
                ((n, self.query(q)) for n, q in CONSISTENCY.items()) if rows]

    def logs(self):
        return '\n'.join('--- %s:\n%s' % (name, text()[-4000:])
                         for name, text in self.log_sources)

    def sample_bind_started(self, stop, samples):
        """Append the count of ``BindStarted`` ARQs to ``samples`` every
        ``SAMPLE_INTERVAL`` seconds until ``stop`` is set."""
        with self.engine.connect() as conn:
            while not stop.wait(self.SAMPLE_INTERVAL):
                samples.append(conn.execute(sa.text(
                    'SELECT COUNT(*) FROM accelerator_requests WHERE '
                    "state = 'BindStarted'")).scalar())
                conn.rollback()

    def test_parallel_binds_unbinds_deletes(self):
        mix, instances, elapsed, samples = self._run_mix()
        statuses = mix.statuses
        total = sum(statuses.values())
        self.addDetail('statuses', content.text_content('\n'.join(
            '%s %s: %d' % (k[0], k[1], v)
            for k, v in sorted(statuses.items(), key=str))))

        # Binding finishes what was accepted: nothing stays BindStarted
        # (the agent's transactions; embedded, the PATCH's own).
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
        tracebacks = sum(text().count('Traceback')
                         for _, text in self.log_sources)
        figures = dict(self.deployment, **{
            'requests': total, 'threads': THREADS,
            'api_workers': API_WORKERS,
            'gpus': GPUS, 'seconds': round(elapsed, 1),
            'requests_per_s': round(total / elapsed, 1),
            'outcomes': {'%s %s' % k: v for k, v in
                         sorted(statuses.items(), key=str)},
            'server_errors': mix.server_errors(),
            'client_errors': mix.unanswered(),
            'final_arq_states': states,
            'handles_in_use': self.query(
                'SELECT COUNT(*) FROM attach_handles WHERE in_use')[0][0],
            'pg_deadlocks': deadlocks, 'pg_log_deadlocks': log_deadlocks,
            'server_tracebacks': tracebacks,
            'bind_started_reads': len(samples),
            'bind_started_seen': len([n for n in samples if n]),
        })
        self.addDetail('figures', content.json_content(figures))
        test_crash.record_result(self.RESULT, figures)
        self.assertEqual([], mix.errors[:20], self.logs())
        self.assertEqual([], problems)
        self.assertEqual((0, 0), (deadlocks, log_deadlocks), pg_log[-4000:])
        self.assertEqual(0, tracebacks, self.logs())
        self.assertGreater(statuses[('bind', 202)], 0)
        if not self.BIND_STARTED_COMMITTED:
            self.assertEqual(0, figures['bind_started_seen'],
                             'reads that saw ARQs BindStarted, of %d' %
                             len(samples))

        self._delete_everything(instances)

    def _run_mix(self):
        """Wait for the GPUs, then run ``arq_mix`` from ``THREADS``
        threads for ``SECONDS`` while a thread reads how many ARQs are
        ``BindStarted``.

        :returns: ``(mix, instances, elapsed seconds, BindStarted counts
            read)``.
        """
        def reported():
            deps = self.api.request('GET', '/v2/deployables')['deployables']
            ok = [d for d in deps if d.get('rp_uuid')]
            return ok if len(ok) == GPUS else None
        deps = waiting.wait_for('%d deployables' % GPUS, reported, 60,
                                log=self.logs)
        self.api.request('POST', '/v2/device_profiles', [
            {'name': 'gpu', 'groups': [{'resources:PGPU': '1'}]}],
            expect=(201,))
        instances = [str(uuid.uuid4()) for _ in range(INSTANCES)]
        mix = arq_mix.Mix(self.roots, HOST, [d['rp_uuid'] for d in deps],
                          instances, SECONDS, CLIENT_TIMEOUT)
        stop = threading.Event()
        samples = []            # BindStarted ARQs, each read
        sampler = threading.Thread(target=self.sample_bind_started,
                                   args=(stop, samples))
        sampler.start()
        try:
            elapsed, alive = mix.run(THREADS)
        finally:
            stop.set()
            sampler.join()
        self.assertEqual([], alive)
        return mix, instances, elapsed, samples

    def _delete_everything(self, instances):
        """Delete every ARQ (by instance, then what is left): every
        device is given back."""
        for instance in instances:
            self.api.request('DELETE', arq_mix.ARQS + '?instance=' +
                             instance, expect=(204,))
        left = [a['uuid'] for a in self.api.request(
            'GET', arq_mix.ARQS)['arqs']]
        if left:
            self.api.request('DELETE', arq_mix.ARQS + '?arqs=' +
                             ','.join(left), expect=(204,))
        waiting.wait_for('all handles available', lambda: self.query(
            "SELECT COUNT(*) FROM attach_handles WHERE in_use OR "
            "state != 'available'")[0][0] == 0, 60, log=self.logs)


@reliability.slow
class TestPostgreSQLConcurrency(ConcurrencyTest, testtools.TestCase):
    """API + conductor + agent: two ``accel-backend-api`` (8 client
    threads each), one ``accel-backend-conductor`` and one
    ``accel-backend-agent`` over RabbitMQ."""

    RESULT = 'pg_concurrency'
    deployment = {'deployment': 'api+conductor+agent', 'api_processes': 2}

    def start_early(self):
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer(wait=False))

    def start_servers(self):
        self.rabbit.wait_ready()
        conf = accel_nodes.MultiNodeConf(
            self.url, self.rabbit.url, self.placement, self.nova,
            sysfs_root=self.sysfs, spec=rel_fixtures.MANY_GPUS_SPEC,
            api_workers=API_WORKERS)
        conf.db_sync(self.useFixture(fixtures.TempDir()).path)
        conductor = self.useFixture(accel_nodes.ConductorProcess(
            conf, 'conductor1'))
        conductor.wait_started()
        agent = self.useFixture(accel_nodes.AgentProcess(conf, HOST))
        apis = [self.useFixture(accel_nodes.ApiServer(
            conf, 'api%d' % (i + 1))) for i in range(2)]
        conductor.wait_started()
        agent.wait_started()
        self.api = apis[0]
        self.roots = [a.root for a in apis]
        self.log_sources = [('agent', agent.log_text),
                            ('conductor', conductor.log_text)] + [
            (a.name, a.log_text) for a in apis]


@reliability.slow
class TestPostgreSQLConcurrencyEmbedded(ConcurrencyTest, testtools.TestCase):
    """One embedded ``accel-backend`` (``[binding] mode = inline``: each
    bind PATCH binds in its own transaction); all 16 client threads call
    it."""

    RESULT = 'pg_concurrency_embedded'
    # BindStarted, the claim and the outcome are one commit.
    BIND_STARTED_COMMITTED = False
    deployment = {'deployment': 'embedded', 'api_processes': 1}

    def start_servers(self):
        server = self.useFixture(accel_fx.AccelBackendServer(
            self.placement.endpoint, self.nova.endpoint, self.sysfs,
            [rel_fixtures.MANY_GPUS_SPEC], host=HOST, connection=self.url,
            options={'api': {'workers': API_WORKERS},
                     'binding': {'mode': 'inline'},
                     'cleaning': {'poll_interval': 1},
                     'nova': {'event_retry_timeout': 20}}))
        # Called as Nova calls it: deleting Bound ARQs needs the token.
        server.SERVICE_TOKEN = True
        self.api = server
        self.roots = [server.root]
        self.log_sources = [('accel-backend', server.log_text)]
