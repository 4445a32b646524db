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

"""Measure 9: the whole Nova-like flow of a boot for 1 GPU against 8 GPUs,
pooled and one provider per device.

    python -m benchmarks.run --only flow_gpus [--quick]

Measure 7 (``benchmarks.flow``) times one boot's accelerator calls with one
GPU; measure 8 (``benchmarks.sched``) times only the allocation candidates
of N GPUs.  This one times what Nova's conductor and compute ask for a
server of N GPUs (``GPUS``), end to end, on one clock:

1. ``POST /v2/accelerator_requests`` for the device profile of N GPUs
   (``benchmarks.sched.device_profile``: pooled, one group
   ``resources:PGPU=N``; per device, N groups of 1) -- N ARQs;
2. ``GET /allocation_candidates`` as Nova 34's scheduler sends it
   (``benchmarks.sched.query``);
3. ``PUT /allocations/{instance}`` of the candidate on accel-backend's
   host;
4. ``PATCH /v2/accelerator_requests`` binding every ARQ to the provider
   Placement's ``mappings`` give its request group (``requester_id``
   ``device_profile_<i>``), as Nova's conductor does;
5. until the Nova stub took ``accelerator-request-bound`` for every ARQ.

Per layout (``LAYOUTS``) and cloud (``CLOUDS``: accel-backend's compute node
alone, and with 100 more hosts of 8 GPUs written into Placement's database
in the same layout, ``benchmarks.sched.populate``): a real Placement
(gunicorn, SQLite) and a real ``accel-backend`` process of its own over 8
recorded-layout GPUs on one NUMA node (``tools.fixtures.sysfs.make_sysfs``),
pooled by the device spec's ``"pool": true`` or not.  Samples of 1 and 8
GPUs alternate after one warm-up each; where a warm-up timed out, the
samples run on fresh servers.  After each trial, not timed: the
allocation and the ARQs are deleted and the host's 8 GPUs waited for
until Placement offers them again (released, cleaned, ``reserved`` 0).

An allocation candidates call that takes more than
``benchmarks.sched.TIMEOUT`` seconds is recorded as ``timeout`` (one
provider per device with 8 request groups: Placement enumerates every
assignment of groups to providers), and that cell is not asked again.

Goal (issue "Many identical devices and many hosts"): pooled, the flow for
8 GPUs takes at most ``GOAL`` times the flow for 1.
"""

import os
import time
import uuid

import requests

from benchmarks import common
from benchmarks import flow
from benchmarks import sched
from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import placement as placement_fx
from tools.fixtures import sysfs as sysfs_fx

LAYOUTS = ('pooled', 'per_device')
CLOUDS = (0, 100)
QUICK_CLOUDS = (0,)
GPUS = (1, 8)
GPUS_PER_HOST = sched.GPUS_PER_HOST
SAMPLES = {False: 20, True: 5}
GOAL = 1.5
FREE_TIMEOUT = 60


class Host:
    """accel-backend's compute node of one layout and cloud, on a
    Placement of its own.

    :param env: ``benchmarks.run.Env``.
    :param layout: ``pooled`` or ``per_device``.
    :param others: compute nodes besides this one (int).
    :param attempt: the how-manieth servers of this layout and cloud
        (int; names their files).
    """

    def __init__(self, env, layout, others, attempt=1):
        self.env, self.layout, self.others = env, layout, others
        self.name = 'flowgpus-%s-%d-%d' % (layout.replace('_', ''), others,
                                           attempt)
        self.placement = self.backend = None

    def start(self):
        """Start Placement, fill it, start accel-backend and wait until
        its GPUs are reported.

        :raises AssertionError: a server does not start in time.
        """
        work = os.path.join(self.env.workdir, self.name)
        sysfs = sysfs_fx.make_sysfs(os.path.join(work, 'sysfs'),
                                    GPUS_PER_HOST, numa_nodes=1)
        self.placement = tools_fixtures.start(placement_fx.PlacementServer(
            os.path.join(work, 'placement')))
        # Before accel-backend reports: the rows are written with ids
        # from 1.
        if self.others:
            sched.populate(self.placement.database, self.others,
                           self.layout)
        pooled = self.layout == 'pooled'
        self.backend = accel_fx.start_reporting(
            work, self.placement, self.env.stub, self.name, sysfs,
            devices=1 if pooled else GPUS_PER_HOST,
            spec=dict(sysfs_fx.GPU_SPEC, pool=pooled))
        self.root = self.placement.request(
            'GET', '/resource_providers?name=%s' % self.name
        )['resource_providers'][0]['uuid']
        rp = self.placement.request('GET',
                                    '/resource_providers/%s' % self.root)
        self.placement.request(
            'PUT', '/resource_providers/%s/inventories' % self.root,
            {'resource_provider_generation': rp['generation'],
             'inventories': {'VCPU': {'total': 64},
                             'MEMORY_MB': {'total': 262144},
                             'DISK_GB': {'total': 2000}}})
        rp = self.placement.request('GET',
                                    '/resource_providers/%s' % self.root)
        self.placement.request(
            'PUT', '/resource_providers/%s/traits' % self.root,
            {'resource_provider_generation': rp['generation'],
             'traits': [sched.ROOT_TRAIT]})
        self.client = accel_client.AccelClient(self.backend.root)
        for n in GPUS:
            self.client.create_profile(self.profile(n),
                                       sched.device_profile(self.layout, n))
        self.calls = flow.Placement(self.placement.endpoint)
        self.gpu_rps = [rp['uuid'] for rp in self.placement.request(
            'GET', '/resource_providers?in_tree=%s&resources=PGPU:1'
            % self.root)['resource_providers']]

    def stop(self, abandoned=False):
        """Stop accel-backend and Placement.

        :param abandoned: Placement may still be computing an answer
            nobody waits for: SIGKILL it (``sched.Cloud.stop``).
        """
        if self.backend is not None:
            self.backend.cleanUp()
        if self.placement is not None:
            if abandoned:
                self.placement.kill()
            self.placement.cleanUp()

    def profile(self, gpus):
        return 'flow-%s-%d' % (self.layout, gpus)

    def candidates(self, gpus):
        """``(seconds, allocation_requests)``, or ``(None, None)`` past
        ``sched.TIMEOUT``."""
        t0 = time.perf_counter()
        try:
            r = self.calls.s.get(self.placement.endpoint +
                                 sched.query(self.layout, gpus),
                                 timeout=(5, sched.TIMEOUT))
        except requests.exceptions.ReadTimeout:
            return None, None
        if r.status_code != 200:
            raise RuntimeError('a_c -> %s %s' % (r.status_code, r.text[:300]))
        return time.perf_counter() - t0, r.json()['allocation_requests']

    def free(self):
        """GPUs Placement can still give on this host (int)."""
        left = 0
        for rp in self.gpu_rps:
            inv = self.placement.request(
                'GET', '/resource_providers/%s/inventories' % rp)[
                    'inventories'].get('PGPU')
            used = self.placement.request(
                'GET', '/resource_providers/%s/usages' % rp)[
                    'usages'].get('PGPU', 0)
            if inv:
                left += inv['total'] - inv['reserved'] - used
        return left


def _on_host(candidates, root):
    """The first allocation request of ``candidates`` that takes VCPU from
    ``root`` (the scheduler's choice of that host), with its
    ``mappings``.

    :raises RuntimeError: none on that host.
    """
    for cand in candidates:
        alloc = cand['allocations'].get(root)
        if alloc and 'VCPU' in alloc['resources']:
            return cand
    raise RuntimeError('no allocation candidate on compute node %s among '
                       '%d' % (root, len(candidates)))


def provider_of(mappings, group_id):
    """The provider Placement gave request group ``device_profile_<i>``
    (``mappings``: an allocation request's, microversion 1.34; its keys
    are the groups' suffixes as the query spelled them: Nova 34 writes
    ``resourcesdevice_profile_<i>``, so ``device_profile_<i>``;
    openstack-placement 16.0.0, ``placement/lib.py``,
    ``_parse_request_items``).

    :raises RuntimeError: no such group in ``mappings``.
    """
    suffix = 'device_profile_%d' % group_id
    for key, rps in mappings.items():
        if key.lstrip('_') == suffix:
            return rps[0]
    raise RuntimeError('no mapping for %s in %s' % (suffix, mappings))


def trial(host, gpus):
    """One flow of ``gpus`` GPUs on ``host`` (a started ``Host``).

    :returns: ``{'total', 'placement'}`` (seconds) and ``candidates``, or
        None when the allocation candidates call timed out.
    :raises RuntimeError: a call fails, or a bind's event is not
        ``completed``.
    """
    instance = str(uuid.uuid4())
    stub = host.env.stub
    mark = stub.mark()
    t0 = time.perf_counter()
    _, arqs = host.client.create_arqs(host.profile(gpus))
    dt_ac, cands = host.candidates(gpus)
    if dt_ac is None:
        host.client.call('DELETE', '/v2/accelerator_requests?arqs=%s' % (
            ','.join(a['uuid'] for a in arqs)))
        return None
    cand = _on_host(cands, host.root)
    dt_put = host.calls.claim(instance, cand['allocations'])
    host.client.bind({
        a['uuid']: (host.name, provider_of(cand['mappings'],
                                           a['device_profile_group_id']),
                    instance) for a in arqs})
    arrived = stub.wait_tags([a['uuid'] for a in arqs], since=mark,
                             timeout=60)
    total = max(t for t, _ in arrived.values()) - t0
    host.calls.release(instance)
    host.client.delete_instance(instance)
    bad = [ev for _, ev in arrived.values()
           if ev.get('status') != 'completed']
    if bad:
        raise RuntimeError('bind failed: %s' % bad)
    deadline = time.monotonic() + FREE_TIMEOUT
    while host.free() < GPUS_PER_HOST:
        if time.monotonic() > deadline:
            raise RuntimeError('%s: GPUs not offered again in %d s' % (
                host.name, FREE_TIMEOUT))
        time.sleep(0.05)
    return {'total': total, 'placement': dt_ac + dt_put,
            'candidates': len(cands)}


def warm_up(host, log):
    """One uncounted trial of every N of ``GPUS`` on a started host.

    :returns: ``{N: cell}``, a cell ``{'status': 'ok', 'candidates'}`` or
        ``{'status': 'timeout'}`` (larger N are then not asked).
    """
    cells = {}
    for n in GPUS:
        warm = trial(host, n)
        if warm is None:
            cells[n] = {'status': 'timeout'}
            log('  flow_gpus %s: N=%d a_c timeout (%.0f s)' % (
                host.name, n, sched.TIMEOUT))
            break
        cells[n] = {'status': 'ok', 'candidates': warm['candidates']}
    return cells


def sample(host, cells, samples):
    """``samples`` trials of each N whose warm-up worked, alternating;
    adds ``total`` and ``placement`` (``common.summary`` dicts, ms) to
    its cell in ``cells``."""
    live = [n for n, c in cells.items() if c['status'] == 'ok']
    times = {n: {'total': [], 'placement': []} for n in live}
    for _ in range(samples):
        for n in live:
            t = trial(host, n)
            for key in ('total', 'placement'):
                times[n][key].append(t[key])
    for n in live:
        cells[n].update({k: common.summary(v) for k, v in times[n].items()})


def ratio(cells, big=GPUS[-1], small=GPUS[0]):
    """p50 total flow of ``big`` GPUs / of ``small`` (float), a lower
    bound as text where ``big`` timed out, or None."""
    a, b = cells.get(big, {}), cells.get(small, {})
    if a.get('status') == 'ok' and b.get('status') == 'ok':
        return common.ratio(a['total']['p50'], b['total']['p50'])
    if a.get('status') == 'timeout' and b.get('status') == 'ok':
        return '>= %.0f' % (sched.TIMEOUT * 1000.0 / b['total']['p50'])
    return None


def measure(env, clouds=None, layouts=LAYOUTS):
    """Measure 9 (see the module docstring).

    :param env: ``benchmarks.run.Env`` (``stub``, ``workdir``, ``quick``,
        ``log``).
    :returns: ``{'gpus', 'samples', 'goal', 'timeout_s', 'clouds':
        [{'other_hosts', 'layouts': {layout: {N: cell}}, 'ratio_8_to_1':
        {layout: ratio()}}]}``.
    :raises AssertionError: a server does not start in time.
    """
    clouds = clouds or (QUICK_CLOUDS if env.quick else CLOUDS)
    samples = SAMPLES[env.quick]
    out = []
    for others in clouds:
        cells = {}
        for layout in layouts:
            host = Host(env, layout, others)
            try:
                host.start()
                cells[layout] = warm_up(host, env.log)
                if 'timeout' in [c['status'] for c in
                                 cells[layout].values()]:
                    # Placement goes on computing the abandoned answer
                    # (and holds its database): sample on fresh servers.
                    host.stop(abandoned=True)
                    host = Host(env, layout, others, attempt=2)
                    host.start()
                sample(host, cells[layout], samples)
            finally:
                host.stop()
        ratios = {lay: ratio(c) for lay, c in cells.items()}
        out.append({'other_hosts': others, 'layouts': cells,
                    'ratio_8_to_1': ratios})
        env.log('flow_gpus %d other hosts: 8/1 %s' % (others, ratios))
    return {'gpus': list(GPUS), 'samples': samples, 'goal': GOAL,
            'timeout_s': sched.TIMEOUT, 'clouds': out}
