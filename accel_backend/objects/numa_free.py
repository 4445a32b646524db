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

"""Free units per NUMA node of the pools that span NUMA nodes.

Placement counts a pool's units, not where they sit (``common.pooling``):
a provider of 8 with 4 used says nothing of which node still has room.
Nova's scheduler filter ``AcceleratorNumaFitFilter`` asks this, through
``GET /v2/deployables/free_by_numa_node`` (microversion 2.4), for the
requests that want NUMA locality, so that a host whose wanted node is full
is not offered.  A unit is free exactly when ``conductor.claim`` could
claim it: an ``available`` attach handle, that no taint holds, of an
enabled, healthy pool device (an unhealthy member has no handle,
``objects.pool_members``).
Pools on one node, and devices that are not pools, are left out:
Placement's own count is already per node for them.
"""

import collections

import sqlalchemy as sa

from accel_backend.common import discovered
from accel_backend.common import pooling
from accel_backend.db import models
from accel_backend.objects import device as device_obj
from accel_backend.objects import pool_members
from accel_backend.objects import taint as taint_obj
from accel_common import handle_states

_HANDLES = models.AttachHandle.__table__
_DEPLOYABLES = models.Deployable.__table__
_DEVICES = models.Device.__table__

_POOLS = (
    sa.select(_DEPLOYABLES.c.id, _DEPLOYABLES.c.uuid,
              _DEPLOYABLES.c.rp_uuid, _DEVICES.c.std_board_info)
    .join(_DEVICES, _DEPLOYABLES.c.device_id == _DEVICES.c.id)
    .where(_DEVICES.c.address.like(pooling.PREFIX + '%'))
    .order_by(_DEPLOYABLES.c.id))

_FREE = (
    sa.select(_HANDLES.c.deployable_id, _HANDLES.c.attach_type,
              _HANDLES.c.attach_info, _HANDLES.c.id)
    .join(_DEPLOYABLES, _HANDLES.c.deployable_id == _DEPLOYABLES.c.id)
    .join(_DEVICES, _DEPLOYABLES.c.device_id == _DEVICES.c.id)
    .where(_HANDLES.c.deployable_id.in_(sa.bindparam('ids',
                                                     expanding=True)),
           _DEVICES.c.status == device_obj.ENABLED,
           _DEVICES.c.health == discovered.HEALTHY,
           _HANDLES.c.state.in_(handle_states.CLAIMABLE_STATES)))


def _member_nodes(board):
    """``{handle_key: NUMA node}`` of a pool device's members."""
    nodes = {}
    for member in ((board or {}).get('members') or {}).values():
        nodes[pool_members.handle_key(*member['handle'])] = (
            (member.get('std_board_info') or {}).get('numa_node'))
    return nodes


def spanning_pools(session):
    """Free units per NUMA node of every pool spanning several nodes.

    Three statements whatever the number of pools.

    :param session: a read transaction.
    :returns: list of ``{"uuid": deployable UUID, "rp_uuid": provider
        UUID, "free_by_numa_node": {"<node>": int, ...}}``, in deployable
        order; every node the pool has members on is a key (0 when none
        of its units is free), as a string (JSON object keys).
    """
    pools = {}
    for dep_id, uuid, rp_uuid, board in session.execute(_POOLS):
        nodes = _member_nodes(board)
        if len({n for n in nodes.values() if n is not None}) < 2:
            continue
        pools[dep_id] = (uuid, rp_uuid, nodes)
    counts = {dep_id: collections.Counter() for dep_id in pools}
    if pools:
        # A handle a taint holds is not free (``objects.taint``).
        held = taint_obj.held_handle_ids(session, pools)
        for dep_id, attach_type, info, handle_id in session.execute(
                _FREE, {'ids': sorted(pools)}):
            if handle_id in held:
                continue
            node = pools[dep_id][2].get(
                pool_members.handle_key(attach_type, info))
            if node is not None:
                counts[dep_id][node] += 1
    out = []
    for dep_id, (uuid, rp_uuid, nodes) in pools.items():
        free = {str(n): counts[dep_id][n]
                for n in sorted({n for n in nodes.values() if n is not None})}
        out.append({'uuid': uuid, 'rp_uuid': rp_uuid,
                    'free_by_numa_node': free})
    return out
