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

"""Policies of ``/v2/deployables``: read by administrators and project
managers (legacy default: administrators only), programmed by
administrators (it changes the hardware); the free units per NUMA node
(accel_backend's own, microversion 2.4) are read by services and
administrators. Cyborg 17:
``cyborg/policies/deployables.py``."""

from oslo_policy import policy

from accel_backend.api.policies import base

PREFIX = 'accelerator:deployable:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
#: Free units per NUMA node of the pools spanning nodes (microversion
#: 2.4, accel_backend only): Nova's scheduler filter reads it with Nova's
#: ``[service_user]`` credentials (``service`` role, install guide).
GET_FREE_BY_NUMA_NODE = PREFIX % 'get_free_by_numa_node'
PROGRAM = PREFIX % 'program'
#: Taint and untaint a deployable (microversion 2.5, accel_backend only);
#: reading its taints is ``GET_ONE``.
TAINT = PREFIX % 'taint'
UNTAINT = PREFIX % 'untaint'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='List deployables.',
        operations=[{'method': 'GET', 'path': '/v2/deployables'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ALL, base.ADMIN)),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='Show a deployable.',
        operations=[{'method': 'GET',
                     'path': '/v2/deployables/{deployable_uuid}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ONE, base.ADMIN)),
    policy.DocumentedRuleDefault(
        name=GET_FREE_BY_NUMA_NODE,
        check_str='%s or %s' % (base.SERVICE, base.ADMIN),
        description='Free units per NUMA node of the pools spanning NUMA '
                    'nodes (microversion 2.4; read by Nova\'s scheduler '
                    'filter AcceleratorNumaFitFilter).',
        operations=[{'method': 'GET',
                     'path': '/v2/deployables/free_by_numa_node'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=PROGRAM, check_str=base.ADMIN,
        description='Program a deployable (e.g. an FPGA bitstream).',
        operations=[{'method': 'PATCH',
                     'path': '/v2/deployables/{deployable_uuid}/program'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=TAINT, check_str=base.ADMIN,
        description='Taint a deployable or one function of a pooled '
                    'deployable (microversion 2.5): NoSchedule or '
                    'NoExecute keep it out of scheduling.  Its taints '
                    'are read under accelerator:deployable:get_one.',
        operations=[{'method': 'POST',
                     'path': '/v2/deployables/{deployable_uuid}/taints'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=UNTAINT, check_str=base.ADMIN,
        description='Remove a taint of a deployable (microversion 2.5).',
        operations=[{'method': 'DELETE',
                     'path': '/v2/deployables/{deployable_uuid}/taints/'
                             '{taint_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    """The deployable rules (list of
    ``oslo_policy.policy.DocumentedRuleDefault``) for
    ``accel_backend.api.policies.list_rules``."""
    return rules
