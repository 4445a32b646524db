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

"""Every stable error code of accel_backend, defined once.

A code is the ``code`` of an ``AccelBackendError`` subclass.  The API
puts it in the ``code`` member of its error documents (``{"errors":
[{"status", "code", "title", "detail", "request_id"}]}``), and a host
that refuses to start, fails or degrades a discovery pass records it as
its status's ``code`` (``objects.host_status``; ``accel-backend-status``
and the health check show it).  Codes are part of the API contract:
clients and operators' tooling match on them, so a value is never
changed nor reused for another error; a new error gets a new constant.
This follows openstack/placement, ``placement/errors.py`` (openstack-
placement 16), where each exception names its code as ``errors.X``.

Every value is ``accel.<word>`` or ``accel.<topic>.<word>`` (lower case
and ``_``) and every constant is named after its value: the value
without ``accel.``, ``.`` turned into ``_``, in upper case
(``'accel.arq.not_found'`` is ``ARQ_NOT_FOUND``).
``tests.unit.accel_backend.test_error_codes`` checks both rules, that
no two constants share a value and that every exception of
accel_backend uses one of them.
"""

#: Any error without a code of its own (``AccelBackendError``), 500.
INTERNAL_ERROR = 'accel.internal_error'

# Requests the API cannot serve as sent (``exception.request``).
UNAUTHORIZED = 'accel.unauthorized'
BAD_REQUEST = 'accel.bad_request'
INVALID_JSON = 'accel.invalid_json'
SCHEMA_VALIDATION = 'accel.schema_validation'
DEVICE_PROFILE_INVALID = 'accel.device_profile.invalid'
ARQ_INVALID_PATCH = 'accel.arq.invalid_patch'
INVALID_UUID = 'accel.invalid_uuid'
INVALID_LIMIT = 'accel.invalid_limit'
INVALID_MARKER = 'accel.invalid_marker'
#: A taint names a function that is no member of the pooled deployable,
#: or a function of a deployable that is not pooled (``objects.taint``).
TAINT_INVALID_FUNCTION = 'accel.taint.invalid_function'
POLICY_FORBIDDEN = 'accel.policy.forbidden'
REQUEST_TOO_LARGE = 'accel.request_too_large'
MICROVERSION_NOT_ACCEPTABLE = 'accel.microversion.not_acceptable'
METHOD_NOT_ALLOWED = 'accel.method_not_allowed'

# Missing and conflicting resources (``exception.resource``).
NOT_FOUND = 'accel.not_found'
DEVICE_PROFILE_NOT_FOUND = 'accel.device_profile.not_found'
ARQ_NOT_FOUND = 'accel.arq.not_found'
DEVICE_NOT_FOUND = 'accel.device.not_found'
DEPLOYABLE_NOT_FOUND = 'accel.deployable.not_found'
ATTRIBUTE_NOT_FOUND = 'accel.attribute.not_found'
TAINT_NOT_FOUND = 'accel.taint.not_found'
CONFLICT = 'accel.conflict'
DEVICE_PROFILE_DUPLICATE = 'accel.device_profile.duplicate'
DEVICE_PROFILE_DUPLICATE_UUID = 'accel.device_profile.duplicate_uuid'
DEVICE_PROFILE_IN_USE = 'accel.device_profile.in_use'
ATTRIBUTE_DUPLICATE = 'accel.attribute.duplicate'
DEVICE_MISSING = 'accel.device.missing'
DEPLOYABLE_PROGRAM_UNSUPPORTED = 'accel.deployable.program_unsupported'
ARQ_INVALID_STATE = 'accel.arq.invalid_state'
ARQ_UNRESOLVED = 'accel.arq.unresolved'
#: A bind PATCH could not be handed to a conductor
#: (``conductor.dispatcher.BindDispatchFailed``).
ARQ_BIND_DISPATCH_FAILED = 'accel.arq.bind_dispatch_failed'

# Discovery and its configuration (``exception.discovery``); mostly
# recorded as a host's status.
CONFIG_DEVICE_SPEC = 'accel.config.device_spec'
DISCOVERY_ROOT_UNAVAILABLE = 'accel.discovery.root_unavailable'
DISCOVERY_MASS_REMOVAL_REFUSED = 'accel.discovery.mass_removal_refused'
DISCOVERY_NOVA_PCI_UNUSABLE = 'accel.discovery.nova_pci_unusable'
DISCOVERY_NOVA_PCI_WITHHELD = 'accel.discovery.nova_pci_withheld'
DISCOVERY_NO_IOMMU = 'accel.discovery.no_iommu'
DISCOVERY_NO_INTERRUPT_REMAPPING = 'accel.discovery.no_interrupt_remapping'
DISCOVERY_POOL_MIGRATION_INCOMPLETE = (
    'accel.discovery.pool_migration_incomplete')

# Services accel_backend depends on, and the refusals of its own
# services to start (``exception.service``).
PLACEMENT_ERROR = 'accel.placement.error'
PLACEMENT_COMPUTE_NODE_NOT_FOUND = 'accel.placement.compute_node_not_found'
DATABASE_SCHEMA_OUT_OF_DATE = 'accel.database.schema_out_of_date'
DATABASE_SCHEMA_CONTRACTED_AHEAD = 'accel.database.schema_contracted_ahead'
DATABASE_SCHEMA_REVISION_UNKNOWN = 'accel.database.schema_revision_unknown'
CONFIG_DATABASE = 'accel.config.database'
CYBORG_IMPORT_REFUSED = 'accel.cyborg_import.refused'
CONDUCTOR_NOT_THIS_HOST = 'accel.conductor.not_this_host'
CONDUCTOR_UNAVAILABLE = 'accel.conductor.unavailable'
