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

"""What one bind costs as the number of hosts grows, apart from the
queue of a storm (``benchmarks.growth``).

A storm of 8 ARQs per host sends 8 x N binds at once to the same two
cores, so its latency is mostly the queue ahead of each bind, which grows
with N by construction.  Two figures compare like with like across sizes:

* ``probe``: binds sent one at a time (the next PATCH once the last one's
  ``accelerator-request-bound`` event reached the Nova stub), the same
  number at every size, with every host's agent connected: PATCH to
  event, seconds;
* ``cpu_by_component``: the CPU seconds every process of a component has
  used so far (the process, its live descendants and the children it
  reaped: PostgreSQL's backends, RabbitMQ's Erlang VM, gunicorn's
  workers); ``growth.storm`` takes it before and after the storm's binds,
  which gives CPU milliseconds per bind by component: what would saturate
  first as binds per second grow.  The background every component has
  with all agents connected and nothing asked of it (``idle_cpu``: the
  agents' looks for dirty devices, heartbeats) grows with the number of
  hosts, not of binds: it is read over ``IDLE_S`` before the storm and
  taken out of the per-bind figures, and reported apart.
"""

import collections
import time
import uuid

import sqlalchemy as sa

from accel_backend.db import models
from accel_common import arq_states
from benchmarks import growth_probes as probes

#: Rounds of the probe; each binds one ARQ on each of ``PROBE_BINDS``
#: devices one after the other, then deletes them.
PROBE_ROUNDS = 3
PROBE_BINDS = 8
#: Seconds of the idle reading (``idle_cpu``).
IDLE_S = 10.0


def targets(cloud, rps, devices):
    """``[(host, rp_uuid), ...]``: each host's ``devices`` devices, host
    by host (``rps``: as ``growth.Cloud.providers``)."""
    return [(h, rps[h][d % len(rps[h])])
            for h in cloud.hosts for d in range(devices)]


def bind_body(arq, host, rp, instance):
    """The PATCH body that binds ``arq`` to provider ``rp`` of ``host``
    for server ``instance`` (Cyborg v2 ``PATCH
    /v2/accelerator_requests``, as Nova 34's client sends it)."""
    return {arq: [
        {'op': 'add', 'path': '/hostname', 'value': host},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]}


def probe(cloud, profile, targets, timeout):
    """Bind one ARQ at a time and time each PATCH to its event.

    :param cloud: a started ``growth.Cloud`` with its agents.
    :param profile: device profile name (str).
    :param targets: ``[(host, rp_uuid), ...]``, ``PROBE_BINDS`` of them.
    :param timeout: seconds to wait for one event.
    :returns: sorted list of seconds, ``PROBE_ROUNDS x len(targets)``.
    :raises AssertionError: a request refused or an event late.
    """
    latencies = []
    for round_ in range(PROBE_ROUNDS):
        api = cloud.apis[round_ % len(cloud.apis)]
        instance = str(uuid.uuid4())
        for host, rp in targets:
            (arq,) = api.request(
                'POST', '/v2/accelerator_requests',
                {'device_profile_name': profile}, expect=(201,))['arqs']
            mark = cloud.nova.mark()
            sent = time.perf_counter()
            api.request('PATCH', '/v2/accelerator_requests',
                        bind_body(arq['uuid'], host, rp, instance),
                        expect=(202,))
            events = cloud.nova.wait_tags([arq['uuid']], since=mark,
                                          timeout=timeout)
            latencies.append(events[arq['uuid']][0] - sent)
        api.request('DELETE', '/v2/accelerator_requests?instance=%s' %
                    instance, expect=(204,))
    return sorted(latencies)


def cpu_by_component(cloud):
    """``{component: CPU seconds so far}`` of the bind path's processes:
    ``apis`` (both), ``conductor``, ``postgresql``, ``rabbitmq`` and
    ``placement``."""
    pids = {'apis': [a.proc.pid for a in cloud.apis],
            'conductor': [cloud.conductor.proc.pid],
            'postgresql': [cloud.pg.proc.pid],
            'rabbitmq': [cloud.rabbit.proc.pid],
            'placement': [cloud.placement.proc.pid]}
    return {name: sum(probes.cpu_seconds(p, tree=True)
                      for p in group)
            for name, group in pids.items()}


def idle_cpu(cloud):
    """CPU seconds per second of each component (``cpu_by_component``)
    with every agent connected and nothing asked of it, read over
    ``IDLE_S`` seconds (dict)."""
    before, t0 = cpu_by_component(cloud), time.monotonic()
    time.sleep(IDLE_S)
    after = cpu_by_component(cloud)
    span = time.monotonic() - t0
    return {name: (after[name] - before[name]) / span for name in before}


def per_bind_ms(before, after, binds, idle=None, seconds=0.0):
    """CPU milliseconds per bind by component, from two
    ``cpu_by_component`` readings ``seconds`` apart around ``binds``
    binds, less the background ``idle`` (``idle_cpu``; None: none) over
    those seconds (dict)."""
    idle = idle or {}
    used = {name: after[name] - before[name] for name in before}
    return {name: 1000.0 * (cpu - idle.get(name, 0.0) * seconds) / binds
            for name, cpu in used.items()}


def check_rows(cloud, arqs):
    """ARQs not Bound, and attach handles held by more than one ARQ."""
    with cloud.db.connect() as conn:
        rows = conn.execute(sa.select(
            models.ARQ.uuid, models.ARQ.state,
            models.ARQ.attach_handle_id).where(
            models.ARQ.uuid.in_(arqs))).all()
    holders = collections.Counter(handle for _, _, handle in rows)
    return {'not_bound': sorted(u for u, s, _ in rows
                                if s != arq_states.BOUND),
            'shared_handles': sum(n > 1 for h, n in holders.items()
                                  if h is not None)}
