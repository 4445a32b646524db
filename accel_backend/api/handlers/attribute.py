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

"""``/v2/attributes`` (Cyborg 2.x): key/value pairs of deployables.

``GET [?deployable_id=<int or uuid>][&key=<key>][&limit=&marker=]``,
``GET /{uuid}``, ``POST {"deployable_id", "key", "value"}`` -> 201,
``DELETE /{uuid}`` -> 204.  Keys are unique per deployable (409
``accel.attribute.duplicate``).  ``deployable_id`` is the deployable's
integer id as in Cyborg; accel_backend also takes the deployable's UUID
there (Cyborg's API never shows the integer id of a deployable).
"""

import re

from accel_backend.api.policies import attribute as attr_policy
from accel_backend.api.schemas import attribute as schema
from accel_backend.api import util
from accel_backend import exception
from accel_backend.objects import attribute as attr_obj

_INT = re.compile(r'[0-9]{1,18}')
#: Largest id a database integer column holds (SQLite, BIGINT).
_MAX_ID = 2 ** 63 - 1


def _deployable_ident(value):
    """A ``deployable_id`` value: int id, or UUID str.

    JSON schema calls ``1.0`` an integer too, and JSON integers have no
    size limit: both reach here and must not reach the database as such
    (a float fails the regex below, a huge int overflows SQLite's
    driver), so integral floats become ints and ids out of range are a
    400.

    :raises BadRequest: neither.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= _MAX_ID:
            raise exception.BadRequest(
                reason='deployable_id %d is out of range' % value)
        return value
    if not isinstance(value, str):
        raise exception.BadRequest(
            reason='deployable_id must be an integer or a UUID')
    if _INT.fullmatch(value):
        return int(value)
    return util.check_uuid(value)


def list_(req):
    """``GET [?deployable_id=<id or uuid>&key=&limit=&marker=]`` -> 200
    ``{"attributes": [...]}``; an unknown ``deployable_id`` lists nothing.

    :raises BadRequest, InvalidUUID: 400, ``deployable_id`` is neither
        an id from 1 to 2**63 - 1 nor a UUID.
    :raises InvalidLimit, InvalidMarker: 400.
    """
    dep_param = req.GET.get('deployable_id')

    def filters(session):
        dep_id = None
        if dep_param is not None:
            try:
                dep_id = attr_obj.find_deployable(
                    session, _deployable_ident(dep_param)).id
            except exception.DeployableNotFound:
                dep_id = -1
        return {'deployable_id': dep_id, 'key': req.GET.get('key')}

    return util.list_response(req, attr_policy.GET_ALL, 'attributes',
                              attr_obj.list_, attr_obj.to_dict,
                              filters=filters)


def show(req, attribute_uuid):
    """``GET /{uuid}`` -> 200 with the attribute.

    :raises InvalidUUID: 400.
    :raises AttributeNotFound: 404.
    """
    return util.show_response(req, attr_policy.GET_ONE, attribute_uuid,
                              attr_obj.get, attr_obj.to_dict)


def create(req):
    """``POST {"deployable_id", "key", "value"}`` -> 201 with the
    attribute.

    :raises BadRequest, InvalidUUID: 400, ``deployable_id`` is neither
        an id from 1 to 2**63 - 1 nor a UUID.
    :raises DeployableNotFound: 404, no such deployable.
    :raises AttributeExists: 409, the deployable has that key.
    """
    util.context(req).can(attr_policy.CREATE)
    body = util.json_body(req, schema.CREATE)
    ident = _deployable_ident(body['deployable_id'])
    with util.service(req).db.transaction() as session:
        dep = attr_obj.find_deployable(session, ident)
        attr = attr_obj.create(session, dep, body['key'], body['value'])
        view = attr_obj.to_dict(attr, util.base_url(req))
    return util.response(201, view)


def delete(req, attribute_uuid):
    """``DELETE /{uuid}`` -> 204, no body.

    :raises InvalidUUID: 400.
    :raises AttributeNotFound: 404.
    """
    util.context(req).can(attr_policy.DELETE)
    util.check_uuid(attribute_uuid)
    with util.service(req).db.transaction() as session:
        attr_obj.delete(session, attr_obj.get(session, attribute_uuid))
    return util.response(204)
