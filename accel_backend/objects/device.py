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
enable/disable, and the writers of attach handle states (releasing,
the cleaning states between tenants), each checked by the state table
``accel_common.handle_states``; claiming is ``conductor.claim``.
Writing a host's rows from discovery is ``conductor.host_sync``;
deployables (resource providers, reserved units) are
``objects.deployable``.  ``common.ids.stable_uuid`` derives every UUID
of a host's rows from (host, PCI address, ...) so they stay the same
across restarts and re-discovery.
"""

import threading

from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

from accel_backend.common import discovered
from accel_backend.db import lookup
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import taint as taint_obj
from accel_backend import utils
from accel_common import handle_states

#: Device statuses.  ``maintaining`` is what Cyborg 17's
#: ``POST /v2/devices/{uuid}/disable`` stores (and shows from 2.3);
#: ``missing`` is ours: vanished from the host while in use.  Only
#: ``enabled`` devices are bound, and every other status keeps the
#: device's inventory reserved in Placement.
ENABLED = 'enabled'
MAINTAINING = 'maintaining'
MISSING = 'missing'

#: Attach handle states, defined with their transitions in
#: ``accel_common.handle_states`` (its module text has the diagram):
#: available -> bound -> dirty -> cleaning -> available | clean_failed.
#: Every state is committed before the work it announces, so a restarted
#: cleaner resumes ``dirty`` and ``cleaning`` handles.  Handles that are
#: dirty, cleaning or clean_failed are reserved in Placement
#: (``objects.deployable.reserved_units``).
#: ``session.info`` key listing handle ids released in the transaction
#: (``release_handle``, ``retry_clean_failed``): its commit runs the
#: engine's ``on_release`` callbacks.
RELEASED_KEY = 'accel_backend.released_handles'

LOG = logging.getLogger(__name__)
_ON_RELEASE = {}
_ON_RELEASE_LOCK = threading.Lock()


def on_release(engine, callback):
    """Call ``callback()`` after each commit, on a session bound to
    ``engine``, of a transaction that released an attach handle (made it
    ``dirty``): how the embedded service's cleaner
    (``agent.cleaning.Cleaner.kick``, through
    ``conductor.store.HostStore.watch_releases``) wakes up at once.

    :param engine: ``sqlalchemy.engine.Engine`` (``Database.engine``).
    :param callback: callable without arguments, run in the committing
        thread after the commit; it must not block.
    """
    with _ON_RELEASE_LOCK:
        _ON_RELEASE.setdefault(engine, []).append(callback)


def forget_release(engine, callback):
    """Undo ``on_release(engine, callback)``; nothing when it was not
    registered."""
    with _ON_RELEASE_LOCK:
        mine = _ON_RELEASE.get(engine, [])
        if callback in mine:
            mine.remove(callback)
        if not mine:
            _ON_RELEASE.pop(engine, None)


def _after_commit(session):
    if not session.info.pop(RELEASED_KEY, None):
        return
    with _ON_RELEASE_LOCK:
        callbacks = list(_ON_RELEASE.get(session.get_bind(), ()))
    for callback in callbacks:
        callback()


def _after_rollback(session):
    session.info.pop(RELEASED_KEY, None)


event.listen(orm.Session, 'after_commit', _after_commit)
event.listen(orm.Session, 'after_rollback', _after_rollback)


def handle_in_use(handle):
    """Whether an attach handle is in use (bool), from its state
    (``accel_common.handle_states.in_use``); read this, not the
    ``in_use`` column, which is written from the state for Cyborg's
    schema.

    :param handle: ``models.AttachHandle`` or a row with ``state``.
    """
    return handle_states.in_use(handle.state)


def in_use_clause(state=models.AttachHandle.state):
    """SQL condition "the handle is in use", on its state column.

    :param state: the ``state`` column (ORM attribute or Core column).
    """
    return state.in_(handle_states.IN_USE_STATES)


def state_clause(state, target, trigger):
    """SQL condition of a conditional UPDATE moving a handle to
    ``target`` on ``trigger``: its state is one of the table's sources,
    checked by the database on the row it locks.

    :param state: the ``state`` column (ORM attribute or Core column).
    :raises accel_common.handle_states.InvalidHandleTransition: the
        trigger never leads to ``target``.
    """
    src = handle_states.sources(target, trigger)
    return state == src[0] if len(src) == 1 else state.in_(src)


def update_values(target, trigger, reason=None):
    """The ``values()`` of a conditional UPDATE moving handles to
    ``target`` on ``trigger`` (with ``state_clause``): ``state``, the
    ``in_use`` derived from it and ``state_reason``.

    :raises accel_common.handle_states.InvalidHandleTransition: the
        trigger never leads to ``target``.
    """
    handle_states.sources(target, trigger)
    return handle_states.columns(target, reason)


def transition(handle, target, trigger, reason=None):
    """Move one loaded attach handle to ``target``, writing ``state``,
    ``in_use`` (derived) and ``state_reason`` together.

    :param handle: ``models.AttachHandle``.
    :param target: a state of ``accel_common.handle_states.STATES``.
    :param trigger: one of ``accel_common.handle_states.TRIGGERS``.
    :param reason: str shown with the state (a cleaning failure), or None.
    :raises accel_common.handle_states.InvalidHandleTransition: the table
        does not allow it; the handle is left unchanged.
    """
    handle_states.check(handle.state, target, trigger)
    values = handle_states.columns(target, reason)
    handle.state = values['state']
    handle.in_use = values['in_use']
    handle.state_reason = values['state_reason']


def new_handle(**fields):
    """A new attach handle found by discovery, ``available``.

    :param fields: the other columns of ``models.AttachHandle`` (``uuid``,
        ``attach_type``, ``attach_info``).
    :returns: ``models.AttachHandle`` (not added to a session).
    """
    handle_states.check(handle_states.NEW, handle_states.AVAILABLE,
                        handle_states.DISCOVER)
    return models.AttachHandle(
        **fields, **handle_states.columns(handle_states.AVAILABLE))


def list_(session, hostname=None, type_=None, vendor=None, limit=None,
          marker=None):
    """Devices filtered in SQL, ordered by ``id`` (discovery order).

    :param limit: page size, ``marker``: UUID of the previous page's last
        device (``db.paging``).
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
    cleaning, or ``quarantined`` when a ``NoExecute`` taint covers it
    (``objects.taint.no_execute_handles``: a failed device, kept out of
    cleaning and resale until the taint is removed,
    ``objects.quarantine.lift``).
    The handle id is noted in ``session.info`` so that the cleaner wakes
    up when the transaction commits.  A handle that was not ``bound`` (a
    row changed by hand) is released all the same, with a warning
    (``accel_common.handle_states``).
    """
    if not handle_in_use(handle):
        LOG.warning('Attach handle %s is released while %s, not bound; '
                    'released all the same', handle.uuid, handle.state)
    if (handle.deployable_id in taint_obj.no_execute_deployable_ids(
            session) and handle.id in taint_obj.no_execute_handles(
                handle.deployable)):
        LOG.warning('Attach handle %s is quarantined: a NoExecute taint '
                    'covers it', handle.uuid)
        transition(handle, handle_states.QUARANTINED,
                   handle_states.QUARANTINE)
        return
    method = handle.deployable.cleaning if handle.deployable else None
    if method in (None, 'none'):
        transition(handle, handle_states.AVAILABLE, handle_states.RELEASE)
        return
    transition(handle, handle_states.DIRTY, handle_states.RELEASE)
    session.info.setdefault(RELEASED_KEY, set()).add(handle.id)


def dirty_providers(handles):
    """Resource provider UUIDs (set) of the ``handles`` (attach handles,
    after a release) that are ``dirty``: their units must be reserved in
    Placement before the release is answered
    (``agent.placement.reserved.ReservedUnits.reserve_released``)."""
    return {h.deployable.rp_uuid for h in handles
            if h is not None and h.state in (handle_states.DIRTY,
                                             handle_states.QUARANTINED) and
            h.deployable is not None and h.deployable.rp_uuid}


def handles_to_clean(session, hostname):
    """UUIDs of the ``dirty`` and ``cleaning`` handles of a host (what a
    cleaner must finish, e.g. after a restart), oldest first."""
    return list(session.scalars(
        sa.select(models.AttachHandle.uuid)
        .join(models.Deployable).join(models.Device)
        .where(models.Device.hostname == hostname,
               models.AttachHandle.state.in_(handle_states.TO_CLEAN_STATES))
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
               state_clause(models.AttachHandle.state, handle_states.CLEANING,
                            handle_states.START_CLEANING))
        .values(update_values(handle_states.CLEANING,
                              handle_states.START_CLEANING))
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def finish_cleaning(session, handle_uuid, error=None):
    """Record the outcome of a cleaning: ``available``, or
    ``clean_failed`` with ``error`` (str) as the reason.

    :returns: the handle's deployable (``models.Deployable``), or None
        when the handle is gone (its device vanished meanwhile).
    """
    handle = get_handle(session, handle_uuid)
    if handle is None or handle.state != handle_states.CLEANING:
        return handle.deployable if handle is not None else None
    if error is None:
        transition(handle, handle_states.AVAILABLE, handle_states.CLEANED)
    else:
        transition(handle, handle_states.CLEAN_FAILED,
                   handle_states.CLEANING_FAILED, error)
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
            if handle.state == handle_states.CLEAN_FAILED:
                transition(handle, handle_states.DIRTY, handle_states.RETRY)
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
    if dev.health == discovered.UNHEALTHY:
        return discovered.UNHEALTHY, dev.health_reason
    handles = [h for dep in dev.deployables for h in dep.attach_handles]
    for state in (handle_states.CLEAN_FAILED, handle_states.CLEANING,
                  handle_states.DIRTY):
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
