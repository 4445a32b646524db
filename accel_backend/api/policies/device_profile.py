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

"""Policies of ``/v2/device_profiles``.

Profiles are cloud-wide (the operator's catalogue of accelerator kinds,
referred to by flavors), so only administrators create or delete them.
Readers of any project (and service users) may read them: Nova reads them
with the user's token when it boots a server. The target of a read is the
caller's own project. Legacy default of the reads: any authenticated user.
Cyborg 17: ``cyborg/policies/device_profiles.py``.
"""

from oslo_policy import policy

from accel_backend.api.policies import base

PREFIX = 'accelerator:device_profile:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
CREATE = PREFIX % 'create'
DELETE = PREFIX % 'delete'

READ = '%s or %s' % (base.PROJECT_READER_OR_ADMIN, base.SERVICE)

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=READ,
        description='List device profiles (optionally by name).',
        operations=[{'method': 'GET', 'path': '/v2/device_profiles'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ALL, base.ANY_AUTHENTICATED)),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=READ,
        description='Show a device profile by UUID (or by name from '
                    'microversion 2.2).',
        operations=[{'method': 'GET',
                     'path': '/v2/device_profiles/{device_profile_uuid}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ONE, base.ANY_AUTHENTICATED)),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.ADMIN,
        description='Create a device profile.',
        operations=[{'method': 'POST', 'path': '/v2/device_profiles'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description='Delete device profiles.',
        operations=[
            {'method': 'DELETE',
             'path': '/v2/device_profiles/{device_profile_uuid}'},
            {'method': 'DELETE',
             'path': '/v2/device_profiles?value={names_or_uuids}'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    """The device profile rules (list of
    ``oslo_policy.policy.DocumentedRuleDefault``) for
    ``accel_backend.api.policies.list_rules``."""
    return rules
