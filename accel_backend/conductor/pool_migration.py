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

"""The database half of turning pooling on for a host with guests.

When discovery pools functions (``common.pooling``) that the database
still has as per-device deployables, the host's rows are migrated
rather than replaced: ``moves`` says what moves where (read only), and
``move`` does it in the caller's transaction, after Placement was
reshaped (``agent.placement.reshape``).  The pool device and deployable are
created with the UUIDs ``common.ids`` derives for them, every
attach handle of the old deployables is moved under the pool deployable
in whatever state it is (its UUID derives from the host and the PCI
address, ``conductor.host_sync._sync_handles``, so it stays the same), each
ARQ bound to an old provider gets the pool's ``device_rp_uuid``, a taint
of an old deployable becomes the same taint of that member's function of
the pool (``objects.taint``: its reservation in Placement stays one
unit), and the old devices are deleted.  ``host_sync.sync`` then
completes the pool's rows as on any pass.  Running ``move`` again after
it committed finds nothing to move: it is idempotent.
"""

import dataclasses

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import orm

from accel_backend.common import discovered
from accel_backend.common import hgx
from accel_backend.common import ids
from accel_backend.common import pooling
from accel_backend.db import models
from accel_backend.objects import device as device_obj
from accel_backend.objects import pool_members

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class Move:
    """The per-device providers one pool replaces.

    ``pool_rp_uuid`` (str) is the pool deployable's resource provider,
    ``subname`` the pool's name (``common.pooling.pool_name``),
    ``resource_class`` (str), ``traits`` (tuple of str) and ``total``
    (int, its members) what Placement must show for it, and ``old``
    ``{rp_uuid: PCI address}`` the providers of the per-device
    deployables of its members that the database still has.
    """

    pool_rp_uuid: str
    subname: str
    resource_class: str
    traits: tuple
    total: int
    old: dict


def _pooled(found):
    return [item for item in found if item.members is not None]


def former_pools(item):
    """The names (str) of the pools a pool ``item`` replaces: the other
    names its functions' pool has had (``common.pooling.pool_name``):
    one per NUMA node they are on, and ``nonuma``, from when pools were
    per NUMA node, and the spanning one's, so that a host whose pools
    were per NUMA node moves them into the pool spanning its nodes, and
    back when its functions are on one node again (set; ``item``'s own
    name excluded)."""
    nodes = {m['std_board_info'].get('numa_node') for m in item.members}
    names = {pooling.pool_name(item, {node}) for node in nodes | {None}}
    names.add(pooling.pool_name(item, {0, 1}))
    return names - {item.subname}


def _former_addresses(item, pooled):
    """The device addresses whose rows move into pool ``item``: its
    members' own, and its former pools' (``former_pools``), except the
    spanning pool's when ``pooled`` has another pool of the same kind
    (per-NUMA-node pools, ``[discovery] pool_numa_span`` false): a
    spanning pool is not split into per-node ones by moving rows
    (``common.pooling.merge`` keeps one that has allocations)."""
    names = former_pools(item)
    kind = (item.driver_name, item.vendor_id, item.product_id, item.pool)
    if any(other is not item and other.subname != item.subname and
           (other.driver_name, other.vendor_id, other.product_id,
            other.pool) == kind for other in pooled):
        names.discard(pooling.pool_name(item, {0, 1}))
    return {m['address'] for m in item.members} | {
        pooling.device_address(n) for n in names}


def replaced_providers(hostname, found):
    """The per-device providers that the pools of ``found`` replace: the
    provider UUID each pool member had as a device of its own, and what
    an HGX board replaces (``_replaced_by_board``) (set of str).  The
    reporter deletes them without counting them as removals
    (``agent.placement.report.Reporter.report``'s ``replaced``): the functions
    are still offered, by the pool or the board.

    :param hostname: the host (str).
    :param found: list of ``drivers.DiscoveredDeployable``.
    """
    replaced = {ids.deployable_ids(hostname, m['address'], None)[1]
                for item in _pooled(found) for m in item.members}
    replaced |= {ids.deployable_ids(
        hostname, pooling.device_address(name), name)[1]
        for item in _pooled(found) for name in former_pools(item)}
    for item in found:
        replaced |= _replaced_by_board(hostname, item)
    return replaced


def _replaced_by_board(hostname, item):
    """The providers an HGX board offered whole (``common.hgx``)
    replaces when a drained host switches to ``full_passthrough``: the
    per-GPU providers of its functions, and the pools its GPUs had
    (set of str; empty for anything but a board)."""
    board = item.std_board_info or {}
    unit = board.get(hgx.UNIT_KEY)
    if not unit:
        return set()
    found = {ids.deployable_ids(hostname, a, None)[1] for a in unit}
    pool = dataclasses.replace(item, pool=pooling.DEFAULT_TAG)
    for nodes in [{n} for n in board.get('numa_nodes', ())] + [
            {None}, {0, 1}]:
        name = pooling.pool_name(pool, nodes)
        found.add(ids.deployable_ids(
            hostname, pooling.device_address(name), name)[1])
    return found


def _old_devices(session, hostname, addresses):
    return list(session.scalars(
        sa.select(models.Device)
        .where(models.Device.hostname == hostname,
               models.Device.address.in_(sorted(addresses)))
        .options(orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attach_handles))))


def moves(session, hostname, found):
    """What a migration of ``hostname`` to the pools of ``found`` moves.

    :param session: an open SQLAlchemy session.
    :param hostname: the host (str).
    :param found: list of ``drivers.DiscoveredDeployable``.
    :returns: list of ``Move``, one per pool whose members the database
        still has as per-device deployables; empty when there is nothing
        to migrate.
    """
    pooled = _pooled(found)
    # One SELECT for every pool: a host that has migrated finds none.
    devices = _old_devices(session, hostname, set().union(
        *(_former_addresses(item, pooled) for item in pooled)))
    result = []
    for item in pooled:
        addresses = _former_addresses(item, pooled)
        old = {dep.rp_uuid: dev.address for dev in devices
               if dev.address in addresses for dep in dev.deployables}
        if not old:
            continue
        result.append(Move(
            pool_rp_uuid=ids.deployable_ids(
                hostname, item.address, item.subname)[1],
            subname=item.subname, resource_class=item.resource_class,
            traits=tuple(sorted(item.traits)), total=len(item.members),
            old=old))
    return result


def _pool_deployable(session, hostname, item, aer_recovery_passes):
    """The pool device and deployable of ``item``, created when missing
    with what ``host_sync`` gives them (it completes them after)."""
    dep_uuid, rp_uuid, _ = ids.deployable_ids(hostname, item.address,
                                              item.subname)
    dep = session.scalar(sa.select(models.Deployable).where(
        models.Deployable.uuid == dep_uuid))
    if dep is not None:
        return dep
    dev = models.Device(
        uuid=ids.stable_uuid('device', hostname, item.address),
        hostname=hostname, address=item.address, type=item.device_type,
        vendor=item.vendor_id, model=item.model, status=device_obj.ENABLED,
        health=discovered.HEALTHY)
    # The members are recorded now, so that host_sync's mass-removal
    # guard counts the pool's functions, as for any pool device.
    dev.std_board_info = dict(item.std_board_info or {}, members=(
        pool_members.judge(dev, hostname, item.members,
                           aer_recovery_passes, None)))
    dep = models.Deployable(
        uuid=dep_uuid, rp_uuid=rp_uuid,
        name=pool_members.deployable_name(hostname, item),
        driver_name=item.driver_name, resource_class=item.resource_class,
        traits=sorted(item.traits), cleaning=item.cleaning,
        num_accelerators=len(item.members))
    dev.deployables.append(dep)
    session.add(dev)
    session.flush()
    return dep


def _carry_taints(pool, dep, address):
    """Give ``pool`` (a pool deployable) the taints of ``dep`` (a member's
    per-device deployable) as taints of the member's function
    ``address``; a key the pool already has there is kept as it is."""
    have = {(t.function, t.key) for t in pool.taints}
    for taint in dep.taints:
        if (address, taint.key) in have:
            continue
        pool.taints.append(models.DeployableTaint(
            uuid=ids.stable_uuid('taint', pool.uuid, address, taint.key),
            function=address, key=taint.key, value=taint.value,
            effect=taint.effect, reason=taint.reason,
            set_by=taint.set_by, created_at=taint.created_at))


def move(session, hostname, found, aer_recovery_passes=3):
    """Move the per-device rows of the pools' members under the pools
    (see the module docstring), in the caller's transaction.

    :param session: an open SQLAlchemy session (the caller commits).
    :param hostname: the host (str).
    :param found: list of ``drivers.DiscoveredDeployable``.
    :param aer_recovery_passes: ``[discovery] aer_recovery_passes``.
    :returns: ``{old rp_uuid: pool rp_uuid}`` of the providers whose rows
        moved; empty when there was nothing to move.
    """
    moved = {}
    pooled = _pooled(found)
    for item in pooled:
        addresses = _former_addresses(item, pooled)
        old = _old_devices(session, hostname, addresses)
        if not old:
            continue
        pool = _pool_deployable(session, hostname, item,
                                aer_recovery_passes)
        for dev in old:
            for dep in dev.deployables:
                moved[dep.rp_uuid] = pool.rp_uuid
                for handle in list(dep.attach_handles):
                    handle.deployable = pool
                _carry_taints(pool, dep, dev.address)
        session.flush()
        for dev in old:
            session.delete(dev)
        LOG.info('Host %s: devices %s moved into pool %s', hostname,
                 ', '.join(sorted(addresses & {d.address for d in old})),
                 item.subname)
    if moved:
        for rp_uuid, pool_rp in moved.items():
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.device_rp_uuid == rp_uuid,
                models.ARQ.hostname == hostname).values(
                device_rp_uuid=pool_rp))
        session.flush()
    return moved
