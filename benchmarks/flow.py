"""Measure 7: the Nova-like flow of one boot's accelerator calls, against
its Placement calls.

A real Placement (``tools.fixtures.placement``) and a real
``accel-backend`` process (``tools.fixtures.accel_backend``) over 16
recorded GPUs; the compute node's root provider gets VCPU and MEMORY_MB as
Nova's resource tracker would report them.  One trial, in the order the
issue's flow names (what Nova's conductor and compute ask, one server with
one accelerator):

1. ``POST /v2/accelerator_requests`` for the profile (1 ARQ);
2. ``GET /allocation_candidates`` (Placement 1.36) for ``VCPU:1,
   MEMORY_MB:512`` plus the profile's request group (``resources_acc0=
   PGPU:1``, ``required_acc0=CUSTOM_NVIDIA_T4``, ``group_policy=none``);
3. ``PUT /allocations/{instance}`` with the first candidate (new
   consumer: ``consumer_generation`` null);
4. ``PATCH /v2/accelerator_requests`` binding the ARQ to the device
   provider of that candidate;
5. wait for the ARQ's event at the Nova stub (``Bound`` committed).

The clock runs from 1 to 5.  Reported: the total, the Placement part (2
+ 3, what Nova pays for scheduling whatever the accelerator service),
and total / Placement part per trial (goal: at most 1.15, i.e. the
accelerator calls add at most 15 % to the Placement calls of the same
boot).  Allocations and ARQs are deleted after each trial, not timed.
"""

import os
import time
import uuid

import requests

from benchmarks import common
from tools.launch import placement as launch_placement

DEVICES = 16
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
        allocation_requests)``."""
        dt, r = self._call('GET', A_C)
        return dt, r.json()['allocation_requests']

    def claim(self, consumer, allocations):
        """``PUT /allocations/{consumer}`` of one candidate's
        ``allocations`` for a new consumer; returns seconds."""
        return self._call('PUT', '/allocations/%s' % consumer, {
            'allocations': allocations, 'consumer_generation': None,
            'project_id': common.PROJECT_ID, 'user_id': common.USER_ID},
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


def trial(client, placement, stub, host, profile):
    """One flow; returns ``{'total', 'placement', 'a_c', 'put'}``
    (seconds).

    :raises RuntimeError: a call fails, no candidate, or the bind's event
        is not ``completed``.
    """
    instance = str(uuid.uuid4())
    mark = stub.mark()
    t0 = time.perf_counter()
    _, arqs = client.create_arqs(profile)
    dt_ac, cands = placement.candidates()
    if not cands:
        raise RuntimeError('no allocation candidates')
    allocations = cands[0]['allocations']
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
            'put': dt_put}


def measure(env):
    """Measure 7 (``TRIALS[env.quick]`` flows after one warm-up).

    :param env: ``benchmarks.run.Env`` (``placement``, ``stub``,
        ``workdir``, ``quick``, ``log``).
    :returns: ``{'trials', 'devices', 'goal', 'total', 'placement',
        'a_c', 'put', 'accel_part', 'ratio_total_to_placement'}``
        (summaries in milliseconds; the ratio as ``{n, p50, p95, ...}``
        per trial, and ``ratio_p50``: p50 total / p50 Placement part).
    :raises AssertionError: a server does not start in time.
    """
    sysfs = os.path.join(env.workdir, 'sysfs-flow')
    if not os.path.isdir(sysfs):
        common.make_sysfs(sysfs, DEVICES)
    backend = common.accel_backend(env.workdir, env.placement, env.stub,
                                   'flow-host', sysfs, DEVICES)
    try:
        root = env.placement.request(
            'GET', '/resource_providers?name=%s' % backend.host
        )['resource_providers'][0]
        env.placement.request(
            'PUT', '/resource_providers/%s/inventories' % root['uuid'],
            {'resource_provider_generation': root['generation'],
             'inventories': {'VCPU': {'total': 64},
                             'MEMORY_MB': {'total': 262144}}})
        client = common.AccelClient(backend.root)
        client.create_profile('flow-gpu', [{
            'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'}])
        placement = Placement(env.placement.endpoint)
        trial(client, placement, env.stub, backend.host, 'flow-gpu')
        samples = {k: [] for k in ('total', 'placement', 'a_c', 'put',
                                   'accel_part')}
        ratios = []
        for _ in range(TRIALS[env.quick]):
            t = trial(client, placement, env.stub, backend.host, 'flow-gpu')
            for k, v in t.items():
                samples[k].append(v)
            samples['accel_part'].append(t['total'] - t['placement'])
            ratios.append(t['total'] / t['placement'])
        out = {k: common.summary(v) for k, v in samples.items()}
        out['ratio_total_to_placement'] = {
            'n': len(ratios), 'p50': common.percentile(ratios, 50),
            'p95': common.percentile(ratios, 95), 'min': min(ratios),
            'max': max(ratios)}
        out['ratio_p50'] = common.ratio(out['total']['p50'],
                                        out['placement']['p50'])
        out.update(trials=TRIALS[env.quick], devices=DEVICES, goal=GOAL)
        env.log('  flow: total p50 %.1f ms, Placement part %.1f ms, '
                'ratio %.2f' % (out['total']['p50'],
                                out['placement']['p50'], out['ratio_p50']))
        return out
    finally:
        backend.cleanUp()
