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

"""Exceptions of accel_backend, each with an HTTP status and a stable code.

The API turns every ``AccelBackendError`` into an OpenStack-style error
document (``{"errors": [{"status", "code", "title", "detail",
"request_id"}]}``, as openstack/placement does) plus Cyborg's
``error_message`` key so Cyborg clients keep working.  ``code`` values are
part of the API contract: clients may match on them, so never rename one.
"""


class AccelBackendError(Exception):
    """Base class.

    :param detail: human-readable message (str); if omitted, ``msg_fmt`` is
        formatted with ``kwargs``.
    :param kwargs: values for ``msg_fmt``.
    """

    status = 500
    code = 'accel.internal_error'
    msg_fmt = 'An unexpected error occurred.'

    def __init__(self, detail=None, **kwargs):
        self.kwargs = kwargs
        if detail is None:
            detail = self.msg_fmt % kwargs if kwargs else self.msg_fmt
        self.detail = detail
        super().__init__(detail)


class Unauthorized(AccelBackendError):
    """401: the request carries no identity.  Raised by the API (``[api]
    auth_strategy = noauth``) when neither ``X-Auth-Token`` nor
    ``X-Roles`` is sent, as Placement's ``noauth2`` does; with Keystone,
    keystonemiddleware answers 401 itself before the API runs.

    :param reason: what is missing (str).
    """
    status = 401
    code = 'accel.unauthorized'
    msg_fmt = 'Authentication required: %(reason)s'


class BadRequest(AccelBackendError):
    """400: the request cannot be served as sent; the base of every 400.

    :param reason: what is wrong (str).
    """
    status = 400
    code = 'accel.bad_request'
    msg_fmt = 'Bad request: %(reason)s'


class InvalidJSON(BadRequest):
    """400: the body is not JSON, is nested deeper than
    ``api.util.MAX_JSON_DEPTH`` or holds a string no database can store
    (``api.util.json_body``).

    :param reason: the decoder's or the check's message (str).
    """
    code = 'accel.invalid_json'
    msg_fmt = 'Request body is not valid JSON: %(reason)s'


class SchemaValidationError(BadRequest):
    """400: the body or a query parameter fails its JSON schema
    (``api.schemas.validate``).

    :param reason: the failing path and jsonschema's message (str).
    """
    code = 'accel.schema_validation'
    msg_fmt = 'Request body or query failed validation: %(reason)s'


class InvalidDeviceProfile(BadRequest):
    """400: device profile groups break
    ``accel_common.device_profile``'s rules (at creation, or an ARQ made
    from a profile stored before a rule tightened).

    :param reason: the broken rule (str).
    """
    code = 'accel.device_profile.invalid'
    msg_fmt = 'Invalid device profile: %(reason)s'


class InvalidPatch(BadRequest):
    """400: the JSON-patch of an ARQ bind/unbind is not one
    Cyborg v2 accepts (``api.schemas.arq``).

    :param uuid: the ARQ's UUID (str).
    :param reason: what is wrong (str).
    """
    code = 'accel.arq.invalid_patch'
    msg_fmt = 'Invalid JSON-patch for ARQ %(uuid)s: %(reason)s'


class InvalidUUID(BadRequest):
    """400: a path segment, query parameter or body field that
    must be a UUID is not one.

    :param value: what was sent.
    """
    code = 'accel.invalid_uuid'
    msg_fmt = '%(value)r is not a valid UUID.'


class InvalidLimit(BadRequest):
    """400: ``?limit=`` is not ASCII digits from 0 to ``max``.

    :param value: what was sent (str).
    :param max: ``objects.paging.MAX_LIMIT`` (int).
    """
    code = 'accel.invalid_limit'
    msg_fmt = 'limit must be an integer from 0 to %(max)d, not %(value)r.'


class InvalidMarker(BadRequest):
    """400: ``?marker=`` is no UUID, or names no item of the
    collection the caller may see (``objects.paging.paginate``).

    :param marker: what was sent (str).
    """
    code = 'accel.invalid_marker'
    msg_fmt = 'Marker %(marker)r does not name an item of this collection.'


class Forbidden(AccelBackendError):
    """Policy denies the operation (``accel_backend.policy``)."""

    status = 403
    code = 'accel.policy.forbidden'
    msg_fmt = 'Policy does not allow %(action)s to be performed.'


class RequestTooLarge(AccelBackendError):
    """413: the body is larger than ``[oslo_middleware]
    max_request_body_size`` (by ``Content-Length`` or while read).

    :param limit: that size in bytes (int).
    """
    status = 413
    code = 'accel.request_too_large'
    msg_fmt = 'Request body is larger than %(limit)d bytes.'


class NotAcceptable(AccelBackendError):
    """406: ``OpenStack-API-Version: accelerator <v>`` is
    malformed or outside the supported range (``api.microversion``).

    :param version: what was sent (str).
    :param min: lowest supported version (str, ``'2.0'``).
    :param max: highest supported version (str).
    """
    status = 406
    code = 'accel.microversion.not_acceptable'
    msg_fmt = ('Version %(version)s is not supported by the API. Minimum is '
               '%(min)s and maximum is %(max)s.')


class NotFound(AccelBackendError):
    """404: the base of every "not found"; raised itself for a path no
    route matches.

    :param kind: what was looked for (str, ``'Resource'``).
    :param ident: its identifier or the path (str).
    """
    status = 404
    code = 'accel.not_found'
    msg_fmt = '%(kind)s %(ident)s could not be found.'


class DeviceProfileNotFound(NotFound):
    """404: no device profile has that UUID or name.

    :param ident: the UUID or name (str).
    """
    code = 'accel.device_profile.not_found'
    msg_fmt = 'Device profile %(ident)s could not be found.'


class ARQNotFound(NotFound):
    """404: no ARQ has that UUID (or none the caller may see).

    :param ident: the UUID (str).
    """
    code = 'accel.arq.not_found'
    msg_fmt = 'Accelerator request %(ident)s could not be found.'


class DeviceNotFound(NotFound):
    """404: no device has that UUID.

    :param ident: the UUID (str).
    """
    code = 'accel.device.not_found'
    msg_fmt = 'Device %(ident)s could not be found.'


class DeployableNotFound(NotFound):
    """404: no deployable has that UUID (or integer id).

    :param ident: the UUID (str) or id (int).
    """
    code = 'accel.deployable.not_found'
    msg_fmt = 'Deployable %(ident)s could not be found.'


class AttributeNotFound(NotFound):
    """404: no attribute has that UUID.

    :param ident: the UUID (str).
    """
    code = 'accel.attribute.not_found'
    msg_fmt = 'Attribute %(ident)s could not be found.'


class MethodNotAllowed(AccelBackendError):
    """405: the path exists but not with this method; the
    response carries ``Allow``.

    :param method: the request's method (str).
    :param path: the request's path (str).
    """
    status = 405
    code = 'accel.method_not_allowed'
    msg_fmt = 'Method %(method)s is not allowed on %(path)s.'


class Conflict(AccelBackendError):
    """409: the request conflicts with the stored state; the base of
    every 409 (raised through its subclasses, with their ``msg_fmt``).
    """
    status = 409
    code = 'accel.conflict'


class DeviceProfileExists(Conflict):
    """409: a device profile with that name exists (the name
    is unique).

    :param name: the name (str).
    """
    code = 'accel.device_profile.duplicate'
    msg_fmt = 'A device profile named %(name)s already exists.'


class DeviceProfileUUIDExists(Conflict):
    """409: a device profile with the UUID given at
    creation exists.

    :param uuid: the UUID (str).
    """
    code = 'accel.device_profile.duplicate_uuid'
    msg_fmt = 'A device profile with UUID %(uuid)s already exists.'


class DeviceProfileInUse(Conflict):
    """409: deleting a device profile that ARQs still refer to
    (Cyborg would orphan them).

    :param name: the profile's name (str).
    :param count: how many ARQs refer to it (int).
    """
    code = 'accel.device_profile.in_use'
    msg_fmt = ('Device profile %(name)s is used by %(count)d accelerator '
               'requests.')


class AttributeExists(Conflict):
    """409: the deployable already has an attribute with that
    key (keys are unique per deployable).

    :param deployable: the deployable's UUID (str).
    :param key: the key (str).
    """
    code = 'accel.attribute.duplicate'
    msg_fmt = 'Deployable %(deployable)s already has an attribute %(key)r.'


class DeviceMissing(Conflict):
    """409: enabling a device that discovery no longer finds on its host
    (its record is kept, health ``missing``: see ``objects.device``).

    :param uuid: the device's UUID (str).
    """
    code = 'accel.device.missing'
    msg_fmt = ('Device %(uuid)s is no longer present on its host; it cannot '
               'be enabled.')


class DeployableProgramUnsupported(Conflict):
    """409: ``PATCH /deployables/{uuid}/program`` for a
    deployable that no loaded discovery driver can program (Cyborg would
    answer 500).

    :param uuid: the deployable's UUID (str).
    :param driver: its ``driver_name`` (str).
    """
    code = 'accel.deployable.program_unsupported'
    msg_fmt = ('Deployable %(uuid)s (driver %(driver)s) cannot be '
               'programmed: no loaded driver supports programming it.')


class ARQInvalidState(Conflict):
    """409: the ARQ's state does not allow the operation (a bind
    of an ARQ bound elsewhere or not bindable; see
    ``accel_common.arq_states``).

    :param uuid: the ARQ's UUID (str).
    :param state: its state (str).
    :param op: the operation (str, ``'bind'``).
    :param allowed: the states that would allow it (str, comma-separated).
    """
    code = 'accel.arq.invalid_state'
    msg_fmt = ('Accelerator request %(uuid)s is in state %(state)s; '
               '%(op)s needs one of %(allowed)s.')


class ARQsUnresolved(AccelBackendError):
    """Cyborg's answer when resolved ARQs are asked for too early."""

    status = 423
    code = 'accel.arq.unresolved'
    msg_fmt = ('Accelerator requests of instance %(instance)s are still '
               'binding.')


class PlacementError(AccelBackendError):
    """502: Placement answered a call with an unexpected status
    (``placement.client``), or a provider's generation kept conflicting
    (``placement.report``).

    :param method: the HTTP method (str).
    :param url: the Placement URL (str).
    :param status: Placement's status code (int).
    :param body: Placement's answer, 500 characters at most (str).
    """
    status = 502
    code = 'accel.placement.error'
    msg_fmt = 'Placement call %(method)s %(url)s failed: %(status)s %(body)s'


class ComputeNodeProviderNotFound(AccelBackendError):
    """503: no resource provider of Placement is named
    like this host's compute node: the device providers have no parent
    yet.

    :param names: the names tried (list of str).
    """
    status = 503
    code = 'accel.placement.compute_node_not_found'
    msg_fmt = ('No resource provider named any of %(names)s in Placement: '
               'is nova-compute running on this host?')


class DeviceSpecError(AccelBackendError):
    """A ``[discovery] device_spec`` entry is malformed (config error)."""

    code = 'accel.config.device_spec'
    msg_fmt = 'Invalid device_spec %(spec)r: %(reason)s'


class SysfsRootUnavailable(AccelBackendError):
    """Discovery refuses to act on a sysfs root it cannot read: an absent
    root would look like a host without devices and remove them all."""
    status = 503
    code = 'accel.discovery.root_unavailable'
    msg_fmt = ('Cannot read the PCI devices under %(root)s (%(reason)s): '
               'check [discovery] sysfs_root; nothing was discovered, '
               'reported or removed')


class MassRemovalRefused(AccelBackendError):
    """One discovery or report pass would remove more than
    ``[discovery] max_removal_share`` of a host's devices."""
    status = 409
    code = 'accel.discovery.mass_removal_refused'
    msg_fmt = ('Refusing to remove %(removing)d of the %(total)d '
               '%(what)s of host %(host)s in one pass (more than '
               '[discovery] max_removal_share = %(share)s); kept: '
               '%(kept)s. If they are really gone, run '
               '`accel-backend-manage discovery sync --force`')


class NovaPCIConfigUnusable(AccelBackendError):
    """Nova's ``[pci] device_spec`` cannot be read or holds a line from
    which not even a vendor id can be told: accel_backend cannot know
    which devices Nova's PCI passthrough claims, so it refuses to guess
    (it would offer them twice)."""
    status = 503
    code = 'accel.discovery.nova_pci_unusable'
    msg_fmt = ('Nova\'s [pci] device_spec cannot be used (%(reason)s): '
               'fix %(source)s; accel_backend will not guess which devices '
               'Nova claims')


class NovaPCISpecWithheld(AccelBackendError):
    """Some of Nova's ``[pci] device_spec`` values do not parse: the
    devices of the ids they name are left to Nova (withheld), the others
    are reported.  Recorded as the host's status, never raised to a
    caller."""
    status = 503
    code = 'accel.discovery.nova_pci_withheld'
    msg_fmt = ('%(problems)s; fix Nova\'s [pci] device_spec (the devices '
               'of these ids stay withheld until it parses)')


class NoIOMMU(AccelBackendError):
    """Functions a passthrough driver would offer have no IOMMU group: the
    host's IOMMU is off, vfio-pci cannot assign them, and they are
    reported unhealthy.  Recorded as the host's status, never raised."""
    status = 503
    code = 'accel.discovery.no_iommu'
    msg_fmt = ('%(addresses)s: no IOMMU group (the IOMMU is off: enable '
               'VT-d or AMD-Vi in the firmware and intel_iommu=on or '
               'amd_iommu=on on the kernel command line); not offered')


class SchemaOutOfDate(AccelBackendError):
    """The database schema is not at the revision this code needs; the
    process refuses to start rather than run on it."""
    status = 503
    code = 'accel.database.schema_out_of_date'
    msg_fmt = ('the database schema is at revision %(current)s, this '
               'release needs %(head)s: run accel-backend-manage db sync')


class DatabaseOptionUnsupported(AccelBackendError):
    """A ``[database]`` option oslo.db offers that accel_backend does not
    honour is set (``accel_backend.db.api``): refused at start rather
    than silently ignored."""

    code = 'accel.config.database'
    msg_fmt = ('[database] %(option)s is not supported: %(reason)s; unset '
               'it')


class CyborgImportRefused(AccelBackendError):
    """``accel-backend-manage import-cyborg`` will not run: Cyborg is
    still writing, or the source is no Cyborg 17 database
    (``accel_backend.cyborg_import``)."""

    code = 'accel.cyborg_import.refused'
    msg_fmt = 'Cyborg import refused: %(reason)s'
