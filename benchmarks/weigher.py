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

"""Measure 6: the scheduler weigher against the request's own
allocation-candidates call, at 10, 100, 1,000 and 5,000 hosts.

    python -m benchmarks.weigher [--hosts 10,100,1000,5000] [--samples 30]

A real Placement (gunicorn, SQLite, noauth2) holds ``N`` compute nodes
(VCPU 64, MEMORY_MB 262144, DISK_GB 2000), each with 8 accelerator
providers (``PGPU`` 1, trait ``OWNER_CYBORG``), 3 of the 8 allocated.  The
trees are written straight into Placement's database (tables reflected
from Placement's own schema after ``placement-manage db sync``; through
the API the 5,000-host cloud takes minutes to build) and checked through
the API before measuring.

Per size, interleaved, ``samples`` times each:

- ``a_c``: the scheduling request's own ``GET /allocation_candidates``
  for a plain server (``VCPU:1,MEMORY_MB:512``, ``limit=1000`` as Nova's
  ``[scheduler] max_placement_results``), microversion 1.36;
- ``weigh``: ``AcceleratorHostReservationWeigher.weigh_objects`` over the
  candidate hosts of that answer (up to 1,000), what the request pays;
- ``read``: one read of the weigher's view (``AcceleratorCapacityView
  .refresh``), paid by the scheduler's thread every ``[nova_accel]
  accelerator_weigher_refresh_interval`` seconds, off the request path.

Prints p50/p95 (ms) with the sample count, and the ratios weigh / a_c and
read / a_c measured in the same run.
"""

import argparse
import os
import random
import sys
import tempfile
import time
import types
import uuid

import requests
import sqlalchemy as sa

from benchmarks import common
from tools import fixtures as tools_fixtures
from tools.fixtures import placement as placement_fx

ACCELS_PER_HOST, USED_PER_HOST = 8, 3
SIZES = (10, 100, 1000, 5000)
A_C = ('/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'
       '&limit=1000')


class _Resp:
    def __init__(self, r):
        self.status_code, self.text, self._r = r.status_code, r.text, r

    def json(self):
        return self._r.json()


class PlacementGetter:
    """Nova's report client ``get`` over ``requests`` (noauth2 admin).

    :param url: Placement's endpoint (str).
    """

    def __init__(self, url):
        self.url = url
        self.session = requests.Session()
        self.session.headers.update({'x-auth-token': 'admin'})

    def get(self, path, version=None, global_request_id=None):
        """:returns: a response with ``status_code``, ``text``, ``json()``."""
        return _Resp(self.session.get(self.url + path, headers={
            'OpenStack-API-Version': 'placement %s' % version}))


def populate(db_path, hosts, rng, traits=('OWNER_CYBORG',)):
    """Write ``hosts`` compute trees into Placement's SQLite database
    (empty: the rows get ids from 1).

    :param db_path: path of Placement's database (str), schema at head.
    :param hosts: number of compute nodes (int).
    :param rng: ``random.Random`` choosing which accelerators are used.
    :param traits: the traits of every accelerator provider (names;
        created when missing, custom ones included).
    :returns: list of compute node provider UUIDs (str).
    """
    import os_resource_classes as orc
    engine = sa.create_engine('sqlite:///%s' % db_path)
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    rc_id = {name: i for i, name in enumerate(orc.STANDARDS)}
    now = common_now()
    roots = []
    with engine.begin() as conn:
        conn.execute(t['traits'].insert().prefix_with('OR IGNORE'),
                     [{'name': name, 'created_at': now} for name in traits])
        trait_ids = list(conn.scalars(sa.select(t['traits'].c.id).where(
            t['traits'].c.name.in_(traits))))
        conn.execute(t['projects'].insert(),
                     [{'id': 1, 'external_id': 'bench', 'created_at': now}])
        conn.execute(t['users'].insert(),
                     [{'id': 1, 'external_id': 'bench', 'created_at': now}])
        next_id = 1
        rps, invs, rp_traits, consumers, allocs = [], [], [], [], []
        for h in range(hosts):
            root = next_id
            root_uuid = str(uuid.uuid4())
            roots.append(root_uuid)
            rps.append(dict(id=root, uuid=root_uuid, name='node-%05d' % h,
                            generation=1, root_provider_id=root,
                            parent_provider_id=None, created_at=now))
            for rc, total in (('VCPU', 64), ('MEMORY_MB', 262144),
                              ('DISK_GB', 2000)):
                invs.append(dict(
                    resource_provider_id=root, resource_class_id=rc_id[rc],
                    total=total, reserved=0, min_unit=1, max_unit=total,
                    step_size=1, allocation_ratio=1.0, created_at=now))
            used = set(rng.sample(range(ACCELS_PER_HOST), USED_PER_HOST))
            for d in range(ACCELS_PER_HOST):
                next_id += 1
                rps.append(dict(
                    id=next_id, uuid=str(uuid.uuid4()),
                    name='node-%05d_0000:%02x:00.0' % (h, d + 0x10),
                    generation=1, root_provider_id=root,
                    parent_provider_id=root, created_at=now))
                invs.append(dict(
                    resource_provider_id=next_id,
                    resource_class_id=rc_id['PGPU'], total=1, reserved=0,
                    min_unit=1, max_unit=1, step_size=1,
                    allocation_ratio=1.0, created_at=now))
                rp_traits.extend(dict(resource_provider_id=next_id,
                                      trait_id=trait_id, created_at=now)
                                 for trait_id in trait_ids)
                if d in used:
                    consumer = str(uuid.uuid4())
                    consumers.append(dict(uuid=consumer, project_id=1,
                                          user_id=1, generation=1,
                                          created_at=now))
                    allocs.append(dict(
                        resource_provider_id=next_id, consumer_id=consumer,
                        resource_class_id=rc_id['PGPU'], used=1,
                        created_at=now))
            next_id += 1
        for table, rows in (('resource_providers', rps),
                            ('inventories', invs),
                            ('resource_provider_traits', rp_traits),
                            ('consumers', consumers),
                            ('allocations', allocs)):
            if rows:
                conn.execute(t[table].insert(), rows)
    engine.dispose()
    return roots


def common_now():
    """UTC now without tzinfo, as Placement stores timestamps."""
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)


def _hosts(a_c_body):
    """HostState-like objects for the roots of an a_c answer."""
    summaries = a_c_body['provider_summaries']
    return [types.SimpleNamespace(uuid=u, host=u, nodename=u,
                                  aggregates=[])
            for u, s in summaries.items()
            if s.get('parent_provider_uuid') is None]


def measure_size(placement, weigher, hosts, samples, log):
    """Interleaved samples at one cloud size.

    :returns: ``{'hosts', 'candidates', 'a_c', 'weigh', 'read'}`` with
        the last three ``common.summary`` dicts (seconds).
    """
    from nova.scheduler import weights as nova_weights
    getter = weigher.view.counter.client
    spec = types.SimpleNamespace(
        flavor=types.SimpleNamespace(extra_specs={}),
        _context=types.SimpleNamespace(global_id=None))
    times = {'a_c': [], 'weigh': [], 'read': []}
    weigher.view.refresh()   # the view as the thread keeps it
    candidates = 0
    for _ in range(samples):
        t0 = time.perf_counter()
        r = getter.get(A_C, version='1.36')
        times['a_c'].append(time.perf_counter() - t0)
        assert r.status_code == 200, r.text
        objs = [nova_weights.WeighedHost(h, 0.0) for h in _hosts(r.json())]
        candidates = len(objs)
        t0 = time.perf_counter()
        weights = weigher.weigh_objects(objs, spec)
        times['weigh'].append(time.perf_counter() - t0)
        assert set(weights) == {-5.0}, set(weights)
        t0 = time.perf_counter()
        assert weigher.view.refresh()
        times['read'].append(time.perf_counter() - t0)
    out = {'hosts': hosts, 'candidates': candidates, 'samples': samples}
    out.update({k: common.summary(v) for k, v in times.items()})
    log('%5d hosts: a_c p50 %.1f ms, weigh p50 %.3f ms, read p50 %.1f ms'
        % (hosts, out['a_c']['p50'], out['weigh']['p50'],
           out['read']['p50']))
    return out


def measure(env, sizes=SIZES, samples=30):
    """Measure 6 for each size in ``sizes`` (a fresh Placement each).

    :param env: ``benchmarks.run.Env`` (``workdir``, ``log``).
    :returns: ``{'sizes': [measure_size() results]}``.
    """
    from nova_accel.scheduler import weighers
    results = []
    rng = random.Random(6)
    for n in sizes:
        work = os.path.join(env.workdir, 'weigher-%d' % n)
        placement = tools_fixtures.start(placement_fx.PlacementServer(work))
        try:
            placement.request('GET', '/traits?name=in:OWNER_CYBORG')
            populate(placement.database, n, rng)
            got = placement.request(
                'GET', '/resource_providers?required=OWNER_CYBORG')
            assert len(got['resource_providers']) == n * ACCELS_PER_HOST
            weigher = weighers.AcceleratorHostReservationWeigher(
                client=PlacementGetter(placement.endpoint))
            results.append(measure_size(placement, weigher, n, samples,
                                        env.log))
            weigher.view.stop()
        finally:
            placement.cleanUp()
    return {'sizes': results}


def table(res):
    """Markdown table of ``measure``'s result (str)."""
    lines = ['| hosts | candidates | samples | a_c p50 / p95 ms | '
             'weigh p50 / p95 ms | weigh / a_c | read (off path) p50 ms | '
             'read / a_c |', '|---|---|---|---|---|---|---|---|']
    for r in res['sizes']:
        ac, w, rd = r['a_c'], r['weigh'], r['read']
        lines.append('| %d | %d | %d | %.1f / %.1f | %.3f / %.3f | %.4f | '
                     '%.1f | %.2f |' % (
                         r['hosts'], r['candidates'], r['samples'],
                         ac['p50'], ac['p95'],
                         w['p50'], w['p95'],
                         w['p50'] / ac['p50'], rd['p50'],
                         rd['p50'] / ac['p50']))
    return '\n'.join(lines)


def main(argv=None):
    """Command line entry: prints the table; exit status 0."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--hosts', default=','.join(map(str, SIZES)))
    p.add_argument('--samples', type=int, default=30)
    args = p.parse_args(argv)
    t0 = time.monotonic()

    def log(msg):
        print('[%6.1fs] %s' % (time.monotonic() - t0, msg),
              file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as work:
        env = types.SimpleNamespace(workdir=work, log=log)
        res = measure(env, [int(x) for x in args.hosts.split(',')],
                      args.samples)
    print(table(res))
    return 0


if __name__ == '__main__':
    sys.exit(main())
