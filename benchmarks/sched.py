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

"""Measure 8: scheduling cost against the GPUs one request asks for.

    python -m benchmarks.run --only sched [--quick]

Clouds of 1, 100 and 1,000 hosts (1 and 100 with ``--quick``) of 8 GPUs
each, every host a compute node provider (VCPU 64, MEMORY_MB 262144,
DISK_GB 2000, trait ``COMPUTE_ACCELERATORS``) with its GPUs laid out as
one of ``LAYOUTS``:

- ``per_device``: 8 child providers of ``PGPU`` total 1 (one per device,
  as accel_backend reports them today);
- ``pooled``: 1 child provider of ``PGPU`` total 8;
- ``pooled_numa``: 2 child providers of ``PGPU`` total 4, one per NUMA
  node (``CUSTOM_NUMA_NODE_0`` / ``_1``).

Every GPU provider has ``OWNER_CYBORG`` and the product trait
``CUSTOM_NVIDIA_T4``; nothing is allocated.  Each layout of a size lives on
a real Placement of its own (``tools.fixtures.placement``), its rows
written straight into Placement's database as ``benchmarks.weigher``
does, and checked through the API.

The request is Nova 34's ``GET /allocation_candidates`` (microversion
1.36) for a flavor ``VCPU:1,MEMORY_MB:512`` with a device profile asking
for N GPUs (``DEVICE_PROFILES``): each device profile group becomes a
request group through ``nova_accel.cyborg_client.request_groups`` and
Nova's ``RequestGroup.to_queryparams`` (suffix ``device_profile_<i>``),
plus what Nova's scheduler adds (``nova/scheduler/utils.py``
``ResourceRequest.to_querystring`` and ``nova/scheduler/request_filter.py``
of Nova 34): ``limit`` (``[scheduler] max_placement_results``, 1000),
``root_required=COMPUTE_ACCELERATORS,!COMPUTE_STATUS_DISABLED`` and, with
two groups or more, ``group_policy=isolate`` (from the flavor).

The cells (layout, N) of a size take turns sample by sample after one
uncounted warm-up each.  A request has ``TIMEOUT`` seconds: one that takes
longer is recorded as ``timeout``, the layout's larger N are skipped at
that size and every larger size, and its Placement is killed (it
would go on computing the abandoned answer) and started afresh.  A cell
stops sampling once its samples took ``CELL_BUDGET`` seconds (3 at
least).
"""

import os
import time
import urllib.parse
import uuid

import os_resource_classes as orc
import requests
import sqlalchemy as sa

from benchmarks import common
from benchmarks import weigher
from nova_accel.cyborg_client import request_groups
from tools import fixtures as tools_fixtures
from tools.fixtures import placement as placement_fx
from tools.launch import placement as launch_placement

GPUS_PER_HOST = 8
SIZES, QUICK_SIZES = (1, 100, 1000), (1, 100)
GPUS = (1, 2, 4, 8)
LAYOUTS = ('per_device', 'pooled', 'pooled_numa')
#: Child providers per host and each one's ``PGPU`` total, per layout.
POOLS = {'per_device': (8, 1), 'pooled': (1, 8), 'pooled_numa': (2, 4)}
PRODUCT_TRAIT = 'CUSTOM_NVIDIA_T4'
GPU_TRAITS = ('OWNER_CYBORG', PRODUCT_TRAIT)
ROOT_TRAIT = 'COMPUTE_ACCELERATORS'
LIMIT = 1000
TIMEOUT = 30.0
CELL_BUDGET = 30.0
SAMPLES = {False: 20, True: 8}
#: The pooled layout's goal: 8 GPUs cost at most this times 1 GPU.
GOAL = 1.5


def device_profile(layout, gpus):
    """The device profile groups an operator writes for ``gpus`` GPUs
    (Cyborg 17's group format, ``resources:PGPU`` and ``trait:``).

    :param layout: a key of ``POOLS``.
    :param gpus: GPUs asked for (int, 1 to 8).
    :returns: list of group dicts: per device ``gpus`` groups of 1; pooled
        one group of ``gpus``; pooled by NUMA node one group while it fits
        one node (4), else one group per node.
    :raises KeyError: an unknown layout.
    """
    per_pool = POOLS[layout][1]
    size = min(gpus, per_pool)
    count = -(-gpus // size)
    return [{'resources:PGPU': str(size),
             'trait:%s' % PRODUCT_TRAIT: 'required'}
            for _ in range(count)]


def query(layout, gpus, limit=LIMIT):
    """The ``GET /allocation_candidates`` path Nova 34's scheduler sends.

    :returns: str, the path with its sorted, url-encoded query.
    """
    groups = request_groups.device_profile_request_groups(
        device_profile(layout, gpus))
    params = [('limit', limit), ('resources', 'MEMORY_MB:512,VCPU:1'),
              ('root_required', '%s,!COMPUTE_STATUS_DISABLED' % ROOT_TRAIT)]
    if len(groups) > 1:
        params.append(('group_policy', 'isolate'))
    for group in groups:
        params.extend(group.to_queryparams())
    return '/allocation_candidates?' + urllib.parse.urlencode(sorted(params))


def expected_candidates(layout, gpus, hosts, limit=LIMIT):
    """How many candidates Placement answers: per host, the ways to give
    the request's groups distinct providers with room (ordered: groups are
    numbered), times ``hosts``, at most ``limit``.

    :returns: int.
    """
    pools, per_pool = POOLS[layout]
    groups = device_profile(layout, gpus)
    per_host = 1
    for i, g in enumerate(groups):
        if int(g['resources:PGPU']) > per_pool:
            return 0
        per_host *= pools - i if len(groups) > 1 else pools
    return min(per_host * hosts, limit)


def _trees(hosts, layout, rc_pgpu, trait_ids, now):
    """Rows of ``hosts`` compute trees (providers, inventories, traits)."""
    pools, per_pool = POOLS[layout]
    rps, invs, traits, next_id = [], [], [], 1
    rc = {name: i for i, name in enumerate(orc.STANDARDS)}
    for h in range(hosts):
        root = next_id
        rps.append(dict(id=root, uuid=str(uuid.uuid4()),
                        name='node-%05d' % h, generation=1,
                        root_provider_id=root, parent_provider_id=None,
                        created_at=now))
        traits.append(dict(resource_provider_id=root,
                           trait_id=trait_ids[ROOT_TRAIT], created_at=now))
        for name, total in (('VCPU', 64), ('MEMORY_MB', 262144),
                            ('DISK_GB', 2000)):
            invs.append(dict(resource_provider_id=root,
                             resource_class_id=rc[name], total=total,
                             reserved=0, min_unit=1, max_unit=total,
                             step_size=1, allocation_ratio=1.0,
                             created_at=now))
        for p in range(pools):
            next_id += 1
            numa = p * 2 // pools
            rps.append(dict(id=next_id, uuid=str(uuid.uuid4()),
                            name='node-%05d_pool%d' % (h, p), generation=1,
                            root_provider_id=root, parent_provider_id=root,
                            created_at=now))
            invs.append(dict(resource_provider_id=next_id,
                             resource_class_id=rc_pgpu, total=per_pool,
                             reserved=0, min_unit=1, max_unit=per_pool,
                             step_size=1, allocation_ratio=1.0,
                             created_at=now))
            for t in GPU_TRAITS + ('CUSTOM_NUMA_NODE_%d' % numa,):
                traits.append(dict(resource_provider_id=next_id,
                                   trait_id=trait_ids[t], created_at=now))
        next_id += 1
    return rps, invs, traits


def populate(db_path, hosts, layout):
    """Write ``hosts`` compute trees of ``layout`` into Placement's empty
    SQLite database (schema at head, tables reflected from it).

    :param db_path: path of Placement's database file (str).
    :returns: how many GPU providers were written (int).
    """
    engine = sa.create_engine('sqlite:///%s' % db_path)
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    now = weigher.common_now()
    names = (ROOT_TRAIT,) + GPU_TRAITS + ('CUSTOM_NUMA_NODE_0',
                                          'CUSTOM_NUMA_NODE_1')
    with engine.begin() as conn:
        conn.execute(t['traits'].insert().prefix_with('OR IGNORE'),
                     [{'name': n, 'created_at': now} for n in names])
        trait_ids = dict(conn.execute(sa.select(
            t['traits'].c.name, t['traits'].c.id).where(
                t['traits'].c.name.in_(names))).all())
        rps, invs, traits = _trees(hosts, layout,
                                   orc.STANDARDS.index('PGPU'), trait_ids,
                                   now)
        for table, rows in (('resource_providers', rps),
                            ('inventories', invs),
                            ('resource_provider_traits', traits)):
            conn.execute(t[table].insert(), rows)
    engine.dispose()
    return hosts * POOLS[layout][0]


class Cloud:
    """One layout at one size on a Placement of its own.

    :param workdir: where its Placement keeps its files (str).
    :param hosts: compute nodes (int).
    :param layout: a key of ``POOLS``.
    """

    def __init__(self, workdir, hosts, layout):
        self.workdir, self.hosts, self.layout = workdir, hosts, layout
        self.starts = 0
        self.server = None
        self.session = None

    def start(self):
        """Start a fresh Placement, fill it and check it via the API.

        :raises AssertionError: Placement does not start or holds other
            than the expected GPU providers.
        """
        self.starts += 1
        work = os.path.join(self.workdir, '%s-%d-%d' % (
            self.layout, self.hosts, self.starts))
        self.server = tools_fixtures.start(
            placement_fx.PlacementServer(work))
        gpus = populate(self.server.database, self.hosts, self.layout)
        got = self.server.request(
            'GET', '/resource_providers?required=OWNER_CYBORG')
        assert len(got['resource_providers']) == gpus, len(
            got['resource_providers'])
        self.session = requests.Session()
        self.session.headers.update(launch_placement.ADMIN_HEADERS)

    def stop(self, abandoned=False):
        """Stop Placement.

        :param abandoned: it may still be computing an answer nobody
            waits for: SIGKILL it and its worker at once rather than wait
            for gunicorn's graceful stop, which waits for that answer
            (``tools.fixtures.process.Process.STOP_TIMEOUT``, 10 s).
        """
        if self.server is not None:
            self.session.close()
            if abandoned:
                self.server.kill()
            self.server.cleanUp()
            self.server = None

    def sample(self, gpus, timeout=TIMEOUT):
        """One timed request.

        :returns: ``(seconds, candidates)``, or ``(None, None)`` when no
            answer came within ``timeout`` seconds (Placement is then
            restarted).
        :raises AssertionError: an answer other than 200.
        """
        url = self.server.endpoint + query(self.layout, gpus)
        t0 = time.perf_counter()
        try:
            r = self.session.get(url, timeout=(5, timeout))
        except requests.exceptions.ReadTimeout:
            self.stop(abandoned=True)
            self.start()
            return None, None
        dt = time.perf_counter() - t0
        assert r.status_code == 200, r.text[:300]
        return dt, len(r.json()['allocation_requests'])


def _sample_size(clouds, gpus, samples, skip, log):
    """Interleaved samples of every (layout, N) not in ``skip`` at one size.

    :param clouds: ``{layout: started Cloud}``.
    :param skip: ``{layout: smallest N not to ask}``, updated on timeouts.
    :returns: ``{layout: {N: cell}}``, a cell ``{'status', 'candidates',
        'times'}`` (seconds).
    """
    cells = {lay: {} for lay in clouds}
    live = []
    for n in gpus:
        for lay, cloud in clouds.items():
            if n >= skip.get(lay, 99):
                cells[lay][n] = {'status': 'skipped', 'times': []}
                continue
            dt, cand = cloud.sample(n)        # warm-up, not counted
            if dt is None:
                skip[lay] = n
                cells[lay][n] = {'status': 'timeout', 'times': []}
                log('  %s N=%d: timeout (%.0f s)' % (lay, n, TIMEOUT))
                continue
            cells[lay][n] = {'status': 'ok', 'candidates': cand,
                             'times': [], 'warmup_s': dt}
            live.append((lay, n))
    for _ in range(samples):
        for lay, n in list(live):
            cell = cells[lay][n]
            dt, _cand = clouds[lay].sample(n)
            if dt is None:
                # Timed out after a warm-up that did not: counted apart,
                # and the cell asks no more.
                cell['late_timeouts'] = 1
                live.remove((lay, n))
                continue
            cell['times'].append(dt)
            if sum(cell['times']) > CELL_BUDGET and len(cell['times']) >= 3:
                live.remove((lay, n))
    return cells


def measure(env, sizes=None, gpus=GPUS, layouts=LAYOUTS, samples=None):
    """Measure 8 (see the module docstring).

    :param env: ``benchmarks.run.Env`` (``workdir``, ``quick``, ``log``).
    :param sizes: host counts (default ``SIZES``, ``QUICK_SIZES`` quick).
    :returns: ``{'sizes': [{'hosts', 'layouts': {layout: {N: cell}}}],
        'timeout_s', 'limit', 'goal', 'queries'}``; a measured cell holds
        ``common.summary`` keys (ms), ``candidates`` and ``status``.
    """
    sizes = sizes or (QUICK_SIZES if env.quick else SIZES)
    samples = samples or SAMPLES[env.quick]
    skip, out = {}, []
    for hosts in sizes:
        clouds = {lay: Cloud(env.workdir, hosts, lay) for lay in layouts}
        try:
            for c in clouds.values():
                c.start()
            cells = _sample_size(clouds, gpus, samples, skip, env.log)
        finally:
            for c in clouds.values():
                c.stop()
        for by_n in cells.values():
            for n, cell in by_n.items():
                times = cell.pop('times')
                if times:
                    cell.update(common.summary(times))
        out.append({'hosts': hosts, 'layouts': cells,
                    'ratio_8_to_1': ratios(cells)})
        env.log('sched %d hosts: %s' % (hosts, ', '.join(
            '%s 8/1 %s' % (lay, r) for lay, r in
            out[-1]['ratio_8_to_1'].items())))
    return {'sizes': out, 'timeout_s': TIMEOUT, 'limit': LIMIT,
            'goal': GOAL, 'cell_budget_s': CELL_BUDGET,
            'queries': {lay: {n: query(lay, n) for n in gpus}
                        for lay in layouts}}


def ratios(cells, big=8, small=1):
    """p50(``big`` GPUs) / p50(``small`` GPU) per layout.

    :param cells: ``{layout: {N: cell}}`` with ``p50`` (ms) in measured
        cells.
    :returns: ``{layout: float, or a str: '>= 123' (the timeout over the
        small p50, a lower bound, where ``big`` or fewer timed out) or
        '-'}``.
    """
    out = {}
    for lay, by_n in cells.items():
        a, b = by_n.get(big) or {}, by_n.get(small) or {}
        if a.get('p50') and b.get('p50'):
            out[lay] = a['p50'] / b['p50']
        elif a.get('status') in ('timeout', 'skipped') and b.get('p50'):
            # N GPUs or fewer timed out: ``big`` takes at least that long.
            out[lay] = '>= %.0f' % (TIMEOUT * 1000.0 / b['p50'])
        else:
            out[lay] = '-'
    return out
