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

"""Policies of ``/v2/attributes``: read by administrators and project
managers, as deployables (legacy default: administrators only); written
by administrators. Cyborg 17: ``cyborg/policies/attributes.py``."""

from oslo_policy import policy

from accel_backend.api.policies import base

PREFIX = 'accelerator:attribute:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
CREATE = PREFIX % 'create'
DELETE = PREFIX % 'delete'

COLLECTION = '/v2/attributes'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='List attributes (optionally of one deployable).',
        operations=[{'method': 'GET', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ALL, base.ADMIN)),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description='Show an attribute.',
        operations=[{'method': 'GET',
                     'path': COLLECTION + '/{attribute_uuid}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ONE, base.ADMIN)),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.ADMIN,
        description='Add an attribute to a deployable.',
        operations=[{'method': 'POST', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description='Delete an attribute.',
        operations=[{'method': 'DELETE',
                     'path': COLLECTION + '/{attribute_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    """The attribute rules (list of
    ``oslo_policy.policy.DocumentedRuleDefault``) for
    ``accel_backend.api.policies.list_rules``."""
    return rules
