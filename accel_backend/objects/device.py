"""Devices, deployables and attach handles of a host.

``sync_host`` makes the database match what discovery found on a host;
resource provider UUIDs are derived from (host, PCI address) so they stay
the same across restarts and re-discovery.
"""

import uuid

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy import orm

from accel_backend.db import models
from accel_backend import exception
from accel_backend.discovery import drivers as discovery_drivers
from accel_backend.discovery import removal
from accel_backend.objects import attribute as attribute_obj
from accel_backend.objects import paging
from accel_backend import utils

LOG = logging.getLogger(__name__)
_NS = uuid.UUID('6f0e3d42-3c1b-4f8e-9a57-1d1c4c0a2b7e')

#: Device statuses.  ``maintaining`` is what Cyborg 17's
#: ``POST /v2/devices/{uuid}/disable`` stores (and shows from 2.3);
#: ``missing`` is ours: vanished from the host while in use.  Only
#: ``enabled`` devices are bound, and every other status keeps the
#: device's inventory reserved in Placement.
ENABLED = 'enabled'
MAINTAINING = 'maintaining'
MISSING = 'missing'

#: Device health, the discovery driver's verdict, defined with the record
#: drivers return (``accel_backend.discovery.drivers``).
HEALTHY = discovery_drivers.HEALTHY
UNHEALTHY = discovery_drivers.UNHEALTHY

#: Attach handle lifecycle between tenants (Triton RFD 114)::
#:
#:   available --claim--> bound --release--> dirty --cleaner--> cleaning
#:   cleaning --ok--> available      cleaning --fails--> clean_failed
#:
#: A release goes straight to ``available`` when the deployable's
#: cleaning step is ``none``.  Every state is committed before the work
#: it announces, so a restarted cleaner resumes ``dirty`` and
#: ``cleaning`` handles.  Handles that are dirty, cleaning or
#: clean_failed are reserved in Placement (``reserved_units``).
AVAILABLE = 'available'
BOUND = 'bound'
DIRTY = 'dirty'
CLEANING = 'cleaning'
CLEAN_FAILED = 'clean_failed'
OUT_OF_SERVICE = (DIRTY, CLEANING, CLEAN_FAILED)
#: ``session.info`` key listing handle ids released in the transaction
#: (the cleaner wakes up on commit).
RELEASED_KEY = 'accel_backend.released_handles'


def stable_uuid(*parts):
    """Deterministic UUID (str) of the given strings."""
    return str(uuid.uuid5(_NS, '/'.join(parts)))


def provider_name(host_rp_name, address, subname=None):
    """Name of a deployable's resource provider: ``<compute RP>_<address>``
    (``_<subname>`` added for one of several deployables of a device)."""
    name = '%s_%s' % (host_rp_name, address)
    return '%s_%s' % (name, subname) if subname else name


def _dep_ids(hostname, address, subname):
    parts = (hostname, address) + ((subname,) if subname else ())
    return (stable_uuid('deployable', *parts), stable_uuid('rp', *parts),
            '_'.join(parts))


def sync_host(session, hostname, discovered, max_removal_share=1.0,
              force=False, health_changes=None):
    """Make the rows of ``hostname`` equal to ``discovered``.

    New devices are inserted, changed ones updated, vanished ones deleted
    unless one of their attach handles is in use (then they are kept with
    status ``missing`` until released).  A device may have several
    deployables (``subname``, e.g. one per mdev type); a deployable that
    vanished is deleted unless in use.  The driver's health verdict is
    stored on the device.

    :param discovered: list of ``DiscoveredDeployable``.
    :param max_removal_share: largest share (0.0 to 1.0) of the host's
        devices this call may delete (``discovery.removal``); 1.0 never
        refuses.
    :param force: delete whatever vanished (an operator's ``--force``).
    :param health_changes: a list that gets, for each device whose health
        verdict changed, a dict of the ``DevicePayload`` fields
        (``accel_backend.notifications``), to notify after the commit.
    :returns: list of ``models.Deployable`` present on the host.
    :raises MassRemovalRefused: more would be deleted; nothing changed.
    """
    existing = {d.address: d for d in session.scalars(
        sa.select(models.Device).where(models.Device.hostname == hostname)
        .options(orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attach_handles),
                 orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attributes)))}
    by_address = {}
    for item in discovered:
        by_address.setdefault(item.address, []).append(item)
    removal.check(hostname, 'devices', len(existing), [
        address for address, dev in existing.items()
        if address not in by_address and not any(
            h.in_use for dep in dev.deployables for h in dep.attach_handles)],
        max_removal_share, force)
    present = []
    for address, items in by_address.items():
        first = items[0]
        dev = existing.pop(address, None)
        if dev is None:
            dev = models.Device(
                uuid=stable_uuid('device', hostname, address),
                hostname=hostname, address=address, status=ENABLED)
            session.add(dev)
        dev.type, dev.vendor, dev.model = (first.device_type,
                                           first.vendor_id, first.model)
        dev.std_board_info = first.std_board_info
        if dev.status == MISSING:
            dev.status = ENABLED
        unhealthy = [i for i in items if i.health != HEALTHY]
        health = UNHEALTHY if unhealthy else HEALTHY
        if health != dev.health and health == UNHEALTHY:
            LOG.warning('Device %s on %s is unhealthy: %s', address,
                        hostname, unhealthy[0].health_reason)
        elif health != dev.health and dev.health is not None:
            LOG.info('Device %s on %s is healthy again', address, hostname)
        reason = unhealthy[0].health_reason if unhealthy else None
        if health_changes is not None and dev.health is not None and (
                health, reason) != (dev.health, dev.health_reason):
            health_changes.append(dict(
                uuid=dev.uuid, hostname=hostname, address=address,
                type=dev.type, vendor=dev.vendor, model=dev.model,
                status=dev.status, health=health, health_reason=reason,
                previous_health=dev.health))
        dev.health = health
        dev.health_reason = reason
        deps = {d.uuid: d for d in dev.deployables}
        for item in items:
            dep_uuid, rp_uuid, name = _dep_ids(hostname, address,
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
            _sync_handles(dep, hostname, item.attach_handles)
            board = dev.std_board_info or {}
            attribute_obj.sync_discovered(
                dep, attribute_obj.discovered(
                    dep.resource_class, dep.traits, board.get('slot'),
                    board.get('iommu_group')),
                lambda key, d=dep: stable_uuid('attribute', d.uuid, key))
            dep.num_accelerators = len(dep.attach_handles)
            present.append(dep)
        for dep in deps.values():
            if any(h.in_use for h in dep.attach_handles):
                LOG.warning('Deployable %s on %s vanished but is in use; '
                            'keeping it until it is released', dep.name,
                            hostname)
                present.append(dep)
            else:
                dev.deployables.remove(dep)
    for dev in existing.values():
        if any(h.in_use for dep in dev.deployables
               for h in dep.attach_handles):
            LOG.warning('Device %s on %s vanished but is in use; keeping '
                        'it as missing until it is released', dev.address,
                        hostname)
            # A device an operator disabled stays disabled (and so
            # reserved) when it comes back.
            if dev.status == ENABLED:
                dev.status = MISSING
            present.extend(dev.deployables)
        else:
            LOG.info('Device %s on %s vanished; removing it', dev.address,
                     hostname)
            session.delete(dev)
    session.flush()
    return present


def _sync_handles(dep, hostname, handles):
    by_key = {(h.attach_type, tuple(sorted(h.attach_info.items()))): h
              for h in dep.attach_handles}
    for attach_type, info in handles:
        key = (attach_type, tuple(sorted(info.items())))
        if by_key.pop(key, None) is None:
            dep.attach_handles.append(models.AttachHandle(
                uuid=stable_uuid('handle', hostname, attach_type,
                                 *['%s=%s' % kv for kv in key[1]]),
                attach_type=attach_type, attach_info=dict(info),
                in_use=False, state=AVAILABLE))
    for stale in by_key.values():
        if not stale.in_use:
            dep.attach_handles.remove(stale)


def find_free_handle(session, rp_uuid, hostname):
    """Claim a free attach handle of the deployable behind ``rp_uuid``.

    Only ``available`` handles of enabled, healthy devices are claimed
    (never one that is dirty or being cleaned).  The claim is a
    conditional UPDATE (``in_use`` false -> true) checked by row count,
    so two binders never get the same handle even on several API
    workers.

    :returns: the claimed ``models.AttachHandle`` or None (no deployable
        on that RP and host, or all its handles are in use).
    """
    candidates = session.scalars(
        sa.select(models.AttachHandle)
        .join(models.Deployable)
        .join(models.Device)
        .where(models.Deployable.rp_uuid == rp_uuid,
               models.Device.hostname == hostname,
               models.Device.status == ENABLED,
               models.Device.health == HEALTHY,
               models.AttachHandle.in_use.is_(False),
               models.AttachHandle.state == AVAILABLE)
        .order_by(models.AttachHandle.id)).all()
    for handle in candidates:
        result = session.execute(
            sa.update(models.AttachHandle)
            .where(models.AttachHandle.id == handle.id,
                   models.AttachHandle.in_use.is_(False),
                   models.AttachHandle.state == AVAILABLE)
            .values(in_use=True, state=BOUND, state_reason=None)
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            session.refresh(handle)
            return handle
    return None


def list_(session, hostname=None, type_=None, vendor=None, limit=None,
          marker=None):
    """Devices filtered in SQL, ordered by ``id`` (discovery order).

    :param limit: page size, ``marker``: UUID of the previous page's last
        device (``objects.paging``).
    :raises InvalidMarker: no device has the marker's UUID.
    """
    query = sa.select(models.Device)
    if hostname is not None:
        query = query.where(models.Device.hostname == hostname)
    if type_ is not None:
        query = query.where(models.Device.type == type_)
    if vendor is not None:
        query = query.where(models.Device.vendor == vendor)
    query = paging.paginate(session, query, models.Device, limit, marker)
    return list(session.scalars(query))


def list_deployables(session, limit=None, marker=None):
    """Deployables ordered by ``id``, one page (``objects.paging``).

    :raises InvalidMarker: no deployable has the marker's UUID.
    """
    query = paging.paginate(session, sa.select(models.Deployable),
                            models.Deployable, limit, marker)
    return list(session.scalars(query))


def get_deployable(session, deployable_uuid):
    """:raises DeployableNotFound: no deployable has that UUID."""
    dep = session.scalar(sa.select(models.Deployable).where(
        models.Deployable.uuid == deployable_uuid))
    if dep is None:
        raise exception.DeployableNotFound(ident=deployable_uuid)
    return dep


def set_status(session, dev, status):
    """Record an operator's ``enabled`` / ``maintaining`` (disabled).

    :raises DeviceMissing: enabling a device that has vanished from its
        host (kept only while in use).
    :returns: ``(rp_uuid, ...)`` of the device's deployables, whose
        Placement inventory the caller must now (un)reserve.
    """
    if status == ENABLED and dev.status == MISSING:
        raise exception.DeviceMissing(uuid=dev.uuid)
    dev.status = status
    if status == ENABLED:
        # Enabling is how an operator says "fixed": failed cleanings are
        # tried again (the cleaner wakes up on commit).
        retry_clean_failed(session, dev)
    session.flush()
    return tuple(d.rp_uuid for d in dev.deployables if d.rp_uuid)


def release_handle(session, handle):
    """Give an attach handle back after its ARQ let go of it.

    It becomes ``dirty`` (reserved in Placement until the cleaner has
    cleaned it), or ``available`` at once when its deployable needs no
    cleaning.  The handle id is noted in ``session.info`` so that the
    cleaner wakes up when the transaction commits.
    """
    handle.in_use = False
    method = handle.deployable.cleaning if handle.deployable else None
    if method in (None, 'none'):
        handle.state = AVAILABLE
        handle.state_reason = None
        return
    handle.state = DIRTY
    handle.state_reason = None
    session.info.setdefault(RELEASED_KEY, set()).add(handle.id)


def reserved_units(dep):
    """Units of ``dep``'s inventory Placement must keep out of
    scheduling: all of them when the device is not enabled (disabled,
    missing) or unhealthy, else one per handle that is dirty, being
    cleaned or failed cleaning."""
    total = dep.num_accelerators or 0
    dev = dep.device
    if dev.status != ENABLED or dev.health == UNHEALTHY:
        return total
    return min(total, sum(1 for h in dep.attach_handles
                          if h.state in OUT_OF_SERVICE))


def reserved_units_of_rp(session, rp_uuid):
    """``reserved_units`` of the deployable behind ``rp_uuid``, None when
    no deployable has that provider."""
    dep = session.scalar(sa.select(models.Deployable).where(
        models.Deployable.rp_uuid == rp_uuid))
    return None if dep is None else reserved_units(dep)


def handles_to_clean(session, hostname):
    """UUIDs of the ``dirty`` and ``cleaning`` handles of a host (what a
    cleaner must finish, e.g. after a restart), oldest first."""
    return list(session.scalars(
        sa.select(models.AttachHandle.uuid)
        .join(models.Deployable).join(models.Device)
        .where(models.Device.hostname == hostname,
               models.AttachHandle.state.in_((DIRTY, CLEANING)))
        .order_by(models.AttachHandle.id)))


def get_handle(session, handle_uuid):
    """The attach handle with that UUID, or None."""
    return session.scalar(sa.select(models.AttachHandle).where(
        models.AttachHandle.uuid == handle_uuid))


def start_cleaning(session, handle_uuid):
    """Move a ``dirty`` handle to ``cleaning`` (a ``cleaning`` one, left
    by a crash, stays): a conditional UPDATE, so two cleaners never
    clean one handle.

    :returns: True when the caller now owns the cleaning.
    """
    result = session.execute(
        sa.update(models.AttachHandle)
        .where(models.AttachHandle.uuid == handle_uuid,
               models.AttachHandle.in_use.is_(False),
               models.AttachHandle.state.in_((DIRTY, CLEANING)))
        .values(state=CLEANING, state_reason=None)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def finish_cleaning(session, handle_uuid, error=None):
    """Record the outcome of a cleaning: ``available``, or
    ``clean_failed`` with ``error`` (str) as the reason.

    :returns: the handle's deployable (``models.Deployable``), or None
        when the handle is gone (its device vanished meanwhile).
    """
    handle = get_handle(session, handle_uuid)
    if handle is None or handle.state != CLEANING:
        return handle.deployable if handle is not None else None
    handle.state = AVAILABLE if error is None else CLEAN_FAILED
    handle.state_reason = error
    session.flush()
    return handle.deployable


def retry_clean_failed(session, dev):
    """Send the ``clean_failed`` handles of ``dev`` back to ``dirty``
    (an operator enabled the device again: clean it once more).

    :returns: number of handles sent back.
    """
    n = 0
    for dep in dev.deployables:
        for handle in dep.attach_handles:
            if handle.state == CLEAN_FAILED and not handle.in_use:
                handle.state, handle.state_reason = DIRTY, None
                session.info.setdefault(RELEASED_KEY, set()).add(handle.id)
                n += 1
    return n


def status_of(dev):
    """``(status, reason)`` shown for a device from microversion 2.3.

    The operator's status (``maintaining``) and ``missing`` come first,
    then ``unhealthy`` (the driver's verdict), then the handles'
    lifecycle: ``clean_failed`` (with the failure), ``cleaning``,
    ``dirty``; else ``enabled``.
    """
    if dev.status != ENABLED:
        return dev.status, None
    if dev.health == UNHEALTHY:
        return UNHEALTHY, dev.health_reason
    handles = [h for dep in dev.deployables for h in dep.attach_handles]
    for state in (CLEAN_FAILED, CLEANING, DIRTY):
        hit = [h for h in handles if h.state == state]
        if hit:
            return state, hit[0].state_reason
    return ENABLED, None


def get(session, device_uuid):
    """:raises DeviceNotFound: no device has that UUID."""
    dev = session.scalar(sa.select(models.Device).where(
        models.Device.uuid == device_uuid))
    if dev is None:
        raise exception.DeviceNotFound(ident=device_uuid)
    return dev


def to_dict(dev, base_url, with_status=False):
    """Cyborg v2 view of a device; ``status`` from microversion 2.3."""
    view = {
        'uuid': dev.uuid, 'type': dev.type, 'vendor': dev.vendor,
        'model': dev.model, 'hostname': dev.hostname,
        'std_board_info': dev.std_board_info,
        'vendor_board_info': dev.vendor_board_info,
        'created_at': utils.isotime(dev.created_at),
        'updated_at': utils.isotime(dev.updated_at),
        'links': [{'href': '%s/devices/%s' % (base_url, dev.uuid),
                   'rel': 'self'}],
    }
    if with_status:
        status, reason = status_of(dev)
        view['status'] = status
        if reason:
            view['status_reason'] = reason
    return view


def deployable_to_dict(dep, base_url):
    """Cyborg v2 view of a deployable."""
    return {
        'uuid': dep.uuid, 'name': dep.name, 'rp_uuid': dep.rp_uuid,
        'num_accelerators': dep.num_accelerators,
        'device_id': dep.device_id, 'driver_name': dep.driver_name,
        'parent_id': None, 'root_id': None,
        'created_at': utils.isotime(dep.created_at),
        'updated_at': utils.isotime(dep.updated_at),
        'links': [{'href': '%s/deployables/%s' % (base_url, dep.uuid),
                   'rel': 'self'}],
    }
