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
Every code is a constant of ``codes`` (``exception.codes.ARQ_NOT_FOUND``),
defined there once, and each class names its constant.

The classes live in topical modules (``base``, ``request``,
``resource``, ``discovery``, ``service``, ``mig``); every one is
importable from here, as ``from accel_backend import exception;
exception.NotFound``.
"""

from accel_backend.exception.base import AccelBackendError
from accel_backend.exception import codes
from accel_backend.exception.discovery import DeviceSpecError
from accel_backend.exception.discovery import MassRemovalRefused
from accel_backend.exception.discovery import NoInterruptRemapping
from accel_backend.exception.discovery import NoIOMMU
from accel_backend.exception.discovery import NovaPCIConfigUnusable
from accel_backend.exception.discovery import NovaPCISpecWithheld
from accel_backend.exception.discovery import SysfsRootUnavailable
from accel_backend.exception.mig import MigCommandFailed
from accel_backend.exception.mig import MigInstanceNotFound
from accel_backend.exception.mig import MigLayoutRefused
from accel_backend.exception.mig import MigModelUnknown
from accel_backend.exception.request import BadRequest
from accel_backend.exception.request import Forbidden
from accel_backend.exception.request import InvalidDeviceProfile
from accel_backend.exception.request import InvalidJSON
from accel_backend.exception.request import InvalidLimit
from accel_backend.exception.request import InvalidMarker
from accel_backend.exception.request import InvalidPatch
from accel_backend.exception.request import InvalidUUID
from accel_backend.exception.request import MethodNotAllowed
from accel_backend.exception.request import NotAcceptable
from accel_backend.exception.request import RequestTooLarge
from accel_backend.exception.request import SchemaValidationError
from accel_backend.exception.request import TaintFunctionInvalid
from accel_backend.exception.request import Unauthorized
from accel_backend.exception.resource import ARQInvalidState
from accel_backend.exception.resource import ARQNotFound
from accel_backend.exception.resource import ARQsUnresolved
from accel_backend.exception.resource import AttributeExists
from accel_backend.exception.resource import AttributeNotFound
from accel_backend.exception.resource import Conflict
from accel_backend.exception.resource import DeployableNotFound
from accel_backend.exception.resource import DeployableProgramUnsupported
from accel_backend.exception.resource import DeviceMissing
from accel_backend.exception.resource import DeviceNotFound
from accel_backend.exception.resource import DeviceProfileExists
from accel_backend.exception.resource import DeviceProfileInUse
from accel_backend.exception.resource import DeviceProfileNotFound
from accel_backend.exception.resource import DeviceProfileUUIDExists
from accel_backend.exception.resource import NotFound
from accel_backend.exception.resource import TaintNotFound
from accel_backend.exception.service import ComputeNodeProviderNotFound
from accel_backend.exception.service import ConductorUnavailable
from accel_backend.exception.service import CyborgImportRefused
from accel_backend.exception.service import DatabaseOptionUnsupported
from accel_backend.exception.service import NotThisHost
from accel_backend.exception.service import PlacementError
from accel_backend.exception.service import PoolMigrationIncomplete
from accel_backend.exception.service import SchemaContractedAhead
from accel_backend.exception.service import SchemaOutOfDate
from accel_backend.exception.service import SchemaRevisionUnknown

__all__ = [
    'codes', 'AccelBackendError', 'DeviceSpecError', 'MassRemovalRefused',
    'NoInterruptRemapping', 'NoIOMMU', 'NovaPCIConfigUnusable',
    'NovaPCISpecWithheld', 'SysfsRootUnavailable',
    'MigCommandFailed', 'MigInstanceNotFound', 'MigLayoutRefused',
    'MigModelUnknown', 'BadRequest', 'Forbidden',
    'InvalidDeviceProfile', 'InvalidJSON', 'InvalidLimit', 'InvalidMarker',
    'InvalidPatch', 'InvalidUUID', 'MethodNotAllowed', 'NotAcceptable',
    'RequestTooLarge', 'SchemaValidationError', 'TaintFunctionInvalid',
    'Unauthorized',
    'ARQInvalidState', 'ARQNotFound', 'ARQsUnresolved', 'AttributeExists',
    'AttributeNotFound', 'Conflict', 'DeployableNotFound',
    'DeployableProgramUnsupported', 'DeviceMissing', 'DeviceNotFound',
    'DeviceProfileExists', 'DeviceProfileInUse', 'DeviceProfileNotFound',
    'DeviceProfileUUIDExists', 'NotFound', 'TaintNotFound',
    'ComputeNodeProviderNotFound',
    'ConductorUnavailable', 'CyborgImportRefused',
    'DatabaseOptionUnsupported', 'NotThisHost', 'PlacementError',
    'PoolMigrationIncomplete',
    'SchemaOutOfDate', 'SchemaContractedAhead', 'SchemaRevisionUnknown',
]
