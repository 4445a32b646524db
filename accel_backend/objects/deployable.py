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

"""Deployables: the schedulable part of a device, one resource provider
each.

A deployable's rows come and go with discovery (``conductor.host_sync``);
this module reads them for the API (``GET /v2/deployables``, the Cyborg v2
view of cyborg, ``cyborg/api/controllers/v2/deployables.py``, 17.0.0),
names their resource providers, and says how much of their inventory
Placement must keep out of scheduling.  Device statuses and attach handle
states are those of ``objects.device``.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from accel_backend.common import discovered
from accel_backend.common import pooling
from accel_backend.db import lookup
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import device as device_obj
from accel_backend.objects import taint as taint_obj
from accel_backend import utils
from accel_common import handle_states
from accel_common import taints


def list_(session, limit=None, marker=None, with_taints=False,
          taint_effect=None):
    """Deployables ordered by ``id``, one page (``db.paging``).

    :param limit: page size (int) or None for all.
    :param marker: UUID (str) of the previous page's last deployable, or
        None.
    :param with_taints: load the page's taints too, in one statement.
    :param taint_effect: None, or keep only the deployables with a taint
        of that effect (str).
    :returns: list of ``models.Deployable``.
    :raises InvalidMarker: no deployable has the marker's UUID.
    """
    where = () if taint_effect is None else (sa.exists().where(
        models.DeployableTaint.deployable_id == models.Deployable.id,
        models.DeployableTaint.effect == taint_effect),)
    deps = lookup.page(session, models.Deployable, where=where, limit=limit,
                       marker=marker)
    if with_taints and deps:
        found = {d.id: [] for d in deps}
        for taint in session.scalars(
                sa.select(models.DeployableTaint)
                .where(models.DeployableTaint.deployable_id.in_(found))
                .order_by(models.DeployableTaint.id)):
            found[taint.deployable_id].append(taint)
        for dep in deps:
            orm.attributes.set_committed_value(dep, 'taints', found[dep.id])
    return deps


def get(session, deployable_uuid):
    """The deployable with that UUID.

    :param deployable_uuid: str.
    :returns: ``models.Deployable``.
    :raises DeployableNotFound: no deployable has that UUID.
    """
    return lookup.by_column(session, models.Deployable.uuid,
                            deployable_uuid, exception.DeployableNotFound)


def reserved_units(dep, tolerable=()):
    """Units of ``dep``'s inventory Placement must keep out of
    scheduling.

    All of them when the device is not enabled (disabled, missing) or
    unhealthy or the deployable is tainted as a whole (``objects.taint``;
    not by a tolerable taint, ``taint.is_tolerable``: its provider's
    trait keeps it from the groups that do not tolerate it),
    else one per handle that is dirty, being cleaned, failed cleaning or
    quarantined (``handle_states.OUT_OF_SERVICE_STATES``) or is a tainted
    function's that no ARQ holds (one an ARQ holds is in the allocation's
    usage already: reserving it too would hide a free unit of the pool)
    or that the audit's ``accel.openstack.org/unallocated`` taint holds
    (its ARQ has no allocation: that is the taint's point), and one per
    unit of the total that has no handle (an unhealthy member
    of a pooled deployable, ``objects.pool_members``), never more than
    the total.

    :param dep: ``models.Deployable`` with its device, attach handles and
        taints loadable.
    :param tolerable: ``[taints] tolerable_keys`` (collection of str).
    :returns: int, 0 to ``dep.num_accelerators``.
    """
    total = dep.num_accelerators or 0
    dev = dep.device
    if (dev.status != device_obj.ENABLED or
            dev.health == discovered.UNHEALTHY or
            any(t.function == taint_obj.WHOLE and
                not taint_obj.is_tolerable(t, tolerable)
                for t in dep.taints)):
        return total
    held = taint_obj.held_handles(dep, tolerable=tolerable)
    unallocated = taint_obj.held_handles(dep, keys=(taints.UNALLOCATED_KEY,))
    handles = dep.attach_handles
    return max(0, min(total, total - len(handles) + sum(
        1 for h in handles
        if h.state in handle_states.OUT_OF_SERVICE_STATES or
        (h.id in held and (h.state != handle_states.BOUND or
                           h.id in unallocated)))))


def record_name(hostname, dep):
    """``(address, subname)`` that name ``dep``'s resource provider
    (``common.provider_records.provider_name``): the device's address
    and the deployable's name
    among several of one device, or ``('pool', <pool name>)`` for a
    pooled deployable (``common.pooling``).

    :param hostname: the host's name in deployable names (str).
    :param dep: ``models.Deployable`` with its device loadable.
    """
    address = dep.device.address
    if pooling.is_pool_address(address):
        return pooling.PREFIX, dep.name[len(hostname) +
                                        len(pooling.PREFIX) + 2:]
    prefix = '%s_%s_' % (hostname, address)
    return address, (dep.name[len(prefix):]
                     if dep.name.startswith(prefix) else None)


def reserved_units_of_rp(session, rp_uuid, tolerable=()):
    """``reserved_units`` of the deployable behind a resource provider.

    :param rp_uuid: the provider's UUID (str).
    :param tolerable: see ``reserved_units``.
    :returns: int, or None when no deployable has that provider.
    """
    dep = session.scalar(sa.select(models.Deployable).where(
        models.Deployable.rp_uuid == rp_uuid))
    return None if dep is None else reserved_units(dep, tolerable)


def provider_traits(dep, tolerable=()):
    """The traits ``dep``'s resource provider must carry: the
    deployable's own (discovery's) and those of its tolerable taints
    (``taint.traits``), without the owner trait the reporter adds.

    :param dep: ``models.Deployable`` with its taints loadable.
    :param tolerable: see ``reserved_units``.
    :returns: set of trait names.
    """
    return set(dep.traits or ()) | taint_obj.traits(dep, tolerable)


def provider_traits_of_rp(session, rp_uuid, tolerable=()):
    """``provider_traits`` of the deployable behind a resource provider,
    or None when no deployable has it."""
    dep = session.scalar(sa.select(models.Deployable).where(
        models.Deployable.rp_uuid == rp_uuid))
    return None if dep is None else provider_traits(dep, tolerable)


def reserved_units_of_rps(session, rp_uuids, tolerable=()):
    """``reserved_units`` of the deployables behind several resource
    providers, in a number of statements that does not grow with them.

    :param rp_uuids: iterable of provider UUIDs (str).
    :param tolerable: see ``reserved_units``.
    :returns: ``{rp_uuid: int}``; providers no deployable has are left
        out.
    """
    rp_uuids = sorted(set(rp_uuids))
    if not rp_uuids:
        return {}
    deps = session.scalars(
        sa.select(models.Deployable)
        .where(models.Deployable.rp_uuid.in_(rp_uuids))
        .options(orm.selectinload(models.Deployable.device),
                 orm.selectinload(models.Deployable.attach_handles),
                 orm.selectinload(models.Deployable.taints))).all()
    return {dep.rp_uuid: reserved_units(dep, tolerable)
            for dep in deps}


def to_dict(dep, base_url, with_taints=False):
    """Cyborg v2 view of a deployable (cyborg,
    ``cyborg/api/controllers/v2/deployables.py``, 17.0.0), with its
    taints from microversion 2.5 (accel_backend's own).

    :param dep: ``models.Deployable``.
    :param base_url: the API's ``/v2`` root (str), for the self link.
    :param with_taints: add ``taints`` (list of ``taint.to_dict``).
    :returns: dict; ``parent_id`` and ``root_id`` are always None (no
        nested deployables here).
    """
    view = {
        'uuid': dep.uuid, 'name': dep.name, 'rp_uuid': dep.rp_uuid,
        'num_accelerators': dep.num_accelerators,
        'device_id': dep.device_id, 'driver_name': dep.driver_name,
        'parent_id': None, 'root_id': None,
        'created_at': utils.isotime(dep.created_at),
        'updated_at': utils.isotime(dep.updated_at),
        'links': [{'href': '%s/deployables/%s' % (base_url, dep.uuid),
                   'rel': 'self'}],
    }
    if with_taints:
        view['taints'] = [taint_obj.to_dict(t) for t in dep.taints]
    return view
