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

"""Errors of a request the API cannot serve as sent: authentication,
policy, malformed bodies and parameters, microversions, methods and
sizes (401, 400, 403, 405, 406, 413)."""

from accel_backend.exception.base import AccelBackendError
from accel_backend.exception import codes


class Unauthorized(AccelBackendError):
    """401: the request carries no identity.  Raised by the API (``[api]
    auth_strategy = noauth``) when neither ``X-Auth-Token`` nor
    ``X-Roles`` is sent, as Placement's ``noauth2`` does; with Keystone,
    keystonemiddleware answers 401 itself before the API runs.

    :param reason: what is missing (str).
    """
    status = 401
    code = codes.UNAUTHORIZED
    msg_fmt = 'Authentication required: %(reason)s'


class BadRequest(AccelBackendError):
    """400: the request cannot be served as sent; the base of every 400.

    :param reason: what is wrong (str).
    """
    status = 400
    code = codes.BAD_REQUEST
    msg_fmt = 'Bad request: %(reason)s'


class InvalidJSON(BadRequest):
    """400: the body is not JSON, is nested deeper than
    ``api.util.MAX_JSON_DEPTH`` or holds a string no database can store
    (``api.util.json_body``).

    :param reason: the decoder's or the check's message (str).
    """
    code = codes.INVALID_JSON
    msg_fmt = 'Request body is not valid JSON: %(reason)s'


class TaintFunctionInvalid(BadRequest):
    """400: a taint names a function that is no member of the pooled
    deployable, or names one for a deployable that is not pooled
    (``objects.taint.check_function``).

    :param function: the function's PCI address as sent (str).
    :param deployable: the deployable's UUID (str).
    """
    code = codes.TAINT_INVALID_FUNCTION
    msg_fmt = ('Function %(function)s is not a function of pooled '
               'deployable %(deployable)s; name none to taint the whole '
               'deployable.')


class SchemaValidationError(BadRequest):
    """400: the body or a query parameter fails its JSON schema
    (``api.schemas.validate``).

    :param reason: the failing path and jsonschema's message (str).
    """
    code = codes.SCHEMA_VALIDATION
    msg_fmt = 'Request body or query failed validation: %(reason)s'


class InvalidDeviceProfile(BadRequest):
    """400: device profile groups break
    ``accel_common.device_profile``'s rules (at creation, or an ARQ made
    from a profile stored before a rule tightened).

    :param reason: the broken rule (str).
    """
    code = codes.DEVICE_PROFILE_INVALID
    msg_fmt = 'Invalid device profile: %(reason)s'


class InvalidPatch(BadRequest):
    """400: the JSON-patch of an ARQ bind/unbind is not one
    Cyborg v2 accepts (``api.schemas.arq``).

    :param uuid: the ARQ's UUID (str).
    :param reason: what is wrong (str).
    """
    code = codes.ARQ_INVALID_PATCH
    msg_fmt = 'Invalid JSON-patch for ARQ %(uuid)s: %(reason)s'


class InvalidUUID(BadRequest):
    """400: a path segment, query parameter or body field that
    must be a UUID is not one.

    :param value: what was sent.
    """
    code = codes.INVALID_UUID
    msg_fmt = '%(value)r is not a valid UUID.'


class InvalidLimit(BadRequest):
    """400: ``?limit=`` is not ASCII digits from 0 to ``max``.

    :param value: what was sent (str).
    :param max: ``db.paging.MAX_LIMIT`` (int).
    """
    code = codes.INVALID_LIMIT
    msg_fmt = 'limit must be an integer from 0 to %(max)d, not %(value)r.'


class InvalidMarker(BadRequest):
    """400: ``?marker=`` is no UUID, or names no item of the
    collection the caller may see (``db.paging.paginate``).

    :param marker: what was sent (str).
    """
    code = codes.INVALID_MARKER
    msg_fmt = 'Marker %(marker)r does not name an item of this collection.'


class Forbidden(AccelBackendError):
    """Policy denies the operation (``accel_backend.api.policy``)."""

    status = 403
    code = codes.POLICY_FORBIDDEN
    msg_fmt = 'Policy does not allow %(action)s to be performed.'


class RequestTooLarge(AccelBackendError):
    """413: the body is larger than ``[oslo_middleware]
    max_request_body_size`` (by ``Content-Length`` or while read).

    :param limit: that size in bytes (int).
    """
    status = 413
    code = codes.REQUEST_TOO_LARGE
    msg_fmt = 'Request body is larger than %(limit)d bytes.'


class NotAcceptable(AccelBackendError):
    """406: ``OpenStack-API-Version: accelerator <v>`` is
    malformed or outside the supported range (``api.microversion``).

    :param version: what was sent (str).
    :param min: lowest supported version (str, ``'2.0'``).
    :param max: highest supported version (str).
    """
    status = 406
    code = codes.MICROVERSION_NOT_ACCEPTABLE
    msg_fmt = ('Version %(version)s is not supported by the API. Minimum is '
               '%(min)s and maximum is %(max)s.')


class MethodNotAllowed(AccelBackendError):
    """405: the path exists but not with this method; the
    response carries ``Allow``.

    :param method: the request's method (str).
    :param path: the request's path (str).
    """
    status = 405
    code = codes.METHOD_NOT_ALLOWED
    msg_fmt = 'Method %(method)s is not allowed on %(path)s.'
