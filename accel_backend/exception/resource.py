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

"""Errors about the stored resources a request names: not found (404),
conflicting with their state (409), and ARQs still binding (423)."""

from accel_backend.exception.base import AccelBackendError
from accel_backend.exception import codes


class NotFound(AccelBackendError):
    """404: the base of every "not found"; raised itself for a path no
    route matches.

    :param kind: what was looked for (str, ``'Resource'``).
    :param ident: its identifier or the path (str).
    """
    status = 404
    code = codes.NOT_FOUND
    msg_fmt = '%(kind)s %(ident)s could not be found.'


class DeviceProfileNotFound(NotFound):
    """404: no device profile has that UUID or name.

    :param ident: the UUID or name (str).
    """
    code = codes.DEVICE_PROFILE_NOT_FOUND
    msg_fmt = 'Device profile %(ident)s could not be found.'


class ARQNotFound(NotFound):
    """404: no ARQ has that UUID (or none the caller may see).

    :param ident: the UUID (str).
    """
    code = codes.ARQ_NOT_FOUND
    msg_fmt = 'Accelerator request %(ident)s could not be found.'


class DeviceNotFound(NotFound):
    """404: no device has that UUID.

    :param ident: the UUID (str).
    """
    code = codes.DEVICE_NOT_FOUND
    msg_fmt = 'Device %(ident)s could not be found.'


class DeployableNotFound(NotFound):
    """404: no deployable has that UUID (or integer id).

    :param ident: the UUID (str) or id (int).
    """
    code = codes.DEPLOYABLE_NOT_FOUND
    msg_fmt = 'Deployable %(ident)s could not be found.'


class AttributeNotFound(NotFound):
    """404: no attribute has that UUID.

    :param ident: the UUID (str).
    """
    code = codes.ATTRIBUTE_NOT_FOUND
    msg_fmt = 'Attribute %(ident)s could not be found.'


class TaintNotFound(NotFound):
    """404: the deployable has no taint with that UUID (or key).

    :param ident: the UUID or key (str).
    """
    code = codes.TAINT_NOT_FOUND
    msg_fmt = 'Taint %(ident)s could not be found.'


class Conflict(AccelBackendError):
    """409: the request conflicts with the stored state; the base of
    every 409 (raised through its subclasses, with their ``msg_fmt``).
    """
    status = 409
    code = codes.CONFLICT


class DeviceProfileExists(Conflict):
    """409: a device profile with that name exists (the name
    is unique).

    :param name: the name (str).
    """
    code = codes.DEVICE_PROFILE_DUPLICATE
    msg_fmt = 'A device profile named %(name)s already exists.'


class DeviceProfileUUIDExists(Conflict):
    """409: a device profile with the UUID given at
    creation exists.

    :param uuid: the UUID (str).
    """
    code = codes.DEVICE_PROFILE_DUPLICATE_UUID
    msg_fmt = 'A device profile with UUID %(uuid)s already exists.'


class DeviceProfileInUse(Conflict):
    """409: deleting a device profile that ARQs still refer to
    (Cyborg would orphan them).

    :param name: the profile's name (str).
    :param count: how many ARQs refer to it (int).
    """
    code = codes.DEVICE_PROFILE_IN_USE
    msg_fmt = ('Device profile %(name)s is used by %(count)d accelerator '
               'requests.')


class AttributeExists(Conflict):
    """409: the deployable already has an attribute with that
    key (keys are unique per deployable).

    :param deployable: the deployable's UUID (str).
    :param key: the key (str).
    """
    code = codes.ATTRIBUTE_DUPLICATE
    msg_fmt = 'Deployable %(deployable)s already has an attribute %(key)r.'


class DeviceMissing(Conflict):
    """409: enabling a device that discovery no longer finds on its host
    (its record is kept, health ``missing``: see ``objects.device``).

    :param uuid: the device's UUID (str).
    """
    code = codes.DEVICE_MISSING
    msg_fmt = ('Device %(uuid)s is no longer present on its host; it cannot '
               'be enabled.')


class DeployableProgramUnsupported(Conflict):
    """409: ``PATCH /deployables/{uuid}/program`` for a
    deployable that no loaded discovery driver can program (Cyborg would
    answer 500).

    :param uuid: the deployable's UUID (str).
    :param driver: its ``driver_name`` (str).
    """
    code = codes.DEPLOYABLE_PROGRAM_UNSUPPORTED
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
    code = codes.ARQ_INVALID_STATE
    msg_fmt = ('Accelerator request %(uuid)s is in state %(state)s; '
               '%(op)s needs one of %(allowed)s.')


class ARQsUnresolved(AccelBackendError):
    """Cyborg's answer when resolved ARQs are asked for too early."""

    status = 423
    code = codes.ARQ_UNRESOLVED
    msg_fmt = ('Accelerator requests of instance %(instance)s are still '
               'binding.')
