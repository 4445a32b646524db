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

"""Accelerator requests (ARQs) and their binding state machine.

The states and the transitions allowed between them are those of
:mod:`accel_common.arq_states` (one table, shared with nova_accel);
every change of ``arq.state`` here, in the binder and in the audit goes
through :func:`transition`, which refuses any other.

Every transition is committed before the work it announces is done, so a
restarted service finds ``BindStarted`` ARQs and ARQs with a
``pending_event`` and finishes them (see ``accel_backend.conductor``).
"""

import collections

from oslo_utils import uuidutils
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm as sa_orm

from accel_backend.db import api as db_api
from accel_backend.db import lookup
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import device as device_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend import utils
from accel_common import arq_states
from accel_common import device_profile


BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')

# The statements of the bind path, built once: SQLAlchemy memoizes the
# cache key of a statement object, so a prebuilt statement skips building
# and keying it on every request, which cost about as much CPU as the
# locked read itself (the contributor guide's "Design measurements").
# ``uuids`` is an expanding parameter: a list of ARQ UUIDs.
_UUIDS = sa.bindparam('uuids', expanding=True)
_LOCK_ROWS = (sa.select(models.ARQ.id).where(models.ARQ.uuid.in_(_UUIDS))
              .order_by(models.ARQ.id).with_for_update())
# One INSERT ... RETURNING of every row, not the unit of work's
# per-object bookkeeping, which cost far more CPU for many ARQs; and a
# Core statement on the table, built once, loaded as ``models.ARQ``,
# cheaper again than an ORM bulk insert built per call (the contributor
# guide's "Design measurements").
_INSERT = sa.select(models.ARQ).from_statement(
    sa.insert(models.ARQ.__table__).returning(*models.ARQ.__table__.c))
#: Forget the events sent, of the ARQs whose pending event is still the
#: one sent.  Built once, a Core statement on the table: an ORM UPDATE is
#: annotated again at every execution (see ``conductor.claim``), which made
#: the transaction cost clearly more CPU (the contributor guide's "Design
#: measurements").
_FORGET_EVENTS = (
    sa.update(models.ARQ.__table__)
    .where(models.ARQ.__table__.c.uuid.in_(_UUIDS),
           models.ARQ.__table__.c.pending_event ==
           sa.bindparam('sent_status'))
    .values(pending_event=None))
_LOCKED_READ = (sa.select(models.ARQ).where(models.ARQ.uuid.in_(_UUIDS))
                .order_by(models.ARQ.id).with_for_update()
                .execution_options(populate_existing=True))


def create_for_profile(session, dp, project_id=None):
    """Create ``Initial`` ARQs for a device profile.

    One ARQ per unit of every ``resources:<RC>`` value of every group
    (spec: "N request groups, each asking for M accelerators -> N*M
    ARQs"), each carrying its group index in ``device_profile_group_id``.

    :param dp: ``models.DeviceProfile``.
    :param project_id: owner project (str) or None.
    :returns: list of ``models.ARQ``.
    :raises InvalidDeviceProfile: a stored group breaks the rules of
        ``accel_common.device_profile`` (written before they applied).
    """
    try:
        parsed = device_profile.parse_groups(dp.groups)
    except device_profile.InvalidGroup as e:
        raise exception.InvalidDeviceProfile(reason=str(e))
    rows = [dict(uuid=uuidutils.generate_uuid(), state=arq_states.INITIAL,
                 device_profile_id=dp.id, device_profile_name=dp.name,
                 device_profile_group_id=index, device_profile_group=group,
                 project_id=project_id)
            for index, (group, (resources, _, _)) in enumerate(
                zip(dp.groups, parsed))
            for _ in range(sum(resources.values()))]
    if not rows:
        return []
    by_uuid = {arq.uuid: arq for arq in session.scalars(
        _INSERT, rows)}
    return [by_uuid[row['uuid']] for row in rows]


def create(session, device_profile_name, project_id=None):
    """Create ARQs for the profile named ``device_profile_name``.

    :raises DeviceProfileNotFound: no such profile.
    """
    dp = dp_obj.get_by_name(session, device_profile_name)
    return create_for_profile(session, dp, project_id=project_id)


def lock_all(session, arq_uuids):
    """Lock the rows of ``arq_uuids`` (those that exist) in id order.

    Requests that touch several ARQs (a PATCH of many, a DELETE of many)
    must take their row locks in one order, else two of them on
    PostgreSQL or MySQL can deadlock; ``list_`` (so DELETE) goes by id.
    SQLite has no row locks: its database write lock instead
    (``db.api.write_lock``).
    """
    if session.get_bind().dialect.name == 'sqlite':
        db_api.write_lock(session)
    elif arq_uuids:
        session.execute(_LOCK_ROWS, {'uuids': sorted(arq_uuids)})


def forget_events(session, sent):
    """Forget delivered (or abandoned) ``accelerator-request-bound``
    events, in the caller's write transaction (``Database.write``).

    Rows are locked in id order first, as every multi-ARQ writer locks
    them (a bulk UPDATE alone locks in no defined order and deadlocked
    against concurrent PATCH/DELETE on PostgreSQL); then one UPDATE per
    event status (at most two) on rows already locked.

    :param sent: ``{arq_uuid: status}`` of the events sent; an ARQ whose
        pending event changed since (unbound and bound again) keeps it.
    """
    lock_all(session, sent)
    by_status = collections.defaultdict(list)
    for arq_uuid, status in sent.items():
        by_status[status].append(arq_uuid)
    for status, uuids in sorted(by_status.items()):
        session.execute(_FORGET_EVENTS,
                        {'uuids': sorted(uuids), 'sent_status': status})


def get(session, arq_uuid, for_update=False):
    """The ARQ with that UUID.

    :param session: an open SQLAlchemy session.
    :param arq_uuid: str.
    :param for_update: lock the ARQ until the transaction ends (the
        caller is about to change it): ``SELECT ... FOR UPDATE`` on
        PostgreSQL and MySQL, the database write lock on SQLite
        (``db.api.write_lock``), and the row reloaded rather than taken
        from the session.
    :returns: ``models.ARQ``.
    :raises ARQNotFound: no ARQ has that UUID (404 at the API).
    """
    query = sa.select(models.ARQ).where(models.ARQ.uuid == arq_uuid)
    if for_update:
        db_api.write_lock(session)
        query = query.with_for_update().execution_options(
            populate_existing=True)
    return lookup.one(session, query, exception.ARQNotFound, arq_uuid)


def get_all_for_update(session, arq_uuids):
    """Lock and read the ARQs ``arq_uuids`` (those that exist), in id
    order, current until commit: SQLite's write lock
    (``db.api.write_lock``, no statement inside ``Database.write``) and
    one ``SELECT ... FOR UPDATE`` (the lock on PostgreSQL and MySQL, in
    the one order every multi-ARQ writer uses).

    :param arq_uuids: iterable of ARQ UUIDs (str).
    :returns: list of ``models.ARQ``.
    """
    uuids = sorted(set(arq_uuids))
    if not uuids:
        return []
    db_api.write_lock(session)
    return list(session.scalars(_LOCKED_READ, {'uuids': uuids}))


def list_(session, instance_uuid=None, project_id=None, uuids=None,
          states=None, limit=None, marker=None):
    """ARQs filtered in SQL; ordered by creation.

    :param limit: page size, ``marker``: UUID of the previous page's last
        ARQ (``db.paging``); the marker must be an ARQ of
        ``project_id`` when that is given.
    :raises InvalidMarker: no (visible) ARQ has the marker's UUID.
    """
    where = []
    if uuids is not None:
        where.append(models.ARQ.uuid.in_(list(uuids)))
    if states is not None:
        where.append(models.ARQ.state.in_(list(states)))
    marker_filters = () if project_id is None else (
        models.ARQ.project_id == project_id,)
    return lookup.page(session, models.ARQ,
                       equal=((models.ARQ.instance_uuid, instance_uuid),
                              (models.ARQ.project_id, project_id)),
                       where=where, limit=limit, marker=marker,
                       marker_filters=marker_filters)


def start_binding(session, arq, hostname, device_rp_uuid, instance_uuid,
                  project_id=None):
    """Record a bind request; the binding worker completes it.

    Idempotent: asking again for the binding an ARQ already has (or is
    getting) changes nothing and returns False.

    :param arq: an ``conductor.bind_row.BindRow`` (the caller writes it,
        ``bind_row.write``) or a locked ``models.ARQ``.
    :returns: True when the ARQ moved to ``BindStarted`` (the caller must
        hand it to the binder after commit).
    :raises ARQInvalidState: the ARQ is bound elsewhere or not bindable.
    """
    wanted = (hostname, device_rp_uuid, instance_uuid)
    if arq.state in (arq_states.BIND_STARTED, arq_states.BOUND) and (
            arq.hostname, arq.device_rp_uuid, arq.instance_uuid) == wanted:
        return False
    if arq.state not in arq_states.BINDABLE_STATES:
        raise exception.ARQInvalidState(
            uuid=arq.uuid, state=arq.state, op='bind',
            allowed=', '.join(arq_states.BINDABLE_STATES))
    transition(arq, arq_states.BIND_STARTED)
    arq.hostname, arq.device_rp_uuid, arq.instance_uuid = wanted
    if project_id is not None:
        arq.project_id = project_id
    return True


def transition(arq, target):
    """Move ``arq`` to state ``target`` and record the event it emits.

    ``pending_event`` becomes the transition's event status (delivered to
    Nova after commit by the binder) or None, which also drops an event
    of the previous binding that was not delivered yet.

    :param arq: ``models.ARQ`` or ``conductor.bind_row.BindRow``, locked by
        the caller (``get(..., for_update=True)``, ``bind_row.lock``).
    :param target: a state of ``accel_common.arq_states``.
    :returns: the event status or None.
    :raises accel_common.arq_states.InvalidTransition: the table does not
        allow ``arq.state`` -> ``target``.
    """
    event = arq_states.check(arq.state, target)
    arq.state = target
    arq.pending_event = event
    return event


def release(arq):
    """Give the ARQ's attach handle back (no-op when it has none).

    The handle is not offered again at once: it goes ``dirty`` until the
    cleaner has cleaned it, unless its deployable needs no cleaning
    (``device.release_handle``).
    """
    if arq.attach_handle is not None:
        session = sa_orm.object_session(arq)
        device_obj.release_handle(session, arq.attach_handle)
        arq.attach_handle_id = None
        arq.attach_handle = None


def unbind(arq):
    """Undo a binding: release the device, clear host/RP/instance.

    A no-op for ARQs in no state an unbind leaves (``Initial``,
    ``Unbound``).
    """
    if arq.state not in arq_states.UNBINDABLE_STATES:
        return
    release(arq)
    arq.hostname = arq.device_rp_uuid = arq.instance_uuid = None
    transition(arq, arq_states.UNBOUND)


def delete(session, arq):
    """Release the ARQ's device and delete the row.

    The row is locked and re-read first: a binding that finished since
    ``arq`` was loaded must give its attach handle back too.
    """
    db_api.write_lock(session)
    try:
        session.refresh(arq, with_for_update=True)
    except sa_exc.InvalidRequestError:
        # Deleted meanwhile (Nova retries deletes): nothing left to do.
        session.expunge(arq)
        return
    release(arq)
    session.delete(arq)


def load_handles(session, arqs):
    """Read the attach handles of ``arqs`` (with their deployables) in one
    statement, into the session, so that ``arq.attach_handle`` and
    ``release`` need no statement per ARQ.

    :param arqs: list of ``models.ARQ`` of this session.
    :returns: the list of handles read.  Keep it while the ARQs are used:
        the session holds its objects by weak reference, and handles
        nothing refers to would be read again one by one.
    """
    handle_ids = sorted(a.attach_handle_id for a in arqs
                        if a.attach_handle_id is not None)
    if not handle_ids:
        return []
    return session.scalars(
        sa.select(models.AttachHandle)
        .where(models.AttachHandle.id.in_(handle_ids))
        .options(sa_orm.selectinload(models.AttachHandle.deployable))
    ).all()


def delete_locked(session, arqs):
    """Release the devices of ARQs and delete the rows, as a batch (the
    flush deletes the rows together).

    :param arqs: ``models.ARQ`` rows locked and read by
        ``get_all_for_update`` in this transaction; call ``load_handles``
        first so that releasing costs no statement per ARQ.
    """
    for arq in arqs:
        release(arq)
        session.delete(arq)


def to_dict(arq, base_url):
    """Cyborg v2 wire view of an ARQ.

    As Cyborg 17 (openstack-cyborg 17.0.0, ``cyborg/objects/ext_arq.py``)
    an ARQ without an attach handle has ``attach_handle_type`` ``""``,
    ``attach_handle_info`` ``{}`` and ``attach_handle_uuid`` ``null``.

    :param arq: ``models.ARQ`` (its ``attach_handle`` loaded or loadable).
    :param base_url: the API's ``.../v2`` URL, for the self link.
    :returns: dict.
    """
    handle = arq.attach_handle
    return {
        'uuid': arq.uuid,
        'state': arq.state,
        'device_profile_name': arq.device_profile_name,
        'device_profile_group_id': arq.device_profile_group_id,
        'hostname': arq.hostname,
        'device_rp_uuid': arq.device_rp_uuid,
        'instance_uuid': arq.instance_uuid,
        'project_id': arq.project_id,
        'attach_handle_type': handle.attach_type if handle else '',
        'attach_handle_uuid': handle.uuid if handle else None,
        'attach_handle_info': dict(handle.attach_info) if handle else {},
        'links': [{'href': '%s/accelerator_requests/%s' % (base_url,
                                                           arq.uuid),
                   'rel': 'self'}],
        'created_at': utils.isotime(arq.created_at),
        'updated_at': utils.isotime(arq.updated_at),
    }
