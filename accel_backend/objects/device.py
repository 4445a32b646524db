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


def stable_uuid(*parts):
    """Deterministic UUID (str) of the given strings."""
    return str(uuid.uuid5(_NS, '/'.join(parts)))


def provider_name(host_rp_name, address):
    """Name of a device's resource provider: ``<compute RP>_<address>``."""
    return '%s_%s' % (host_rp_name, address)


def sync_host(session, hostname, discovered):
    """Make the rows of ``hostname`` equal to ``discovered``.

    New devices are inserted, changed ones updated, vanished ones deleted
    unless one of their attach handles is in use (then they are kept with
    status ``missing`` until released).

    :param discovered: list of ``DiscoveredDeployable``.
    :returns: list of ``models.Deployable`` present on the host.
    """
    existing = {d.address: d for d in session.scalars(
        sa.select(models.Device).where(models.Device.hostname == hostname)
        .options(orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attach_handles)))}
    present = []
    for item in discovered:
        dev = existing.pop(item.address, None)
        if dev is None:
            dev = models.Device(
                uuid=stable_uuid('device', hostname, item.address),
                hostname=hostname, address=item.address, status=ENABLED)
            session.add(dev)
        dev.type, dev.vendor, dev.model = (item.device_type, item.vendor_id,
                                           item.model)
        dev.std_board_info = item.std_board_info
        if dev.status == MISSING:
            dev.status = ENABLED
        dep = dev.deployables[0] if dev.deployables else None
        if dep is None:
            dep = models.Deployable(
                uuid=stable_uuid('deployable', hostname, item.address),
                rp_uuid=stable_uuid('rp', hostname, item.address),
                name='%s_%s' % (hostname, item.address))
            dev.deployables.append(dep)
        dep.driver_name = item.driver_name
        dep.resource_class = item.resource_class
        dep.traits = sorted(item.traits)
        dep.num_accelerators = len(item.attach_handles)
        _sync_handles(dep, hostname, item.attach_handles)
        present.append(dep)
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
                in_use=False))
    for stale in by_key.values():
        if not stale.in_use:
            dep.attach_handles.remove(stale)


def find_free_handle(session, rp_uuid, hostname):
    """Claim a free attach handle of the deployable behind ``rp_uuid``.

    The claim is a conditional UPDATE (``in_use`` false -> true) checked
    by row count, so two binders never get the same handle even on
    several API workers.

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
               models.AttachHandle.in_use.is_(False))
        .order_by(models.AttachHandle.id)).all()
    for handle in candidates:
        result = session.execute(
            sa.update(models.AttachHandle)
            .where(models.AttachHandle.id == handle.id,
                   models.AttachHandle.in_use.is_(False))
            .values(in_use=True)
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
    session.flush()
    return tuple(d.rp_uuid for d in dev.deployables if d.rp_uuid)


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
        view['status'] = dev.status
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
