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

"""Policies of ``/v2/accelerator_requests`` (ARQs).

New defaults (Cyborg 17's shape, openstack-cyborg 17.0.0
``cyborg/policies/arqs.py``): readers of a project read its ARQs, members
(or a service user) create and delete the ARQs that hold no device, and
moving a device between tenants needs a service token.

Where accel_backend is stricter than Cyborg, on purpose
---------------------------------------------------------
* ARQs are scoped to their project: list and show see only the caller's
  project's ARQs (filtered in SQL), and another project's ARQ answers 404
  (not 403, so its existence does not leak); deletes by ``instance=`` or
  ``arqs=`` touch only the caller's project's ARQs. Administrators and
  services (``accelerator:arq:all_projects``) see every project: Nova may
  act with the token of a user of another project on a server.
* Bind and unbind (``PATCH``) and deleting an ARQ that holds or is getting
  a device (``accelerator:arq:delete_bound``) need an ``X-Service-Token``
  with the ``service`` role, for every caller, administrators included,
  as Cyborg 17 requires since its fix of CVE-2026-40214. These two rules
  have no deprecated legacy default: ``enforce_new_defaults = False``
  must not reopen the hole. Nova sends the service token with
  ``[service_user] send_service_user_token = true`` (required by Nova
  since CVE-2023-2088 anyway); without it Nova's binds fail with 403
  ``accel.policy.forbidden`` and servers with accelerators do not boot.
  An operator who accepts the risk can loosen them in the policy file,
  e.g. ``"accelerator:arq:update": "rule:service_token_api or
  rule:admin_api"``.
* Show, bind/unbind and delete check their rule on each ARQ's project
  (target ``{"project_id": <the ARQ's>, "user_id": ""}``: an ARQ has no
  owning user), not only on the caller's, as Cyborg 17's
  ``authorize_wsgi`` does. The check made before any ARQ is read (403
  rather than 404 for a caller the rule refuses outright) has the target
  of an ARQ of the caller's own project, which is then not checked again.
"""

from oslo_policy import policy

from accel_backend.api.policies import base

PREFIX = 'accelerator:arq:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
ALL_PROJECTS = PREFIX % 'all_projects'
CREATE = PREFIX % 'create'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'
DELETE_BOUND = PREFIX % 'delete_bound'

COLLECTION = '/v2/accelerator_requests'

# Nova reads the ARQs of its servers with the user's token (and its
# service token); a service user (hot-plug) with its own.
READ = '%s or %s or %s' % (base.PROJECT_READER_OR_ADMIN, base.SERVICE,
                           base.SERVICE_TOKEN)
ALL_PROJECTS_CHECK = '%s or %s or %s' % (base.ADMIN, base.SERVICE,
                                         base.SERVICE_TOKEN)
LEGACY = base.LEGACY_ADMIN_OR_OWNER
# Deleting an ARQ that holds no device frees nothing: its project's
# members, service users, and a service token (Nova cleaning up a failed
# build with the token of an admin of another project).
DELETE_UNBOUND = '%s or %s' % (base.PROJECT_MEMBER_OR_SERVICE,
                               base.SERVICE_TOKEN)

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=READ,
        description='List ARQs (optionally of one instance). The target '
                    'is the caller\'s project; only ARQs of that project '
                    'are listed unless %s passes.' % ALL_PROJECTS,
        operations=[{'method': 'GET', 'path': COLLECTION},
                    {'method': 'GET',
                     'path': COLLECTION + '?instance={instance_uuid}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ALL, LEGACY)),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=READ,
        description='Show an ARQ; the target is the ARQ\'s project. An ARQ '
                    'the caller may not see answers 404.',
        operations=[{'method': 'GET', 'path': COLLECTION + '/{arq_uuid}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(GET_ONE, LEGACY)),
    policy.DocumentedRuleDefault(
        name=ALL_PROJECTS, check_str=ALL_PROJECTS_CHECK,
        description='See, bind and delete the ARQs of every project, not '
                    'only those of the caller\'s project.',
        operations=[{'method': 'GET', 'path': COLLECTION},
                    {'method': 'GET', 'path': COLLECTION + '/{arq_uuid}'},
                    {'method': 'PATCH', 'path': COLLECTION},
                    {'method': 'DELETE', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.PROJECT_MEMBER_OR_SERVICE,
        description='Create ARQs from a device profile; they belong to the '
                    'caller\'s project (the target).',
        operations=[{'method': 'POST', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(CREATE, LEGACY)),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.SERVICE_TOKEN,
        description='Bind or unbind ARQs (JSON-patch); the target is each '
                    'ARQ\'s project. Nova binds with its service token.',
        operations=[{'method': 'PATCH', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=DELETE_UNBOUND,
        description='Delete ARQs that hold no device (Initial, Unbound); '
                    'the target is each ARQ\'s project.',
        operations=[{'method': 'DELETE',
                     'path': COLLECTION + '?instance={instance_uuid}'},
                    {'method': 'DELETE',
                     'path': COLLECTION + '?arqs={arq_uuids}'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.deprecated(DELETE, LEGACY)),
    policy.DocumentedRuleDefault(
        name=DELETE_BOUND, check_str=base.SERVICE_TOKEN,
        description='Delete ARQs that are bound or binding (every state '
                    'but Initial and Unbound), releasing their device.',
        operations=[{'method': 'DELETE',
                     'path': COLLECTION + '?instance={instance_uuid}'},
                    {'method': 'DELETE',
                     'path': COLLECTION + '?arqs={arq_uuids}'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    """The ARQ rules (list of ``oslo_policy.policy.DocumentedRuleDefault``)
    for ``accel_backend.api.policies.list_rules``."""
    return rules
