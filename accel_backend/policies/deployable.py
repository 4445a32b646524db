"""Policies of ``/v2/deployables``: administrators only (they reveal
hosts and resource providers; programming changes the hardware)."""

from oslo_policy import policy

from accel_backend.policies import base

PREFIX = 'accelerator:deployable:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
PROGRAM = PREFIX % 'program'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.RULE_ADMIN_API,
        description='List deployables.',
        operations=[{'method': 'GET', 'path': '/v2/deployables'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.RULE_ADMIN_API,
        description='Show a deployable.',
        operations=[{'method': 'GET',
                     'path': '/v2/deployables/{deployable_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=PROGRAM, check_str=base.RULE_ADMIN_API,
        description='Program a deployable (e.g. an FPGA bitstream).',
        operations=[{'method': 'PATCH',
                     'path': '/v2/deployables/{deployable_uuid}/program'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    return rules
