"""Policies of ``/v2/device_profiles``.

Profiles are cloud-wide (the operator's catalogue of accelerator kinds,
referred to by flavors), so only administrators create or delete them;
every authenticated user may read them (Nova reads them with the user's
token when it boots a server).
"""

from oslo_policy import policy

from accel_backend.policies import base

PREFIX = 'accelerator:device_profile:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
CREATE = PREFIX % 'create'
DELETE = PREFIX % 'delete'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.ANY_AUTHENTICATED,
        description='List device profiles (optionally by name).',
        operations=[{'method': 'GET', 'path': '/v2/device_profiles'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.ANY_AUTHENTICATED,
        description='Show a device profile by UUID (or by name from '
                    'microversion 2.2).',
        operations=[{'method': 'GET',
                     'path': '/v2/device_profiles/{device_profile_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.RULE_ADMIN_API,
        description='Create a device profile.',
        operations=[{'method': 'POST', 'path': '/v2/device_profiles'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.RULE_ADMIN_API,
        description='Delete device profiles.',
        operations=[
            {'method': 'DELETE',
             'path': '/v2/device_profiles/{device_profile_uuid}'},
            {'method': 'DELETE',
             'path': '/v2/device_profiles?value={names_or_uuids}'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    return rules
