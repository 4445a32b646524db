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

"""``/v2/device_profiles``.

With ``[taints] tolerable_keys`` set, every group served (``GET``, and
the answer of a ``POST``) forbids the trait of each tolerable taint key
it does not tolerate (``accel_common.tolerations.forbidden_traits``), so
that Nova's request groups keep off devices those taints hold; the
traits are created in Placement first (Placement refuses a request
naming a trait it does not know).  ``doc/cyborg-deviations.md``.
"""

from oslo_log import log as logging

from oslo_utils import uuidutils

from accel_backend.api.policies import device_profile as dp_policy
from accel_backend.api import schemas
from accel_backend.api.schemas import device_profile as schema
from accel_backend.api import util
from accel_backend import exception
from accel_backend.objects import device_profile as dp_obj
from accel_common import tolerations

LOG = logging.getLogger(__name__)


def _tolerable(req):
    """``[taints] tolerable_keys`` (tuple), their traits created in
    Placement (once per process; a failure is logged)."""
    svc = util.service(req)
    tolerable = tuple(svc.conf.taints.tolerable_keys)
    if tolerable:
        try:
            svc.reporter.custom.ensure_traits(
                svc.reporter.client,
                [tolerations.trait_name(k) for k in tolerable])
        except Exception as e:
            LOG.warning('Could not create the traits of [taints] '
                        'tolerable_keys in Placement: %s', e)
    return tolerable


def create(req):
    """``POST``: body is ``[{"name", "groups"[, "description", "uuid"]}]``;
    201 with the profile.

    :raises InvalidDeviceProfile: 400, groups break
        ``accel_common.device_profile``'s rules.
    :raises InvalidUUID: 400, a malformed ``uuid``.
    :raises DeviceProfileExists: 409, the name is taken.
    :raises DeviceProfileUUIDExists: 409, the ``uuid`` is taken.
    """
    util.context(req).can(dp_policy.CREATE)
    profile = util.json_body(req, schema.CREATE)[0]
    schema.check_groups(profile['groups'],
                        util.service(req).conf.taints.tolerable_keys)
    if 'uuid' in profile:
        util.check_uuid(profile['uuid'])
    tolerable = _tolerable(req)
    with util.service(req).db.transaction() as session:
        dp = dp_obj.create(session, profile['name'], profile['groups'],
                           profile.get('description'),
                           uuid=profile.get('uuid'))
        view = dp_obj.to_dict(dp, util.base_url(req), tolerable)
    return util.response(201, view)


def list_(req):
    """``GET [?name=&limit=&marker=]`` -> 200 ``{"device_profiles":
    [...]}``; ``name`` filters by exact name.

    :raises InvalidLimit, InvalidMarker: 400.
    """
    return util.list_response(req, dp_policy.GET_ALL, 'device_profiles',
                              dp_obj.list_, dp_obj.to_dict,
                              filters={'name': req.GET.get('name')},
                              view_args=(_tolerable(req),))


def show(req, ident):
    """``GET /{uuid}`` (by name from microversion 2.2) -> 200
    ``{"device_profile": {...}}``.

    :raises InvalidUUID: 400, a name before 2.2.
    :raises DeviceProfileNotFound: 404.
    """
    util.context(req).can(dp_policy.GET_ONE)
    if not uuidutils.is_uuid_like(ident) and util.version(req) < (2, 2):
        raise exception.InvalidUUID(value=ident)
    tolerable = _tolerable(req)
    with util.service(req).db.transaction() as session:
        view = dp_obj.to_dict(dp_obj.get(session, ident),
                              util.base_url(req), tolerable)
    return util.response(200, {'device_profile': view})


def delete(req, ident):
    """``DELETE /{uuid or name}`` -> 204 with no body (Cyborg v2; by name
    at every microversion, as Cyborg 17 resolves either).

    :param req: the ``webob.Request``.
    :param ident: the profile's UUID or name (str).
    :raises Forbidden: 403, the caller may not delete.
    :raises DeviceProfileNotFound: 404, no profile has that UUID or name.
    :raises DeviceProfileInUse: 409, ARQs still refer to it.
    """
    util.context(req).can(dp_policy.DELETE)
    with util.service(req).db.transaction() as session:
        dp_obj.delete(session, dp_obj.get(session, ident))
    return util.response(204)


#: ``?value=`` of a bulk delete: at most 100 names or UUIDs.
DELETE_VALUES = {'type': 'array', 'maxItems': 100}


def delete_unnamed(req):
    """``DELETE /v2/device_profiles/`` (no name): 400, as Cyborg 17."""
    util.context(req).can(dp_policy.DELETE)
    raise exception.BadRequest(
        reason='name or UUID of the device profile needed')


def delete_by_value(req):
    """``DELETE ?value=<name or uuid>[,...]`` -> 204: Cyborg's bulk
    delete, all or nothing (one transaction).

    :raises BadRequest: no ``value``.
    :raises SchemaValidationError: more than 100 values.
    :raises DeviceProfileNotFound: 404, one of them does not exist.
    :raises DeviceProfileInUse: 409, ARQs refer to one of them.
    """
    util.context(req).can(dp_policy.DELETE)
    values = [v for v in req.GET.get('value', '').split(',') if v]
    if not values:
        raise exception.BadRequest(reason='value=<names or uuids> needed')
    schemas.validate(DELETE_VALUES, values)
    with util.service(req).db.transaction() as session:
        for ident in values:
            dp_obj.delete(session, dp_obj.get(session, ident))
    return util.response(204)
