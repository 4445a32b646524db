"""Measure 2: ARQ round trip over HTTP on loopback.

A real ``accel-backend`` process (cheroot) over a recorded sysfs tree of
128 GPUs, reporting to a real Placement server, posting its events to the
Nova stub.  One trial: ``POST /v2/accelerator_requests`` for a profile
asking for N GPUs (N ARQs), one ``PATCH`` binding all N to distinct
devices, then wait until the stub has received the event of every ARQ;
the clock stops at the last event's arrival.  The ARQs are then deleted
by instance (not timed).

Floor, measured in the same run against the same server: one bare HTTP
round trip (``GET /v2``) plus one commit (INSERT + COMMIT) on the same kind
of database.
"""

import os
import time
import uuid

import sqlalchemy as sa

from benchmarks import common
from tools import fixtures as tools_fixtures
from tools.fixtures import databases

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
    client.bind({a['uuid']: (host, rps[i], instance)
                 for i, a in enumerate(arqs)})
    seen = stub.wait_tags([a['uuid'] for a in arqs], since=mark)
    dt = max(t for t, _ in seen.values()) - t0
    bad = [ev for _, ev in seen.values() if ev.get('status') != 'completed']
    client.delete_instance(instance)
    if bad:
        raise RuntimeError('binding failed: %s' % bad[:3])
    return dt, len(arqs)


def measure_backend(env, label, connection, floor_factory):
    """Round trips for every N on one database; returns a result dict."""
    devices = QUICK_DEVICES if env.quick else DEVICES
    sizes = QUICK_SIZES if env.quick else SIZES
    sysfs = os.path.join(env.workdir, 'sysfs-%d' % devices)
    if not os.path.isdir(sysfs):
        common.make_sysfs(sysfs, devices)
    backend = common.accel_backend(
        env.workdir, env.placement, env.stub, 'rt-%s' % label, sysfs,
        devices, connection=connection)
    try:
        client = common.AccelClient(backend.root)
        rps = sorted(d['rp_uuid'] for d in client.deployables())
        trials = QUICK_TRIALS if env.quick else TRIALS
        out = {'sizes': {}, 'devices': devices}
        for n in sizes:
            client.create_profile('rt-gpu-x%d' % n,
                                  [{'resources:PGPU': str(n)}])
            _trial(client, env.stub, backend.host, rps, 'rt-gpu-x%d' % n)
            samples = []
            for _ in range(trials[n]):
                dt, count = _trial(client, env.stub, backend.host, rps,
                                   'rt-gpu-x%d' % n)
                assert count == n, (count, n)
                samples.append(dt)
            out['sizes'][n] = common.summary(samples)
            env.log('  %s N=%d: p50 %.1f ms' % (label, n,
                                                 out['sizes'][n]['p50']))
        floor = floor_factory()
        http_s, commit_s, both = [], [], []
        for _ in range(FLOOR_SAMPLES):
            h, _ = client.call('GET', '/v2')
            c = floor.once()
            http_s.append(h)
            commit_s.append(c)
            both.append(h + c)
        floor.close()
        out['floor'] = common.summary(both)
        out['floor_http'] = common.summary(http_s)
        out['floor_commit'] = common.summary(commit_s)
        for n in sizes:
            s = out['sizes'][n]
            s['ratio_p50_to_floor'] = common.ratio(s['p50'],
                                                   out['floor']['p50'])
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
