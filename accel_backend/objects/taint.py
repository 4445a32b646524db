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

"""Device taints: an operator keeps a deployable, or one function of a
pooled deployable, out of scheduling (issue 53).

The model is Kubernetes DRA's device taint (KEP-5055, ``resource.k8s.io``
``DeviceTaint``: ``key``, ``value``, ``effect``, ``timeAdded``), with the
operator's ``reason`` and who set it (``set_by``, the caller's user id).
A taint is one row of ``deployable_taints``, one per ``(deployable,
function, key)``: ``function`` is ``''`` for the whole deployable or the
PCI address of one member of a pooled deployable
(``objects.pool_members``).  Setting a key again replaces its value,
effect and reason.

Effects:

``NoSchedule``
    no new ARQ is bound to what it taints (``conductor.claim`` never
    picks its attach handles) and Placement keeps it out of scheduling:
    a whole deployable is fully reserved, a tainted function of a pool
    reserves one unit (``objects.deployable.reserved_units``, the one
    computation of reserved units).  ARQs already bound stay.
``NoExecute``
    the same, and an attach handle it covers is quarantined when its ARQ
    lets go of it (``objects.device.release_handle``), never cleaned and
    sold again while the taint stays; ``nova_accel``'s compute driver
    replaces such a device under a running guest
    (``nova_accel.hotplug.replace``).

The key is free text, so automatic taints live beside the operator's:
``accel.openstack.org/drain`` is the maintenance drain's
(``accel-backend-manage device drain``), ``accel.openstack.org/unhealthy``
a health fault's (``conductor.health_taints``) and
``accel.openstack.org/unallocated`` the audit's
(``conductor.orphan_taints``).

Tolerations (``accel_common.tolerations``): a ``NoSchedule`` taint of a
whole deployable whose key the operator declared tolerable (``[taints]
tolerable_keys``, passed in as ``tolerable``) reserves nothing; its
provider carries the trait ``traits`` gives instead, and the claim gives
its handles to the ARQs of groups that tolerate the key
(``held_handle_ids``'s ``tolerated``).
"""

import collections

from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.common import pooling
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import pool_members
from accel_backend import utils
from accel_common import taints as taints_common
from accel_common import tolerations

#: ``function`` of a taint of the whole deployable.
WHOLE = ''

_TAINTS = models.DeployableTaint.__table__
_HANDLES = models.AttachHandle.__table__
_DEPLOYABLES = models.Deployable.__table__
_DEVICES = models.Device.__table__


def members(dev):
    """``{PCI address: member record}`` of a pool device, ``{}`` for any
    other device.

    :param dev: ``models.Device``.
    """
    if not pooling.is_pool_address(dev.address):
        return {}
    return (dev.std_board_info or {}).get('members') or {}


def check_function(dep, function):
    """Refuse a function that is not one of ``dep``'s.

    :param dep: ``models.Deployable`` with its device loadable.
    :param function: ``WHOLE`` or a member's PCI address (str).
    :raises TaintFunctionInvalid: ``function`` is no member of pooled
        ``dep``, or ``dep`` is not pooled.
    """
    if function != WHOLE and function not in members(dep.device):
        raise exception.TaintFunctionInvalid(function=function,
                                             deployable=dep.uuid)


def set_(session, dep, key, effect, value=None, reason=None, set_by=None,
         function=WHOLE):
    """Taint ``dep`` (or one of its functions) with ``key``, replacing
    the value, effect and reason of a taint of that key there.

    :param session: a write transaction.
    :param dep: ``models.Deployable``.
    :param key: str, 1 to 255 characters.
    :param effect: one of ``accel_common.taints.EFFECTS``.
    :param value, reason: optional str.
    :param set_by: the user id of who sets it (str) or None.
    :param function: ``WHOLE`` or a member's PCI address.
    :returns: ``(models.DeployableTaint, created)``, ``created`` False
        when a taint of that key was replaced.
    :raises TaintFunctionInvalid: see ``check_function``.
    """
    session.info.pop(_NO_EXECUTE_KEY, None)
    check_function(dep, function)
    for taint in dep.taints:
        if taint.key == key and taint.function == function:
            taint.effect, taint.value, taint.reason = effect, value, reason
            taint.set_by = set_by
            taint.created_at = models.utcnow()
            session.flush()
            return taint, False
    taint = models.DeployableTaint(
        uuid=uuidutils.generate_uuid(), deployable=dep, function=function,
        key=key, value=value, effect=effect, reason=reason, set_by=set_by)
    session.add(taint)
    session.flush()
    return taint, True


def get(dep, taint_uuid):
    """The taint of ``dep`` with that UUID.

    :raises TaintNotFound: ``dep`` has none.
    """
    for taint in dep.taints:
        if taint.uuid == taint_uuid:
            return taint
    raise exception.TaintNotFound(ident=taint_uuid)


def remove(session, dep, taint):
    """Remove ``taint`` (one of ``dep.taints``)."""
    dep.taints.remove(taint)
    session.flush()


def remove_key(session, dep, key, function=None):
    """Remove ``dep``'s taints of ``key``.

    :param function: None for every function (and the whole deployable),
        else only that one (``WHOLE`` included).
    :returns: how many were removed (int).
    """
    gone = [t for t in dep.taints if t.key == key and
            (function is None or t.function == function)]
    for taint in gone:
        dep.taints.remove(taint)
    session.flush()
    return len(gone)


#: ``session.info`` key of ``no_execute_deployable_ids``'s answer.
_NO_EXECUTE_KEY = 'accel_backend.no_execute_deployables'


def no_execute_deployable_ids(session):
    """Ids (frozenset of int) of the deployables with a ``NoExecute``
    taint, read once per session (one statement, however many handles a
    transaction releases; the set is small).  A taint set later in the
    same session is not in it: ``set_`` forgets the answer."""
    if _NO_EXECUTE_KEY not in session.info:
        session.info[_NO_EXECUTE_KEY] = frozenset(session.scalars(
            sa.select(_TAINTS.c.deployable_id).distinct().where(
                _TAINTS.c.effect == taints_common.NO_EXECUTE)))
    return session.info[_NO_EXECUTE_KEY]


def no_execute_handles(dep):
    """``held_handles`` of ``dep``'s ``NoExecute`` taints alone: the
    handles a release quarantines (``objects.device.release_handle``)."""
    return held_handles(dep, effects=(taints_common.NO_EXECUTE,))


def is_tolerable(taint, tolerable):
    """True when ``taint`` is shown to Placement as a trait rather than
    a reservation: a ``NoSchedule`` taint of the whole deployable with a
    key of ``tolerable``.

    :param taint: ``models.DeployableTaint`` (or a row with ``key``,
        ``effect`` and ``function``).
    :param tolerable: the tolerable keys (``[taints] tolerable_keys``;
        a collection of str).
    """
    return (taint.function == WHOLE and
            taint.effect == taints_common.NO_SCHEDULE and
            taint.key in tolerable)


def traits(dep, tolerable):
    """The traits ``dep``'s tolerable taints give its resource provider.

    :param dep: ``models.Deployable`` with its taints loadable.
    :param tolerable: see ``is_tolerable``.
    :returns: set of ``CUSTOM_ACCEL_TAINT_<KEY>`` names.
    """
    if not tolerable:
        return set()
    return {tolerations.trait_name(t.key) for t in dep.taints
            if is_tolerable(t, tolerable)}


def held_handles(dep, effects=taints_common.EFFECTS, keys=None,
                 tolerable=()):
    """The attach handles of ``dep`` its taints keep from the claim.

    :param dep: ``models.Deployable`` with its device, attach handles and
        taints loadable.
    :param effects: the effects of the taints that count (tuple of str).
    :param keys: None, or only the taints of these keys count (tuple).
    :param tolerable: taints ``is_tolerable`` with these keys do not
        count (collection of str; for the reserved units, as Placement
        keeps those devices from other groups by trait).
    :returns: set of handle ids: all of them under a taint of the whole
        deployable, else those of its tainted functions.
    """
    taints = [t for t in dep.taints if t.effect in effects and
              (keys is None or t.key in keys) and
              not is_tolerable(t, tolerable)]
    if not taints:
        return set()
    if any(t.function == WHOLE for t in taints):
        return {h.id for h in dep.attach_handles}
    keys = _function_keys(dep.device, {t.function for t in taints})
    return {h.id for h in dep.attach_handles
            if pool_members.handle_key(h.attach_type, h.attach_info) in keys}


def _function_keys(dev, functions):
    found = members(dev)
    return {pool_members.handle_key(*found[f]['handle'])
            for f in functions if f in found and found[f].get('handle')}


_OF_DEPLOYABLES = (
    sa.select(_TAINTS.c.deployable_id, _TAINTS.c.function, _TAINTS.c.key,
              _TAINTS.c.effect,
              _DEVICES.c.address, _DEVICES.c.std_board_info)
    .join(_DEPLOYABLES, _TAINTS.c.deployable_id == _DEPLOYABLES.c.id)
    .join(_DEVICES, _DEPLOYABLES.c.device_id == _DEVICES.c.id)
    .where(_TAINTS.c.deployable_id.in_(sa.bindparam('ids', expanding=True))))
_HANDLES_OF = (
    sa.select(_HANDLES.c.id, _HANDLES.c.deployable_id,
              _HANDLES.c.attach_type, _HANDLES.c.attach_info)
    .where(_HANDLES.c.deployable_id.in_(sa.bindparam('ids',
                                                     expanding=True))))

#: Core clause: the deployable of ``_DEPLOYABLES`` has no taint (the
#: claim's fast path; deployables with one go the way that filters).
UNTAINTED = ~sa.exists().where(_TAINTS.c.deployable_id == _DEPLOYABLES.c.id)
#: Core column: the deployable of ``_DEPLOYABLES`` has a taint.
TAINTED = sa.exists().where(
    _TAINTS.c.deployable_id == _DEPLOYABLES.c.id).label('tainted')


def held_handle_ids(session, deployable_ids, tolerated=None):
    """``held_handles`` of several deployables in two statements, for the
    claim (``conductor.claim``).

    :param deployable_ids: iterable of deployable ids (int) that have a
        taint.
    :param tolerated: None, or ``{deployable id: frozenset of taint
        keys}``: the keys the claiming ARQs' group tolerates
        (``accel_common.tolerations.parse``); a ``NoSchedule`` taint of
        a whole deployable with one of them holds nothing.
    :returns: set of attach handle ids.
    """
    ids = sorted(set(deployable_ids))
    if not ids:
        return set()
    tolerated = tolerated or {}
    whole, functions, devices = set(), collections.defaultdict(set), {}
    for row in session.execute(_OF_DEPLOYABLES, {'ids': ids}):
        dep_id, function, address, board = (
            row.deployable_id, row.function, row.address, row.std_board_info)
        if is_tolerable(row, tolerated.get(dep_id, ())):
            continue
        if function == WHOLE:
            whole.add(dep_id)
        else:
            functions[dep_id].add(function)
            devices[dep_id] = models.Device(address=address,
                                            std_board_info=board)
    keys = {dep_id: _function_keys(devices[dep_id], funcs)
            for dep_id, funcs in functions.items()}
    if not whole and not keys:
        return set()    # every taint tolerated: no second statement
    held = set()
    for handle_id, dep_id, attach_type, info in session.execute(
            _HANDLES_OF, {'ids': sorted(whole | set(keys))}):
        if dep_id in whole or pool_members.handle_key(
                attach_type, info) in keys.get(dep_id, ()):
            held.add(handle_id)
    return held


def payload(dep, taint):
    """The ``DeviceTaintPayload`` fields (``accel_backend.notifications``)
    of ``taint`` of ``dep`` (its device loadable): ``to_dict`` plus the
    deployable, its provider and host."""
    data = to_dict(taint)
    data.update(deployable_uuid=dep.uuid, rp_uuid=dep.rp_uuid,
                hostname=dep.device.hostname)
    return data


def to_dict(taint):
    """The API view of a taint (microversion 2.5).

    :returns: ``{"uuid", "key", "value", "effect", "function", "reason",
        "set_by", "time_added"}``; ``function`` None for the whole
        deployable; ``time_added`` ISO 8601 UTC.
    """
    return {'uuid': taint.uuid, 'key': taint.key, 'value': taint.value,
            'effect': taint.effect, 'function': taint.function or None,
            'reason': taint.reason, 'set_by': taint.set_by,
            'time_added': utils.isotime(taint.created_at)}
