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

"""Devices of a host and the lifecycle of their attach handles.

The device statuses, health verdicts and attach handle states every other
module compares against are defined here, with what reads and changes
them: listing and showing devices (the Cyborg v2 view of cyborg,
``cyborg/api/controllers/v2/devices.py``, 17.0.0), an operator's
enable/disable, claiming and releasing attach handles, and the cleaning
states between tenants.  Writing a host's rows from discovery is
``objects.host_sync``; deployables (resource providers, reserved units)
are ``objects.deployable``.  ``stable_uuid`` derives every UUID of a
host's rows from (host, PCI address, ...) so they stay the same across
restarts and re-discovery.
"""

import uuid

import sqlalchemy as sa

from accel_backend.db import models
from accel_backend.discovery import drivers as discovery_drivers
from accel_backend import exception
from accel_backend.objects import lookup
from accel_backend import utils

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
#: clean_failed are reserved in Placement
#: (``objects.deployable.reserved_units``).
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
    return lookup.page(session, models.Device,
                       equal=((models.Device.hostname, hostname),
                              (models.Device.type, type_),
                              (models.Device.vendor, vendor)),
                       limit=limit, marker=marker)


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
    """The device with that UUID.

    :param session: an open SQLAlchemy session.
    :param device_uuid: str.
    :returns: ``models.Device``.
    :raises DeviceNotFound: no device has that UUID (404 at the API).
    """
    return lookup.by_column(session, models.Device.uuid, device_uuid,
                            exception.DeviceNotFound)


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
