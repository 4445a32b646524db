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

"""Host synchronisation: the database rows of a host made equal to what
discovery found on it.

``sync`` inserts, updates and deletes the devices, deployables, attach
handles and attributes of one host in the caller's transaction.  Every
UUID is derived from (host, PCI address, ...) with
``common.ids.stable_uuid``, so rows and resource providers keep their
identity across restarts and re-discovery.  A device or deployable
that vanished while one of its attach handles is in use, or
quarantined (released under a ``NoExecute`` taint: a failed device a
guest used), is kept (the device as ``missing``): until it is released,
or, quarantined, until it comes back (then cleaned before it is offered
again) or an operator forgets it (``accel-backend-manage device
forget``).
"""

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import orm

from accel_backend.common import aer
from accel_backend.common import discovered
from accel_backend.common import hgx
from accel_backend.common import ids
from accel_backend.common import removal
from accel_backend.conductor import config_taints
from accel_backend.conductor import health_taints
from accel_backend.db import models
from accel_backend.objects import attribute as attribute_obj
from accel_backend.objects import device as device_obj
from accel_backend.objects import pool_members
from accel_common import handle_states

LOG = logging.getLogger(__name__)


def sync(session, hostname, discovered, max_removal_share=1.0,
         force=False, health_changes=None, aer_recovery_passes=3,
         taint_changes=None):
    """Make the rows of ``hostname`` equal to ``discovered``.

    New devices are inserted, changed ones updated, vanished ones deleted
    unless one of their attach handles is in use (then they are kept with
    status ``missing`` until released).  A device may have several
    deployables (``subname``, e.g. one per mdev type); a deployable that
    vanished is deleted unless in use.  The driver's health verdict is
    stored on the device, and each health fault is a taint
    (``conductor.health_taints``).  Nothing is committed: the caller's
    transaction holds the changes (flushed before returning).

    :param session: an open SQLAlchemy session
        (``accel_backend.db.api.Database.transaction``).
    :param hostname: the host whose rows are synchronised (str).
    :param discovered: list of ``DiscoveredDeployable``
        (``accel_backend.agent.discovery.drivers``), every deployable found on
        the host.
    :param max_removal_share: largest share (0.0 to 1.0) of the host's
        devices this call may delete (``common.removal``); 1.0 never
        refuses.
    :param force: delete whatever vanished (an operator's ``--force``).
    :param health_changes: a list that gets, for each device whose health
        verdict changed, a dict of the ``DevicePayload`` fields
        (``accel_backend.notifications``), to notify after the commit.
    :param aer_recovery_passes: passes without a new fatal AER error
        before a device is healthy again (``common.aer``).
    :param taint_changes: a list that gets ``('taint', payload)`` or
        ``('untaint', payload)`` for each health or ``config_taints``
        taint set or removed (``objects.taint.payload``), to notify.
    :returns: list of ``models.Deployable`` present on the host.
    :raises MassRemovalRefused: more would be deleted; nothing changed.
    """
    existing = {d.address: d for d in session.scalars(
        sa.select(models.Device).where(models.Device.hostname == hostname)
        .options(orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attach_handles),
                 orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attributes),
                 orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.taints)))}
    by_address = {}
    for item in discovered:
        by_address.setdefault(item.address, []).append(item)
    _check_removals(hostname, existing.values(), discovered,
                    max_removal_share, force)
    # Vanished devices go first: a function that moved into or out of a
    # pool (discovery.pooling) keeps its handle UUID, which the new row
    # can only take once the old one is deleted; one still in use keeps
    # its handle, and the new row waits (``taken``) until it is released.
    present = _vanished_devices(session, hostname, [
        existing.pop(a) for a in list(existing) if a not in by_address])
    session.flush()
    taken = {h.uuid for dep in present for h in dep.attach_handles}
    for address, items in by_address.items():
        dev = existing.pop(address, None)
        if dev is None:
            dev = models.Device(
                uuid=ids.stable_uuid('device', hostname, address),
                hostname=hostname, address=address,
                status=device_obj.ENABLED)
            session.add(dev)
        _update_device(dev, hostname, items, health_changes,
                       aer_recovery_passes)
        present.extend(_sync_deployables(dev, hostname, items, taken))
    session.flush()
    devices = {id(dep.device): dep.device for dep in present}
    for dev in devices.values():
        added, removed = health_taints.reconcile(session, dev)
        if dev.address in by_address:
            more = config_taints.reconcile(session, dev,
                                           by_address[dev.address])
            added, removed = added + more[0], removed + more[1]
        if taint_changes is not None:
            taint_changes.extend([('taint', p) for p in added] +
                                 [('untaint', p) for p in removed])
    return present


def check_removals(session, hostname, discovered, max_removal_share=1.0,
                   force=False):
    """The mass-removal guard of ``sync`` alone, changing nothing: a
    pass that would be refused is refused before it changes anything
    elsewhere (``agent.placement.reshape.migrate``).

    :param session: an open SQLAlchemy session.
    :param hostname: the host (str).
    :param discovered: list of ``DiscoveredDeployable``.
    :param max_removal_share: as ``sync``'s (float).
    :param force: as ``sync``'s (bool).
    :raises MassRemovalRefused: ``sync`` would refuse.
    """
    devices = session.scalars(
        sa.select(models.Device).where(models.Device.hostname == hostname)
        .options(orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attach_handles)))
    _check_removals(hostname, devices, discovered, max_removal_share, force)


def _check_removals(hostname, devices, discovered, max_removal_share,
                    force):
    """Count the functions behind ``devices`` that ``discovered`` lacks
    and that are not in use (``common.removal``)."""
    units = {}
    for dev in devices:
        units.update(_units(dev))
    found = {address for item in discovered
             for address in _item_addresses(item)}
    removal.check(hostname, 'devices', len(units), [
        address for address, used in units.items()
        if address not in found and not used], max_removal_share, force)


def _item_addresses(item):
    """The PCI functions behind one ``DiscoveredDeployable``: each member
    of a pool, each function of a board (``common.hgx.UNIT_KEY``), or
    its own address."""
    if item.members:
        return [m['address'] for m in item.members]
    return (item.std_board_info or {}).get(hgx.UNIT_KEY) or [item.address]


def _in_use(dep):
    """Whether ``dep`` must outlive its disappearance: a handle held by
    an ARQ, or quarantined (``handle_states.kept``)."""
    return any(handle_states.kept(h.state) for h in dep.attach_handles)


def _device_in_use(dev):
    return any(_in_use(dep) for dep in dev.deployables)


_handle_key = pool_members.handle_key


def _units(dev):
    """``{PCI address: kept}`` of the functions behind ``dev``: the
    device itself, or each member of a pool device
    (``common.pooling``), so that the mass-removal guard counts
    functions (one held or quarantined is kept, not removed)."""
    members = (dev.std_board_info or {}).get('members')
    if members is None:
        used = _device_in_use(dev)
        return {address: used for address in
                (dev.std_board_info or {}).get(hgx.UNIT_KEY) or
                [dev.address]}
    used = {_handle_key(h.attach_type, h.attach_info)
            for dep in dev.deployables for h in dep.attach_handles
            if handle_states.kept(h.state)}
    return {address: _handle_key(*m['handle']) in used
            for address, m in members.items()}


def _update_device(dev, hostname, items, health_changes,
                   aer_recovery_passes):
    """Copy what discovery found of one device (``items``, its
    ``DiscoveredDeployable``, at least one) onto ``dev``: identity, board
    info, and the health verdict of the driver and of AER."""
    first = items[0]
    dev.type, dev.vendor, dev.model = (first.device_type,
                                       first.vendor_id, first.model)
    board = dict(first.std_board_info or {})
    if first.members is None:
        aer_reason = aer.verdict(dev.std_board_info, board,
                                 aer_recovery_passes)
    else:
        aer_reason = None
        board['members'] = pool_members.judge(
            dev, hostname, first.members, aer_recovery_passes,
            health_changes)
    dev.std_board_info = board
    if dev.status == device_obj.MISSING:
        dev.status = device_obj.ENABLED
    reasons = [i.health_reason for i in items
               if i.health != discovered.HEALTHY] + [
                   r for r in (aer_reason,) if r]
    _set_health(dev, hostname, reasons, health_changes)


def _set_health(dev, hostname, reasons, health_changes):
    """Store the health verdict (``reasons``: why unhealthy, empty when
    healthy), logging and collecting a change for ``health_changes``."""
    health = discovered.UNHEALTHY if reasons else discovered.HEALTHY
    if health != dev.health and health == discovered.UNHEALTHY:
        LOG.warning('Device %s on %s is unhealthy: %s', dev.address,
                    hostname, reasons[0])
    elif health != dev.health and dev.health is not None:
        LOG.info('Device %s on %s is healthy again', dev.address, hostname)
    reason = reasons[0] if reasons else None
    if health_changes is not None and dev.health is not None and (
            health, reason) != (dev.health, dev.health_reason):
        health_changes.append(dict(
            uuid=dev.uuid, hostname=hostname, address=dev.address,
            type=dev.type, vendor=dev.vendor, model=dev.model,
            status=dev.status, health=health, health_reason=reason,
            previous_health=dev.health))
    dev.health = health
    dev.health_reason = reason


def _sync_deployables(dev, hostname, items, taken=frozenset()):
    """Make the deployables of ``dev`` those of ``items``; one that
    vanished is deleted unless in use.

    :returns: list of the device's ``models.Deployable`` kept.
    """
    present = []
    deps = {d.uuid: d for d in dev.deployables}
    for item in items:
        dep_uuid, rp_uuid, name = ids.deployable_ids(hostname, dev.address,
                                                     item.subname)
        dep = deps.pop(dep_uuid, None)
        if dep is None:
            dep = models.Deployable(uuid=dep_uuid, rp_uuid=rp_uuid,
                                    name=name)
            dev.deployables.append(dep)
        if item.deployable_name:
            dep.name = item.deployable_name
        dep.driver_name = item.driver_name
        dep.resource_class = item.resource_class
        dep.traits = sorted(item.traits)
        dep.cleaning = item.cleaning
        if item.members is None:
            _sync_handles(dep, hostname, item.attach_handles, taken=taken)
            dep.num_accelerators = len(dep.attach_handles)
        else:
            dep.name = pool_members.deployable_name(hostname, item)
            offered, withheld = pool_members.split(dev)
            _sync_handles(dep, hostname, offered, withheld, taken)
            dep.num_accelerators = pool_members.total(
                item.members, dep.attach_handles)
        board = dev.std_board_info or {}
        attribute_obj.sync_discovered(
            dep, attribute_obj.discovered(
                dep.resource_class, dep.traits, board.get('slot'),
                board.get('iommu_group'), board.get(discovered.FUNCTIONS_KEY)),
            lambda key, d=dep: ids.stable_uuid(
                'attribute', d.uuid, key))
        present.append(dep)
    for dep in deps.values():
        if _in_use(dep):
            LOG.warning('Deployable %s on %s vanished but is in use; '
                        'keeping it until it is released', dep.name,
                        hostname)
            present.append(dep)
        else:
            dev.deployables.remove(dep)
    return present


def _vanished_devices(session, hostname, devs):
    """Delete the devices ``devs`` discovery no longer finds, but keep
    those in use as ``missing`` until released.

    :returns: list of the kept devices' ``models.Deployable``.
    """
    present = []
    for dev in devs:
        if _device_in_use(dev):
            LOG.warning('Device %s on %s vanished but is in use or '
                        'quarantined; keeping it as missing until it is '
                        'released or comes back', dev.address, hostname)
            # A device an operator disabled stays disabled (and so
            # reserved) when it comes back.
            if dev.status == device_obj.ENABLED:
                dev.status = device_obj.MISSING
            present.extend(dev.deployables)
        else:
            LOG.info('Device %s on %s vanished; removing it', dev.address,
                     hostname)
            session.delete(dev)
    return present


def _sync_handles(dep, hostname, handles, withheld=(), taken=frozenset()):
    """Make ``dep``'s attach handles those of ``handles`` (list of
    ``(attach_type, attach_info)``); a stale one is deleted unless in use.
    A new handle whose UUID is in ``taken`` (held by a vanished device
    still in use) is not created yet.
    A handle of ``withheld`` (keys of functions not offered now: an
    unhealthy pool member) that exists is deleted only when
    ``available``: one a guest may have used stays to be cleaned."""
    withheld = set(withheld)
    by_key = {_handle_key(h.attach_type, h.attach_info): h
              for h in dep.attach_handles}
    for attach_type, info in handles:
        key = _handle_key(attach_type, info)
        handle_uuid = ids.stable_uuid(
            'handle', hostname, attach_type,
            *['%s=%s' % kv for kv in key[1]])
        found = by_key.pop(key, None)
        if found is None and handle_uuid not in taken:
            dep.attach_handles.append(device_obj.new_handle(
                uuid=handle_uuid, attach_type=attach_type,
                attach_info=dict(info)))
        elif (found is not None and dict(found.attach_info) != info and
                not device_obj.handle_in_use(found)):
            # Its companions changed (discovered.FUNCTIONS_KEY); a handle in
            # use keeps what its guest got until it is released.
            found.attach_info = dict(info)
    for key, stale in by_key.items():
        if device_obj.handle_in_use(stale) or (
                key in withheld and
                stale.state != handle_states.AVAILABLE):
            continue
        dep.attach_handles.remove(stale)
