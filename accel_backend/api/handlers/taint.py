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

"""``/v2/deployables/{uuid}/taints`` (microversion 2.5, accel_backend's
own; Cyborg has no taints): list, ``POST`` a taint, ``DELETE
/{taint_uuid}``.  The model is Kubernetes DRA's device taint (KEP-5055);
``objects.taint`` says what each effect does.

Every change is committed first and notified
(``accelerator.device.taint`` / ``.untaint``,
``accel_backend.notifications``), then the deployable's reserved units
(``objects.deployable.reserved_units``, read from the database) are
written to Placement through the reporter's writer
(``agent.placement.reserved.ReservedUnits.sync_reserved``): a tainted
device is never bound again even when that write fails (502
``accel.placement.error``; the periodic report, which derives the
reserved units from the database, repairs Placement).  A tolerable taint
(``[taints] tolerable_keys``, ``accel_common.tolerations``) is written as
its trait instead of a reservation.

Before 2.5 these paths answer as before, when they did not exist: 404.
"""

from accel_backend.api.policies import deployable as deployable_policy
from accel_backend.api.schemas import taint as taint_schema
from accel_backend.api import util
from accel_backend import exception
from accel_backend.objects import deployable as deployable_obj
from accel_backend.objects import quarantine
from accel_backend.objects import taint as taint_obj

#: The microversion that serves the taints.
TAINTS_VERSION = (2, 5)


def _check_version(req):
    if util.version(req) < TAINTS_VERSION:
        raise exception.NotFound(kind='Resource', ident=req.path)


def list_(req, deployable_uuid):
    """``GET`` -> 200 ``{"taints": [taint, ...]}`` (``taint.to_dict``),
    oldest first.

    :raises NotFound: 404, before microversion 2.5.
    :raises Forbidden: 403, the caller may not show the deployable.
    :raises InvalidUUID: 400.
    :raises DeployableNotFound: 404.
    """
    _check_version(req)
    util.context(req).can(deployable_policy.GET_ONE)
    util.check_uuid(deployable_uuid)
    with util.service(req).db.transaction() as session:
        dep = deployable_obj.get(session, deployable_uuid)
        views = [taint_obj.to_dict(t) for t in dep.taints]
    return util.response(200, {'taints': views})


def _write_placement(req, rp_uuid):
    """Write ``rp_uuid``'s traits (those of its tolerable taints,
    ``ProviderTraits.sync``) and reserved units
    (``ReservedUnits.sync_reserved``) as the database gives them now,
    each read under the reporter's lock, so no earlier read lands after
    it, whichever host the provider is of."""
    if rp_uuid:
        reporter = util.service(req).reporter
        reporter.traits.sync(rp_uuid)
        reporter.reserved.sync_reserved(rp_uuid)


def create(req, deployable_uuid):
    """``POST {"key", "effect", "value"?, "reason"?, "function"?}`` -> 201
    with the taint, or 200 when it replaced the taint of that key (and
    function).  ``set_by`` is the caller's user id.

    :raises NotFound: 404, before microversion 2.5.
    :raises Forbidden: 403, not an administrator.
    :raises InvalidUUID, SchemaValidationError: 400 (an unknown effect,
        no key).
    :raises TaintFunctionInvalid: 400, ``function`` is no member of the
        pooled deployable.
    :raises DeployableNotFound: 404.
    :raises PlacementError: 502, stored but Placement not updated.
    """
    _check_version(req)
    ctx = util.context(req)
    ctx.can(deployable_policy.TAINT)
    util.check_uuid(deployable_uuid)
    body = util.json_body(req, taint_schema.CREATE)

    def store(session):
        dep = deployable_obj.get(session, deployable_uuid)
        taint, created = taint_obj.set_(
            session, dep, body['key'], body['effect'],
            value=body.get('value'), reason=body.get('reason'),
            set_by=ctx.user_id,
            function=body.get('function') or taint_obj.WHOLE)
        return (taint_obj.to_dict(taint), created, dep.rp_uuid,
                taint_obj.payload(dep, taint))

    svc = util.service(req)
    view, created, rp_uuid, note = svc.db.write(store)
    svc.notifications.device_taint('accelerator.device.taint', note)
    _write_placement(req, rp_uuid)
    return util.response(201 if created else 200, view)


def delete(req, deployable_uuid, taint_uuid):
    """``DELETE /{taint_uuid}`` -> 204.

    :raises NotFound: 404, before microversion 2.5.
    :raises Forbidden: 403, not an administrator.
    :raises InvalidUUID: 400.
    :raises DeployableNotFound, TaintNotFound: 404.
    :raises PlacementError: 502, removed but Placement not updated.
    """
    _check_version(req)
    util.context(req).can(deployable_policy.UNTAINT)
    util.check_uuid(deployable_uuid)
    util.check_uuid(taint_uuid)

    def remove(session):
        dep = deployable_obj.get(session, deployable_uuid)
        taint = taint_obj.get(dep, taint_uuid)
        note = taint_obj.payload(dep, taint)
        taint_obj.remove(session, dep, taint)
        # A failed device the taint quarantined goes to cleaning now.
        quarantine.lift(session, dep)
        return dep.rp_uuid, note

    svc = util.service(req)
    rp_uuid, note = svc.db.write(remove)
    svc.notifications.device_taint('accelerator.device.untaint', note)
    _write_placement(req, rp_uuid)
    return util.response(204)
