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

"""Policies of ``/v2/devices``.

Devices reveal the cloud's hosts and hardware: reading them is for
administrators and project managers (capacity planning, troubleshooting;
legacy default: administrators only); taking a device in or out of
service is for administrators. Cyborg 17: ``cyborg/policies/devices.py``.
"""

from oslo_policy import policy

from accel_backend.api.policies import base

PREFIX = 'accelerator:device:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
ENABLE = PREFIX % 'enable'
DISABLE = PREFIX % 'disable'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='List devices.',
        operations=[{'method': 'GET', 'path': '/v2/devices'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ALL, base.ADMIN)),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='Show a device.',
        operations=[{'method': 'GET', 'path': '/v2/devices/{device_uuid}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ONE, base.ADMIN)),
    policy.DocumentedRuleDefault(
        name=ENABLE, check_str=base.ADMIN,
        description='Put a device back in service (its inventory is no '
                    'longer reserved in Placement).',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/enable'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DISABLE, check_str=base.ADMIN,
        description='Take a device out of service (its inventory is '
                    'reserved in Placement).',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/disable'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    """The device rules (list of ``oslo_policy.policy.DocumentedRuleDefault``)
    for ``accel_backend.api.policies.list_rules``."""
    return rules
