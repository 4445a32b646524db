"""Policies of ``/v2/devices``.

Devices reveal the cloud's hosts and hardware, so reading them is for
administrators only, as is taking a device in or out of service.
"""

from oslo_policy import policy

from accel_backend.policies import base

PREFIX = 'accelerator:device:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
ENABLE = PREFIX % 'enable'
DISABLE = PREFIX % 'disable'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.RULE_ADMIN_API,
        description='List devices.',
        operations=[{'method': 'GET', 'path': '/v2/devices'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.RULE_ADMIN_API,
        description='Show a device.',
        operations=[{'method': 'GET', 'path': '/v2/devices/{device_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=ENABLE, check_str=base.RULE_ADMIN_API,
        description='Put a device back in service (its inventory is no '
                    'longer reserved in Placement).',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/enable'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DISABLE, check_str=base.RULE_ADMIN_API,
        description='Take a device out of service (its inventory is '
                    'reserved in Placement).',
        operations=[{'method': 'POST',
                     'path': '/v2/devices/{device_uuid}/disable'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    return rules
