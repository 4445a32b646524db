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

"""Measure 2: ARQ round trip over HTTP on loopback.

A real ``accel-backend`` process (cheroot) over a recorded sysfs tree of
128 GPUs, reporting to a real Placement server, posting its events to the
Nova stub.  One trial: ``POST /v2/accelerator_requests`` for a profile
asking for N GPUs (N ARQs), one ``PATCH`` binding all N to distinct
devices, then wait until the stub has received the event of every ARQ;
the clock stops at the last event's arrival.  Two paths are timed in each
trial: ``create_bind_event`` (from the POST) and ``patch_to_event`` (from
the PATCH).  The ARQs are then deleted by instance (not timed).

Floor of each path, measured in the same run against the same server and
the same kind of database: its HTTP exchanges times one ``GET /v2`` round
trip plus its commits times one INSERT + COMMIT (``benchmarks.stats.PATHS``
counts them: create + bind + event is 3 HTTP + 3 commits, PATCH -> event 2
+ 2, whatever N, since one PATCH binds all N in one transaction).
"""

import os
import time
import uuid

import sqlalchemy as sa

from benchmarks import common
from benchmarks import stats
from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import databases
from tools.fixtures import sysfs as sysfs_fx

SIZES = (1, 10, 100)
TRIALS = {1: 100, 10: 40, 100: 12}
DEVICES = 128
# --quick: 16 GPUs (reporting 128 to Placement alone takes ~25 s here),
# so at most 10 ARQs at once.
QUICK_SIZES = (1, 10)
QUICK_TRIALS = {1: 20, 10: 6}
QUICK_DEVICES = 16
FLOOR_SAMPLES = 200


def _trial(client, stub, host, rps, profile):
    instance = str(uuid.uuid4())
    mark = stub.mark()
    t0 = time.perf_counter()
    _, arqs = client.create_arqs(profile)
    t_patch = time.perf_counter()
    client.bind({a['uuid']: (host, rps[i], instance)
                 for i, a in enumerate(arqs)})
    seen = stub.wait_tags([a['uuid'] for a in arqs], since=mark)
    last = max(t for t, _ in seen.values())
    bad = [ev for _, ev in seen.values() if ev.get('status') != 'completed']
    client.delete_instance(instance)
    if bad:
        raise RuntimeError('binding failed: %s' % bad[:3])
    return {'create_bind_event': last - t0,
            'patch_to_event': last - t_patch}, len(arqs)


def measure_backend(env, label, connection, floor_factory):
    """Round trips for every N on one database; returns a result dict."""
    devices = QUICK_DEVICES if env.quick else DEVICES
    sizes = QUICK_SIZES if env.quick else SIZES
    sysfs = os.path.join(env.workdir, 'sysfs-%d' % devices)
    if not os.path.isdir(sysfs):
        sysfs_fx.make_sysfs(sysfs, devices)
    backend = accel_fx.start_reporting(
        env.workdir, env.placement, env.stub, 'rt-%s' % label, sysfs,
        devices, connection=connection)
    try:
        client = accel_client.AccelClient(backend.root)
        rps = sorted(d['rp_uuid'] for d in client.deployables())
        trials = QUICK_TRIALS if env.quick else TRIALS
        out = {'sizes': {}, 'devices': devices, 'patch_to_event': {}}
        for n in sizes:
            client.create_profile('rt-gpu-x%d' % n,
                                  [{'resources:PGPU': str(n)}])
            _trial(client, env.stub, backend.host, rps, 'rt-gpu-x%d' % n)
            samples = {'create_bind_event': [], 'patch_to_event': []}
            for _ in range(trials[n]):
                dts, count = _trial(client, env.stub, backend.host, rps,
                                    'rt-gpu-x%d' % n)
                assert count == n, (count, n)
                for k, v in dts.items():
                    samples[k].append(v)
            out['sizes'][n] = common.summary(samples['create_bind_event'])
            out['patch_to_event'][n] = common.summary(
                samples['patch_to_event'])
            env.log('  %s N=%d: p50 %.1f ms (PATCH -> event %.1f ms)' % (
                label, n, out['sizes'][n]['p50'],
                out['patch_to_event'][n]['p50']))
        floor = floor_factory()
        try:
            prim = common.primitives(client, floor, FLOOR_SAMPLES)
        finally:
            floor.close()
        out['floor_http'], out['floor_commit'] = prim['http'], prim['commit']
        out['floors'] = {
            path: stats.path_floor(path, prim['http']['p50'],
                                   prim['commit']['p50'])
            for path in ('create_bind_event', 'patch_to_event')}
        for n in sizes:
            for path, s in (('create_bind_event', out['sizes'][n]),
                            ('patch_to_event', out['patch_to_event'][n])):
                s['ratio_p50_to_floor'] = common.ratio(
                    s['p50'], out['floors'][path]['ms'])
        return out
    finally:
        backend.cleanUp()


class PostgresCommitFloor:
    """One INSERT + COMMIT on the PostgreSQL database at ``url`` (a
    SQLAlchemy URL), straight through psycopg2."""

    def __init__(self, url):
        import psycopg2
        u = sa.engine.make_url(url)
        self.conn = psycopg2.connect(host=u.host, port=u.port,
                                     user=u.username, dbname=u.database)
        cur = self.conn.cursor()
        cur.execute('CREATE TABLE IF NOT EXISTS floor_t (id SERIAL PRIMARY '
                    'KEY, v TEXT)')
        self.conn.commit()

    def once(self):
        """One INSERT + COMMIT; returns its seconds."""
        t0 = time.perf_counter()
        cur = self.conn.cursor()
        cur.execute('INSERT INTO floor_t (v) VALUES (%s)',
                    (str(uuid.uuid4()),))
        self.conn.commit()
        return time.perf_counter() - t0

    def close(self):
        self.conn.close()


def measure(env):
    results = {}
    results['sqlite'] = measure_backend(
        env, 'sqlite', None,
        lambda: common.SQLiteCommitFloor(
            os.path.join(env.workdir, 'floor.sqlite')))
    server = None
    try:
        server = tools_fixtures.start(databases.PostgreSQLServer(
            durable=True))
        env.versions['postgresql'] = server.server_version()
        conn = server.create_database('accel_rt')
        floor = server.create_database('floor')
        results['postgresql'] = measure_backend(
            env, 'postgresql', conn, lambda: PostgresCommitFloor(floor))
    except Exception as e:
        results['postgresql'] = {'not_measured': 'failed: %s' % e}
    finally:
        if server is not None:
            server.cleanUp()
    return results
