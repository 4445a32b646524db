#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Client of the accelerator (Cyborg v2) API for nova-accel.

The wire contract is that of Nova 34's own client (nova 34.0.0,
``nova/accelerator/cyborg.py``); the behaviour that of the
nova-cyborg-interaction spec (nova-specs,
``specs/ussuri/approved/nova-cyborg-interaction.rst``), sections "Accelerator
Requests" and ``match-rp``.
"""

from nova_accel.cyborg_client.client import AcceleratorClient
from nova_accel.cyborg_client.client import RESOLVED_STATES
from nova_accel.cyborg_client.exception import AcceleratorClientError
from nova_accel.cyborg_client.exception import AcceleratorServiceUnavailable
from nova_accel.cyborg_client.exception import ARQBindFailed
from nova_accel.cyborg_client.exception import ARQCreateFailed
from nova_accel.cyborg_client.exception import ARQDeleteFailed
from nova_accel.cyborg_client.exception import ARQMatchError
from nova_accel.cyborg_client.exception import ARQNotFound
from nova_accel.cyborg_client.exception import ARQUnbindFailed
from nova_accel.cyborg_client.exception import DeviceProfileAmbiguous
from nova_accel.cyborg_client.exception import DeviceProfileNotFound
from nova_accel.cyborg_client.exception import InvalidDeviceProfile
from nova_accel.cyborg_client.request_groups import (
    device_profile_request_groups)
from nova_accel.cyborg_client.request_groups import device_count
from nova_accel.cyborg_client.request_groups import match_arqs_to_providers
from nova_accel.cyborg_client.request_groups import requester_id

__all__ = [
    'AcceleratorClient', 'RESOLVED_STATES',
    'AcceleratorClientError', 'AcceleratorServiceUnavailable',
    'ARQBindFailed', 'ARQCreateFailed', 'ARQDeleteFailed', 'ARQMatchError',
    'ARQNotFound', 'ARQUnbindFailed', 'DeviceProfileAmbiguous',
    'DeviceProfileNotFound', 'InvalidDeviceProfile',
    'device_count', 'device_profile_request_groups',
    'match_arqs_to_providers', 'requester_id',
]
