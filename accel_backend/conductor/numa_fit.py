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

"""Which GPUs of a pool spanning NUMA nodes a request group gets.

A pool (``common.pooling``) is one resource provider for the
identical functions of a host on all its NUMA nodes, so Placement takes
``resources:PGPU=8`` (one request group, one provider, as Nova 34's
``nova/accelerator/cyborg.py`` makes of a device profile group) from a
two-socket server of 4 + 4 GPUs.  Placement counts units, not nodes: the
binder picks the functions here, for the ARQs of one group (same
``device_profile_group_id``, instance and provider) together:

* a group requiring ``trait:CUSTOM_NUMA_NODE_<N>`` gets functions of
  node N only (Placement only offers a pool with functions on N);
* a group with ``accel:numa_local: "true"`` gets them all from one node,
  the one with the fewest free functions that has enough (best fit);
* any other group is packed onto as few nodes as possible: one node when
  one has enough (best fit), else the nodes with most free first.

A group that cannot be satisfied so gets no handle: its ARQs fail to
bind with ``failure.NUMA_UNFIT`` and the build fails on the host.
Placement cannot tell that ahead, as it has no per-node count of a pool;
Nova's scheduler filter ``nova_accel.scheduler.filters.
AcceleratorNumaFitFilter`` can: it reads the free units per node
(``objects.numa_free``) and skips such a host, so this failure is left
for a race between two binds.  Pools on one node and other providers are left
to ``conductor.claim``'s ordinary claim.
"""

import collections

import sqlalchemy as sa

from accel_backend.common import pooling
from accel_backend.conductor import claim
from accel_backend.conductor import failure
from accel_backend.db import models
from accel_backend.objects import pool_members

#: Device profile group key asking every unit of the group on one node
#: (Nova 34 passes ``accel:`` keys by, ``cyborg.py``).
LOCAL_KEY = 'accel:numa_local'
#: Trait prefix of a node (``agent.discovery.drivers.base.numa_trait``).
NODE_TRAIT = 'trait:CUSTOM_NUMA_NODE_'

_POOLS = (
    sa.select(models.Deployable.rp_uuid, models.Device.hostname,
              models.Device.std_board_info)
    .join(models.Device, models.Deployable.device_id == models.Device.id)
    .where(models.Deployable.rp_uuid.in_(
        sa.bindparam('rps', expanding=True)),
        models.Device.address.like(pooling.PREFIX + '%')))


def wish(group):
    """What a device profile group (dict) asks of NUMA: ``(node, local)``,
    ``node`` the int of a required ``CUSTOM_NUMA_NODE_<N>`` trait or
    None, ``local`` True when ``accel:numa_local`` is ``true``."""
    node = None
    for key, value in (group or {}).items():
        if key.startswith(NODE_TRAIT) and value == 'required' and \
                key[len(NODE_TRAIT):].isdigit():
            node = int(key[len(NODE_TRAIT):])
    local = str((group or {}).get(LOCAL_KEY, '')).lower() == 'true'
    return node, local


def choose(free, n, node=None, local=False):
    """The handle ids for a group of ``n`` units.

    :param free: ``{NUMA node: [free handle id, ...]}``.
    :param n: units wanted (int >= 1).
    :param node: the node every unit must be on, or None.
    :param local: every unit on one node (any).
    :returns: list of ids (length ``n``), or None when impossible.
    """
    if node is not None:
        ids = free.get(node, [])
        return ids[:n] if len(ids) >= n else None
    fits = sorted((len(ids), k) for k, ids in free.items() if len(ids) >= n)
    if fits:
        return free[fits[0][1]][:n]
    if local or sum(len(v) for v in free.values()) < n:
        return None
    picked = []
    for _, k in sorted((-len(ids), k) for k, ids in free.items()):
        picked.extend(free[k][:n - len(picked)])
    return picked


def _spanning(session, keys):
    """``{(rp, host): {handle_key: node}}`` of the pools on several
    nodes among ``keys``."""
    found = {}
    for rp, host, board in session.execute(_POOLS, {
            'rps': sorted({k[0] for k in keys})}):
        members = (board or {}).get('members') or {}
        nodes = {}
        for m in members.values():
            nodes[pool_members.handle_key(*m['handle'])] = (
                m['std_board_info'].get('numa_node'))
        if (rp, host) in keys and len(set(nodes.values())) > 1:
            found[(rp, host)] = nodes
    return found


def claim_groups(session, arqs):
    """Claim handles for the ARQs of ``arqs`` bound to pools on several
    NUMA nodes, group by group (see the module docstring).

    :param session: the binder's transaction.
    :param arqs: ``conductor.bind_row.BindRow`` (locked, ``BindStarted``).
    :returns: ``(handles, failed)``: ``{ARQ uuid: attach handle row}``
        and ``{ARQ uuid: reason}``; the ARQs in neither are left to the
        ordinary claim.
    """
    groups = collections.defaultdict(list)
    for arq in arqs:
        groups[(arq.device_rp_uuid, arq.hostname, arq.instance_uuid,
                arq.device_profile_group_id)].append(arq)
    # Single units asking nothing of NUMA take the lowest free handle
    # (``conductor.claim``), which fills one node before the next: no
    # statement more for them (the binder's fixed statement count).
    keys = {g[:2] for g, members in groups.items()
            if len(members) > 1 or
            wish(members[0].device_profile_group) != (None, False)}
    pools = _spanning(session, keys) if keys else {}
    groups = {g: m for g, m in groups.items() if g[:2] in pools}
    handles, failed, lost = {}, {}, set()
    for gkey, members in sorted(groups.items(), key=lambda g: g[0]):
        nodes = pools[gkey[:2]]
        node, local = wish(members[0].device_profile_group)
        got = None
        for _ in range(claim.ROUNDS):
            free = collections.defaultdict(list)
            for row in claim.free_handles(
                    session, *gkey[:2],
                    tolerated=claim.group_tolerations(
                        members[0].device_profile_group)):
                if row.id not in lost:
                    free[nodes.get(pool_members.handle_key(
                        row.attach_type, row.attach_info))].append(row.id)
            ids = choose(free, len(members), node, local)
            if ids is None:
                break
            # All of the group's or none: a handle a concurrent binder
            # took under us undoes this round's claim (a savepoint).
            savepoint = session.begin_nested()
            claimed = claim.claim_ids(session, ids)
            if len(claimed) == len(ids):
                savepoint.commit()
                got = [claimed[i] for i in ids]
                break
            savepoint.rollback()
            lost |= set(ids) - set(claimed)
        if got is None and node is None and not local:
            continue    # short of units: the ordinary claim says why
        for arq in members:
            if got:
                handles[arq.uuid] = got.pop(0)
            else:
                failed[arq.uuid] = failure.NUMA_UNFIT
    return handles, failed
