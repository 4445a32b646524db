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

"""Measure 7: the Nova-like flow of one boot's accelerator calls, against
its Placement calls.

A real ``accel-backend`` process (``tools.fixtures.accel_backend``) over 16
recorded GPUs, and a real Placement (``tools.fixtures.placement``) of the
flow's own per cloud size (``CLOUDS``): Placement's answers take longer
the more providers it holds, so the flow never runs on a server that
earlier measures (or an earlier run of this one) filled.  The cloud is
accel-backend's compute node plus ``N`` others, each with 8 GPUs of the
same kind (``PGPU``, ``CUSTOM_NVIDIA_T4``, 3 of the 8 allocated) written
into Placement's database (``benchmarks.weigher.populate``); every
compute node's root provider has VCPU and MEMORY_MB as Nova's resource
tracker would report them.  One trial, in the order the issue's flow
names (what Nova's conductor and compute ask, one server with one
accelerator):

1. ``POST /v2/accelerator_requests`` for the profile (1 ARQ);
2. ``GET /allocation_candidates`` (Placement 1.36) for ``VCPU:1,
   MEMORY_MB:512`` plus the profile's request group (``resources_acc0=
   PGPU:1``, ``required_acc0=CUSTOM_NVIDIA_T4``, ``group_policy=none``);
3. ``PUT /allocations/{instance}`` with the first candidate on
   accel-backend's host (as the scheduler would have picked that host;
   new consumer: ``consumer_generation`` null);
4. ``PATCH /v2/accelerator_requests`` binding the ARQ to the device
   provider of that candidate;
5. wait for the ARQ's event at the Nova stub (``Bound`` committed).

The clock runs from 1 to 5.  Reported per cloud: the total, the
Placement part (2 + 3, what Nova pays for scheduling whatever the
accelerator service), and total / Placement part per trial (goal: at
most 1.15, i.e. the accelerator calls add at most 15 % to the Placement
calls of the same boot).  Allocations and ARQs are deleted after each
trial, not timed.
"""

import os
import random
import time
import uuid

import requests

from benchmarks import common
from benchmarks import weigher
from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import placement as placement_fx
from tools.fixtures import sysfs as sysfs_fx
from tools.launch import placement as launch_placement

DEVICES = 16
#: Compute nodes besides accel-backend's in each cloud the flow runs in:
#: the smallest cloud, and one of 100 GPU hosts.
CLOUDS = (0, 100)
TRAITS = ('OWNER_CYBORG', 'CUSTOM_NVIDIA_T4')
TRIALS = {False: 100, True: 15}
GOAL = 1.15
A_C = ('/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'
       '&resources_acc0=PGPU:1&required_acc0=CUSTOM_NVIDIA_T4'
       '&group_policy=none&limit=1000')


class Placement:
    """The two Placement calls of the flow, timed, on one session as
    Nova's report client keeps one (noauth2 admin, microversion 1.36).

    :param url: Placement's endpoint (str).
    """

    def __init__(self, url):
        self.url = url
        self.s = requests.Session()
        self.s.headers.update(launch_placement.ADMIN_HEADERS)

    def _call(self, method, path, body=None, ok=(200, 204)):
        t0 = time.perf_counter()
        r = self.s.request(method, self.url + path, json=body)
        dt = time.perf_counter() - t0
        if r.status_code not in ok:
            raise RuntimeError('Placement %s %s -> %s %s' % (
                method, path, r.status_code, r.text[:300]))
        return dt, r

    def candidates(self):
        """``GET /allocation_candidates``; returns ``(seconds,
        allocation_requests)``.  The seconds include reading the JSON
        answer (Nova's report client does too): with hundreds of
        candidates it takes milliseconds, which are Placement's part,
        not the accelerator service's."""
        t0 = time.perf_counter()
        _, r = self._call('GET', A_C)
        body = r.json()
        return time.perf_counter() - t0, body['allocation_requests']

    def claim(self, consumer, allocations):
        """``PUT /allocations/{consumer}`` of one candidate's
        ``allocations`` for a new consumer; returns seconds."""
        return self._call('PUT', '/allocations/%s' % consumer, {
            'allocations': allocations, 'consumer_generation': None,
            'project_id': accel_client.PROJECT_ID,
            'user_id': accel_client.USER_ID},
            ok=(204,))[0]

    def release(self, consumer):
        self._call('DELETE', '/allocations/%s' % consumer, ok=(204, 404))


def _device_rp(allocations):
    """The provider of ``allocations`` (``{rp: {'resources': {...}}}``)
    that gives the PGPU."""
    for rp, alloc in allocations.items():
        if 'PGPU' in alloc['resources']:
            return rp
    raise RuntimeError('no PGPU in candidate %s' % allocations)


def on_host(candidates, root):
    """The first allocation request of ``candidates`` (an a_c answer's
    ``allocation_requests``) that takes VCPU from the compute node
    provider ``root`` (UUID): the scheduler's choice of that host.

    :returns: its ``allocations`` (``{rp_uuid: {'resources': {...}}}``).
    :raises RuntimeError: no candidate on that host.
    """
    for cand in candidates:
        alloc = cand['allocations'].get(root)
        if alloc and 'VCPU' in alloc['resources']:
            return cand['allocations']
    raise RuntimeError('no allocation candidate on compute node %s among '
                       '%d' % (root, len(candidates)))


def trial(client, placement, stub, host, root, profile):
    """One flow; returns ``{'total', 'placement', 'a_c', 'put',
    'candidates'}`` (seconds, and the number of allocation requests).

    :param root: the compute node provider of ``host`` (UUID).
    :raises RuntimeError: a call fails, no candidate on ``host``, or the
        bind's event is not ``completed``.
    """
    instance = str(uuid.uuid4())
    mark = stub.mark()
    t0 = time.perf_counter()
    _, arqs = client.create_arqs(profile)
    dt_ac, cands = placement.candidates()
    allocations = on_host(cands, root)
    dt_put = placement.claim(instance, allocations)
    arq = arqs[0]['uuid']
    client.bind({arq: (host, _device_rp(allocations), instance)})
    t_end, ev = stub.wait_tags([arq], since=mark, timeout=30)[arq]
    total = t_end - t0
    placement.release(instance)
    client.delete_instance(instance)
    if ev.get('status') != 'completed':
        raise RuntimeError('bind failed: %s' % ev)
    return {'total': total, 'placement': dt_ac + dt_put, 'a_c': dt_ac,
            'put': dt_put, 'candidates': len(cands)}


def measure_cloud(env, others, trials):
    """The flow in a cloud of accel-backend's compute node and ``others``
    more, on a Placement server of its own (stopped after).

    :returns: ``{'other_hosts', 'candidates', 'total', 'placement',
        'a_c', 'put', 'accel_part', 'ratio_total_to_placement',
        'ratio_p50'}`` (summaries in milliseconds; the ratio per trial as
        ``{n, p50, p95, min, max}``, ``ratio_p50``: p50 total / p50
        Placement part).
    :raises AssertionError: a server does not start in time.
    """
    sysfs = os.path.join(env.workdir, 'sysfs-flow')
    if not os.path.isdir(sysfs):
        sysfs_fx.make_sysfs(sysfs, DEVICES)
    name = 'flow-%d' % others
    placement_server = tools_fixtures.start(placement_fx.PlacementServer(
        os.path.join(env.workdir, name + '-placement')))
    backend = None
    try:
        # Before accel-backend reports: the rows are written with ids
        # from 1.
        weigher.populate(placement_server.database, others,
                         random.Random(7), traits=TRAITS)
        backend = accel_fx.start_reporting(env.workdir, placement_server,
                                           env.stub, name, sysfs, DEVICES)
        root = placement_server.request(
            'GET', '/resource_providers?name=%s' % backend.host
        )['resource_providers'][0]
        placement_server.request(
            'PUT', '/resource_providers/%s/inventories' % root['uuid'],
            {'resource_provider_generation': root['generation'],
             'inventories': {'VCPU': {'total': 64},
                             'MEMORY_MB': {'total': 262144}}})
        client = accel_client.AccelClient(backend.root)
        client.create_profile('flow-gpu', [{
            'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'}])
        placement = Placement(placement_server.endpoint)
        args = (client, placement, env.stub, backend.host, root['uuid'],
                'flow-gpu')
        candidates = trial(*args)['candidates']
        samples = {k: [] for k in ('total', 'placement', 'a_c', 'put',
                                   'accel_part')}
        ratios = []
        for _ in range(trials):
            t = trial(*args)
            for k in ('total', 'placement', 'a_c', 'put'):
                samples[k].append(t[k])
            samples['accel_part'].append(t['total'] - t['placement'])
            ratios.append(t['total'] / t['placement'])
        out = {k: common.summary(v) for k, v in samples.items()}
        out['ratio_total_to_placement'] = {
            'n': len(ratios), 'p50': common.percentile(ratios, 50),
            'p95': common.percentile(ratios, 95), 'min': min(ratios),
            'max': max(ratios)}
        out['ratio_p50'] = common.ratio(out['total']['p50'],
                                        out['placement']['p50'])
        out.update(other_hosts=others, candidates=candidates)
        env.log('  flow, %d other hosts (%d candidates): total p50 %.1f ms, '
                'Placement part %.1f ms, ratio %.2f' % (
                    others, candidates, out['total']['p50'],
                    out['placement']['p50'], out['ratio_p50']))
        return out
    finally:
        if backend is not None:
            backend.cleanUp()
        placement_server.cleanUp()


def measure(env, clouds=CLOUDS):
    """Measure 7 (``TRIALS[env.quick]`` flows after one warm-up, per
    cloud of ``clouds``).

    :param env: ``benchmarks.run.Env`` (``stub``, ``workdir``, ``quick``,
        ``log``).
    :param clouds: numbers of compute nodes besides accel-backend's
        (ints).
    :returns: ``{'trials', 'devices', 'goal', 'clouds': [measure_cloud()
        results]}``.
    :raises AssertionError: a server does not start in time.
    """
    return {'trials': TRIALS[env.quick], 'devices': DEVICES, 'goal': GOAL,
            'clouds': [measure_cloud(env, n, TRIALS[env.quick])
                       for n in clouds]}
