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

"""Set-based claim of attach handles: every ARQ of one PATCH in one
transaction, whatever their number.

The binder used to claim one handle per ARQ, each in its own transaction
(a re-read, a SELECT of every candidate handle, a conditional UPDATE and a
refresh per ARQ).  Here the whole batch costs a fixed number of
statements: one SELECT of the free handles of every resource provider the
batch names, and one conditional ``UPDATE ... RETURNING`` claiming the
chosen ones and loading them.  ``RETURNING`` says exactly which rows this
transaction got, so a handle another binder (another API worker,
PostgreSQL) claimed in between is simply not in the answer; the ARQs left
without a handle try the next free ones, for at most ``ROUNDS`` rounds.
Databases without ``UPDATE ... RETURNING`` claim row by row, checked by
row count.

The claim is what makes "never two ARQs on one handle" hold: the UPDATE's
``state = 'available'`` condition (the claim's sources in the state table,
``accel_common.handle_states``) is evaluated on the current row under the
row's write lock, on every backend.  This module is the only claimer of
attach handles; its UPDATEs write the state and the ``in_use`` flag the
table derives from it (``objects.device.update_values``).
"""

import collections

import sqlalchemy as sa

from accel_backend.common import discovered
from accel_backend.db import models
from accel_backend.objects import device as device_obj
from accel_backend.objects import taint as taint_obj
from accel_common import handle_states
from accel_common import tolerations

#: Claim rounds before the ARQs still without a handle fail.  Each round
#: after the first only happens when a concurrent binder took a handle
#: this one had chosen.
ROUNDS = 3


# Built once (see ``objects.arq``): a prebuilt statement's cache key is
# memoized, so ``_free_handles`` does not pay for building and keying its
# statement on every call (the contributor guide's "Design
# measurements").
#
# Every statement here is a Core statement on the tables, and the claimed
# handles come back as Core rows of ``attach_handles`` (the binder's
# ``conductor.bind_row.BindRow`` holds one): SQLAlchemy 2.0's ORM UPDATE
# annotates the statement at every execution
# (``BulkORMUpdate.orm_pre_session_exec``), so its cache key, subquery
# included, was built anew each time, which made it cost clearly more CPU
# than the same Core UPDATE (the contributor guide's "Design
# measurements"), and loading ORM objects from the rows cost more again
# (see ``conductor.bind_row.BindRow``).
_HANDLES = models.AttachHandle.__table__
_DEPLOYABLES = models.Deployable.__table__
_DEVICES = models.Device.__table__
#: The one statement of "a free handle", checked again by every claiming
#: UPDATE on the row it locks.
_FREE_ROW = device_obj.state_clause(_HANDLES.c.state, handle_states.BOUND,
                                    handle_states.CLAIM)
#: What every claim writes: ``bound``, in use, no reason.
_CLAIMED = device_obj.update_values(handle_states.BOUND, handle_states.CLAIM)
_FREE_HANDLES = (
    sa.select(_HANDLES.c.id, _DEPLOYABLES.c.rp_uuid, _DEVICES.c.hostname,
              _HANDLES.c.deployable_id, taint_obj.TAINTED)
    .join(_DEPLOYABLES, _HANDLES.c.deployable_id == _DEPLOYABLES.c.id)
    .join(_DEVICES, _DEPLOYABLES.c.device_id == _DEVICES.c.id)
    .where(_DEPLOYABLES.c.rp_uuid.in_(sa.bindparam('rps', expanding=True)),
           _DEVICES.c.hostname.in_(sa.bindparam('hosts', expanding=True)),
           _DEVICES.c.status == device_obj.ENABLED,
           _DEVICES.c.health == discovered.HEALTHY,
           _FREE_ROW)
    .order_by(_HANDLES.c.id))


_CLAIM_RETURNING = (
    sa.update(_HANDLES)
    .where(_HANDLES.c.id.in_(sa.bindparam('ids', expanding=True)),
           _FREE_ROW)
    .values(_CLAIMED)
    .returning(*_HANDLES.c))
_CLAIM_ONE = (sa.update(_HANDLES)
              .where(_HANDLES.c.id == sa.bindparam('handle_id'), _FREE_ROW)
              .values(_CLAIMED))


def _free_of_provider(*columns, where=()):
    """SELECT ``columns`` of the free handles of provider ``:rp`` of host
    ``:host`` (enabled, healthy devices), by id, with further ``where``
    clauses."""
    return (
        sa.select(*columns)
        .join(_DEPLOYABLES, _HANDLES.c.deployable_id == _DEPLOYABLES.c.id)
        .join(_DEVICES, _DEPLOYABLES.c.device_id == _DEVICES.c.id)
        .where(_DEPLOYABLES.c.rp_uuid == sa.bindparam('rp'),
               _DEVICES.c.hostname == sa.bindparam('host'),
               _DEVICES.c.status == device_obj.ENABLED,
               _DEVICES.c.health == discovered.HEALTHY,
               _FREE_ROW, *where)
        .order_by(_HANDLES.c.id))


# One provider's first free handles, claimed in one statement: the bind
# PATCH of one server's accelerators names one provider, and one
# statement costs less than a SELECT and an UPDATE (the contributor
# guide's "Design measurements"; see ``claim``).  The UPDATE
# checks ``_FREE_ROW`` again on the row it locks: a handle a concurrent
# binder took after the subquery read it is not claimed, only missed.
# A tainted deployable's handles are left to the rounds, which leave out
# those its taints hold (``objects.taint``).
_FIRST_FREE = _free_of_provider(
    _HANDLES.c.id, where=(taint_obj.UNTAINTED,)).limit(sa.bindparam('n'))
_CLAIM_FIRST_FREE = (
    sa.update(_HANDLES)
    .where(_HANDLES.c.id.in_(_FIRST_FREE), _FREE_ROW)
    .values(_CLAIMED)
    .returning(*_HANDLES.c))
_READ_HANDLES = sa.select(_HANDLES).where(
    _HANDLES.c.id.in_(sa.bindparam('ids', expanding=True)))


_PROVIDER_FREE = _free_of_provider(
    _HANDLES.c.id, _HANDLES.c.attach_type, _HANDLES.c.attach_info,
    _HANDLES.c.deployable_id, taint_obj.TAINTED)


def _untainted(session, rows, tolerated=None):
    """``rows`` (with ``id``, ``deployable_id``, ``tainted``) less the
    handles the taints of their deployables hold (``objects.taint``;
    ``tolerated``: ``{deployable id: taint keys}`` the claiming group
    tolerates); one statement more only when a deployable is tainted."""
    tainted = {r.deployable_id for r in rows if r.tainted}
    if not tainted:
        return rows
    held = taint_obj.held_handle_ids(session, tainted, tolerated=tolerated)
    return [r for r in rows if r.id not in held]


def free_handles(session, rp_uuid, hostname, tolerated=frozenset()):
    """The free handles of one provider of one host, by id, for a caller
    that picks which (``conductor.numa_fit``); never one a taint holds.

    :param tolerated: the taint keys the claiming group tolerates
        (``accel_common.tolerations.parse``; frozenset of str).
    :returns: list of Core rows (``id``, ``attach_type``,
        ``attach_info``, ``deployable_id``, ``tainted``).
    """
    rows = session.execute(
        _PROVIDER_FREE, {'rp': rp_uuid, 'host': hostname}).all()
    return _untainted(session, rows, {r.deployable_id: tolerated
                                      for r in rows if tolerated})


def claim_ids(session, ids):
    """Claim the handles ``ids`` (list of int) that are still free, as
    ``claim`` does.

    :returns: ``{id: Core row of attach_handles}`` of those this
        transaction got.
    """
    got = _claim_ids(session, set(ids))
    unread = [i for i, row in got.items() if row is None]
    if unread:
        got.update((h.id, h) for h in session.execute(
            _READ_HANDLES, {'ids': unread}))
    return got


def _free_handles(session, keys, exclude, tolerated):
    """Free handles of each ``(rp_uuid, hostname)`` in ``keys``, by id.

    :param tolerated: ``{(rp_uuid, hostname): taint keys}`` (see
        ``claim``).
    :returns: ``{(rp_uuid, hostname): [handle id, ...]}``.
    """
    rows = session.execute(_FREE_HANDLES, {
        'rps': sorted({rp for rp, _ in keys}),
        'hosts': sorted({host for _, host in keys})}).all()
    rows = _untainted(session, rows, {
        r.deployable_id: tolerated[(r.rp_uuid, r.hostname)] for r in rows
        if tolerated.get((r.rp_uuid, r.hostname))})
    free = collections.defaultdict(list)
    for handle_id, rp, host, _dep, _tainted in rows:
        if (rp, host) in keys and handle_id not in exclude:
            free[(rp, host)].append(handle_id)
    return free


def _claim_ids(session, ids):
    """Claim the handles ``ids`` that are still free.

    :returns: ``{id: row}`` of the handles this transaction claimed, from
        the UPDATE's ``RETURNING`` (the value is None where the database
        has no ``RETURNING`` and the handle is still to be read).
    """
    if not ids:
        return {}
    if session.get_bind().dialect.update_returning:
        # The claimed rows come back with every column: no SELECT of the
        # handles after the claim (one statement less per PATCH).
        return {h.id: h for h in session.execute(
            _CLAIM_RETURNING, {'ids': sorted(ids)})}
    got = {}
    for handle_id in sorted(ids):
        result = session.execute(_CLAIM_ONE, {'handle_id': handle_id})
        if result.rowcount == 1:
            got[handle_id] = None
    return got


def claim(session, wanted, tolerated=None):
    """Claim free attach handles for a batch of ARQs.

    Only ``available`` handles of enabled, healthy devices are claimed
    (never one that is dirty or being cleaned, nor one a taint holds,
    ``objects.taint``, unless the ARQs' group tolerates it), lowest id
    first.

    :param session: a ``Session`` in the binder's transaction.
    :param wanted: ``{(rp_uuid, hostname): number of handles}`` (ints
        >= 1): what the ARQs of the batch ask for, grouped by the
        deployable's resource provider and host.
    :param tolerated: None, or ``{(rp_uuid, hostname): frozenset of taint
        keys}`` the ARQs of that key tolerate
        (``accel_common.tolerations``).
    :returns: ``{(rp_uuid, hostname): [row, ...]}``, the claimed handles
        (now ``in_use``, state ``bound``) as Core rows of
        ``attach_handles`` (every column, as claimed), at most the number
        asked for; fewer (or none) when the provider has no more free
        handles.
    """
    need = {k: n for k, n in wanted.items() if n > 0}
    got = collections.defaultdict(list)
    loaded = {}
    lost = set()
    if len(need) == 1 and session.get_bind().dialect.update_returning:
        # One provider: its first free handles in one statement; what it
        # could not get (none left, or taken under it) goes the rounds.
        ((rp, host), n), = need.items()
        for handle in session.execute(_CLAIM_FIRST_FREE,
                                      {'rp': rp, 'host': host, 'n': n}):
            got[(rp, host)].append(handle.id)
            loaded[handle.id] = handle
        need[(rp, host)] -= len(got[(rp, host)])
        need = {k: n for k, n in need.items() if n > 0}
    for _ in range(ROUNDS):
        if not need:
            break
        free = _free_handles(session, set(need), lost, tolerated or {})
        chosen = {k: free.get(k, [])[:n] for k, n in need.items()}
        ids = {i for v in chosen.values() for i in v}
        claimed = _claim_ids(session, ids)
        loaded.update(claimed)
        lost |= ids - set(claimed)
        for key, picked in chosen.items():
            mine = [i for i in picked if i in claimed]
            got[key].extend(mine)
            need[key] -= len(mine)
        # Providers with nothing free left are done; the others had a
        # handle taken under them and try again.
        need = {k: n for k, n in need.items()
                if n > 0 and len(free.get(k, [])) > len(chosen[k]) or
                n > 0 and set(chosen[k]) - set(claimed)}
    if not any(got.values()):
        return {}
    unread = [i for v in got.values() for i in v if loaded[i] is None]
    if unread:
        loaded.update((h.id, h) for h in session.execute(
            _READ_HANDLES, {'ids': unread}))
    return {k: [loaded[i] for i in v] for k, v in got.items()}


def tolerated(arqs):
    """The taint keys the ARQs of each provider tolerate, for the claim
    (``claim.claim``'s ``tolerated``).

    ARQs of several groups on one provider get the keys all of them
    tolerate: a group that does not tolerate a taint is never given a
    handle it holds.

    :param arqs: ``conductor.bind_row.BindRow``.
    :returns: ``{(rp_uuid, hostname): frozenset of str}``, without the
        providers whose ARQs tolerate nothing.
    """
    found = {}
    for arq in arqs:
        key = (arq.device_rp_uuid, arq.hostname)
        keys = group_tolerations(arq.device_profile_group)
        found[key] = keys if key not in found else found[key] & keys
    return {k: v for k, v in found.items() if v}


def group_tolerations(group):
    """``accel_common.tolerations.parse`` of a stored group (dict or
    None): frozenset of taint keys."""
    try:
        return tolerations.parse(group or {})
    except tolerations.InvalidTolerations:
        # Profiles are checked when created; one imported from Cyborg
        # that breaks the rule tolerates nothing.
        return frozenset()
