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
  first as binds per second grow.
"""

import collections
import os
import time
import uuid

import sqlalchemy as sa

from accel_backend.db import models
from accel_common import arq_states

#: Rounds of the probe; each binds one ARQ on each of ``PROBE_BINDS``
#: devices one after the other, then deletes them.
PROBE_ROUNDS = 3
PROBE_BINDS = 8


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


def _cpu_of(pid):
    """User + system CPU seconds of ``pid``, its children it reaped and
    its live descendants (float); 0.0 for a process that is gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            kids = [int(k) for k in f.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    own = sum(int(x) for x in fields[11:15])
    return own / os.sysconf('SC_CLK_TCK') + sum(_cpu_of(k) for k in kids)


def cpu_by_component(cloud):
    """``{component: CPU seconds so far}`` of the bind path's processes:
    ``apis`` (both), ``conductor``, ``postgresql``, ``rabbitmq`` and
    ``placement``."""
    pids = {'apis': [a.proc.pid for a in cloud.apis],
            'conductor': [cloud.conductor.proc.pid],
            'postgresql': [cloud.pg.proc.pid],
            'rabbitmq': [cloud.rabbit.proc.pid],
            'placement': [cloud.placement.proc.pid]}
    return {name: sum(_cpu_of(p) for p in group)
            for name, group in pids.items()}


def per_bind_ms(before, after, binds):
    """CPU milliseconds per bind by component, from two
    ``cpu_by_component`` readings around ``binds`` binds (dict)."""
    return {name: 1000.0 * (after[name] - before[name]) / binds
            for name in before}


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
