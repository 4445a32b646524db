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

"""The automatic taint of a bound device whose instance holds no
allocation in Placement (issue 53 item 4).

Nova deletes a server's allocations in Placement even while accel_backend
is down (and an operator or a failed move can remove a live server's);
its ARQs stay ``Bound`` until the audit has proven the instance gone at
two audits ``[audit] grace_period`` apart (``conductor.nova_orphans``),
or forever for a live server.  Meanwhile Placement would show the device
free (usage 0, reserved 0) and a boot could land where the claim refuses
to bind.  So when the audit (``conductor.audit``, step
``deleted_instances``) finds that an instance with ``Bound`` ARQs holds
no allocation in Placement (``GET /allocations/<uuid>`` empty; the proof
of ``nova_orphans`` asks it when Nova answers 404, this module when Nova
answers otherwise), each device its Bound ARQs hold gets a
``NoSchedule`` taint of key ``taints.UNALLOCATED_KEY`` (``objects.taint``: a
whole deployable is reserved in full, one function of a pooled
deployable by one unit, and the claim skips it), committed before
Placement is written.  ``set_by`` is ``SET_BY``; an administrator may
remove it (``DELETE /v2/deployables/{uuid}/taints/{taint_uuid}``), and
the next audit that still finds no allocation sets it again.

The taint goes in the transaction that deletes the confirmed orphan's
ARQs (the release leaves the handle ``dirty``, reserved until cleaned,
``objects.device.OUT_OF_SERVICE_STATES``), and at the first audit that
finds an allocation of the instance again: every audit reconciles the
automatic taints of its host with what Placement shows now, so a restart
loses nothing.  When Placement cannot be asked, taints stay as they are.
"""

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging
import sqlalchemy as sa
from sqlalchemy import orm

from accel_backend.conductor import nova_orphans
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import pool_members
from accel_backend.objects import taint as taint_obj
from accel_common import arq_states
from accel_common import taints

LOG = logging.getLogger(__name__)

#: The key of the automatic taint.
#: ``set_by`` of the automatic taint (no user set it).
SET_BY = 'accel_backend.audit'


def function_of(handle):
    """The taint ``function`` that covers exactly ``handle``:
    ``taint_obj.WHOLE`` for a deployable that is no pool, else the PCI
    address of the pool member behind the handle (``objects.pool_members``).

    :param handle: ``models.AttachHandle`` with its deployable and device
        loadable.
    :returns: str; ``WHOLE`` when no member matches.
    """
    dep = handle.deployable
    key = pool_members.handle_key(handle.attach_type, handle.attach_info)
    for address, record in taint_obj.members(dep.device).items():
        member = record.get('handle')
        if member and pool_members.handle_key(*member) == key:
            return address
    return taint_obj.WHOLE


def unallocated(placement, instances, known):
    """Which ``instances`` hold no allocation in Placement.

    :param placement: ``agent.placement.client.PlacementClient``.
    :param instances: instance UUIDs (iterable of str).
    :param known: ``kept_instances`` of this audit (``(uuid, reason,
        detail)``, ``nova_orphans.KEEP_REASONS``): ``NOT_CONFIRMED`` and
        ``PLACEMENT_ALLOCATIONS`` already say it, without asking again.
    :returns: ``(suspects, unknown)``: sets of UUIDs without an
        allocation, and of those Placement could not be asked about.
    """
    said = {}
    for instance, reason, _ in known:
        if reason == nova_orphans.NOT_CONFIRMED:
            said[instance] = True
        elif reason == nova_orphans.PLACEMENT_ALLOCATIONS:
            said[instance] = False
    suspects, unknown = set(), set()
    for instance in instances:
        if instance not in said:
            try:
                said[instance] = not placement.get(
                    '/allocations/%s' % instance).json().get('allocations')
            except (exception.PlacementError, ks_exc.ClientException,
                    ValueError) as e:
                LOG.warning('Audit: cannot ask Placement for the '
                            'allocations of instance %s; its automatic '
                            'taints stay as they are: %s', instance, e)
                unknown.add(instance)
                continue
        if said[instance]:
            suspects.add(instance)
    return suspects, unknown


def _bound_handles(session, hostname, instances):
    """``{(deployable, function): [(instance, arq uuid), ...]}`` of the
    Bound ARQs of ``instances`` on ``hostname`` that hold a handle."""
    wanted = {}
    if not instances:
        return wanted
    arqs = session.scalars(
        sa.select(models.ARQ)
        .where(models.ARQ.hostname == hostname,
               models.ARQ.instance_uuid.in_(sorted(instances)),
               models.ARQ.state == arq_states.BOUND,
               models.ARQ.attach_handle_id.isnot(None))
        .options(orm.selectinload(models.ARQ.attach_handle))
        .order_by(models.ARQ.id))
    for arq in arqs:
        handle = arq.attach_handle
        if handle is None or handle.deployable is None:
            continue
        place = (handle.deployable, function_of(handle))
        wanted.setdefault(place, []).append((arq.instance_uuid, arq.uuid))
    return wanted


def _automatic(session, hostname):
    """The automatic taints of ``hostname``'s deployables."""
    return list(session.scalars(
        sa.select(models.DeployableTaint)
        .join(models.Deployable).join(models.Device)
        .where(models.Device.hostname == hostname,
               models.DeployableTaint.key == taints.UNALLOCATED_KEY)))


def reconcile(session, hostname, suspects, unknown=()):
    """Taint what the Bound ARQs of ``suspects`` hold, untaint the rest
    but what those of ``unknown`` hold.

    :param session: a write transaction (the caller holds the write lock).
    :param hostname: the audited host (str).
    :param suspects: instance UUIDs without an allocation in Placement
        (iterable of str, ``unallocated``).
    :param unknown: instance UUIDs whose taints stay as they are.
    :returns: ``(tainted, untainted)``: lists of the taints set and
        removed, as ``objects.taint.payload`` dicts (``rp_uuid`` names the
        providers whose reserved units changed).
    """
    wanted = _bound_handles(session, hostname, set(suspects))
    tainted, untainted = [], []
    keep = {(dep.id, function) for dep, function in wanted}
    keep.update((dep.id, function) for dep, function in _bound_handles(
        session, hostname, set(unknown)))
    for taint in _automatic(session, hostname):
        if (taint.deployable_id, taint.function) in keep:
            continue
        dep = taint.deployable
        untainted.append(taint_obj.payload(dep, taint))
        taint_obj.remove(session, dep, taint)
    for (dep, function), holders in sorted(
            wanted.items(), key=lambda i: (i[0][0].id, i[0][1])):
        if any(t.key == taints.UNALLOCATED_KEY and t.function == function
               for t in dep.taints):
            continue
        reason = ('instance %s holds no allocation in Placement; reserved '
                  'until it holds one again or the audit deletes its ARQs '
                  '(ARQ %s)' % (
                      ', '.join(sorted({i for i, _ in holders})),
                      ', '.join(a for _, a in holders)))
        taint, _ = taint_obj.set_(
            session, dep, taints.UNALLOCATED_KEY, taints.NO_SCHEDULE,
            value=holders[0][0], reason=reason, set_by=SET_BY,
            function=function)
        tainted.append(taint_obj.payload(dep, taint))
    return tainted, untainted


def untaint_handle(session, handle):
    """Remove the automatic taint of ``handle``'s deployable (or pool
    function) before its ARQ is deleted, in the same transaction.

    :param handle: ``models.AttachHandle`` or None (nothing to do).
    :returns: list of the removed taints as ``objects.taint.payload``
        dicts (zero or one).
    """
    if handle is None or handle.deployable is None:
        return []
    dep = handle.deployable
    function = function_of(handle)
    gone = [taint_obj.payload(dep, t) for t in dep.taints
            if t.key == taints.UNALLOCATED_KEY and t.function == function]
    taint_obj.remove_key(session, dep, taints.UNALLOCATED_KEY,
                         function=function)
    return gone


def announce(notifications, tainted, untainted):
    """Log and notify (``accelerator.device.taint`` / ``.untaint``, as
    the API's taints) what ``reconcile`` and ``untaint_handle`` changed,
    after the commit.

    :param notifications: ``accel_backend.notifications.Notifications``
        or None.
    :param tainted, untainted: lists of ``objects.taint.payload`` dicts.
    :returns: the set of provider UUIDs whose reserved units changed.
    """
    for event, notes in (('taint', tainted), ('untaint', untainted)):
        for note in notes:
            LOG.warning('Audit: %s deployable %s%s (%s): %s', event,
                        note['deployable_uuid'],
                        ' function %s' % note['function']
                        if note['function'] else '', taints.UNALLOCATED_KEY,
                        note['reason'])
            if notifications is not None:
                notifications.device_taint('accelerator.device.' + event,
                                           note)
    return {n['rp_uuid'] for n in tainted + untainted if n['rp_uuid']}


def write_placement(reserved, rp_uuids):
    """Write the reserved units the database gives now for ``rp_uuids``
    (``agent.placement.reserved.ReservedUnits.set_reserved``, which reads
    ``objects.deployable.reserved_units`` under the reporter's lock).
    Best effort: a failure is logged; the agent's periodic report
    (``[discovery] report_interval``) writes the same value.

    :param reserved: ``ReservedUnits`` or None (nothing written).
    :param rp_uuids: iterable of provider UUIDs (str).
    """
    if reserved is None:
        return
    for rp_uuid in sorted(rp_uuids):
        try:
            reserved.set_reserved(rp_uuid, False)
        except Exception as e:
            LOG.warning('Audit: could not write the reserved units of '
                        'resource provider %s to Placement (the next '
                        'report will): %s', rp_uuid, e)
