"""Policies of ``/v2/accelerator_requests`` (ARQs).

Deviation from Cyborg (on purpose)
----------------------------------
Cyborg 17's defaults let any authenticated user list, show, bind, unbind
and delete the ARQs of *every* project (CVE-2026-40214, REFERENCE.md "Known
weaknesses"): a tenant could read which hosts and devices other tenants
use, steal a device by re-binding another tenant's ARQ, or free it under a
running guest.  accel_backend instead:

* scopes ARQs to their project: list and show see only the caller's
  project's ARQs (filtered in SQL), and another project's ARQ answers 404
  (not 403, so its existence does not leak); deletes by ``instance=`` or
  ``arqs=`` touch only the caller's project's ARQs;
* lets only OpenStack services bind and unbind: ``PATCH`` needs an
  ``X-Service-Token`` with the ``service`` role (Nova sends one with
  ``[service_user] send_service_user_token = true``) or an administrator;
* lets a project member delete its own ARQs only while they hold no device
  (``Initial``, ``Unbound``); deleting one that is (being) bound is for
  services and administrators, as Nova does when it deletes a server.

Services and administrators (``accelerator:arq:all_projects``) see and
delete the ARQs of every project: Nova may act with the token of a user
of another project (an administrator's) on a server.

Deployments must therefore configure Nova's ``[service_user]`` with
``send_service_user_token = true`` (required by Nova since
CVE-2023-2088 anyway); without it Nova's binds fail with 403
``accel.policy.forbidden`` and servers with accelerators do not boot.
"""

from oslo_policy import policy

from accel_backend.policies import base

PREFIX = 'accelerator:arq:%s'
GET_ALL = PREFIX % 'get_all'
GET_ONE = PREFIX % 'get_one'
ALL_PROJECTS = PREFIX % 'all_projects'
CREATE = PREFIX % 'create'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'
DELETE_BOUND = PREFIX % 'delete_bound'

COLLECTION = '/v2/accelerator_requests'

rules = [
    policy.DocumentedRuleDefault(
        name=GET_ALL, check_str=base.RULE_ADMIN_OR_OWNER,
        description='List ARQs (optionally of one instance). The target '
                    'is the caller\'s project; only ARQs of that project '
                    'are listed unless %s passes.' % ALL_PROJECTS,
        operations=[{'method': 'GET', 'path': COLLECTION},
                    {'method': 'GET',
                     'path': COLLECTION + '?instance={instance_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=GET_ONE, check_str=base.RULE_ADMIN_OR_OWNER,
        description='Show an ARQ; the target is the ARQ\'s project. An ARQ '
                    'the caller may not see answers 404.',
        operations=[{'method': 'GET', 'path': COLLECTION + '/{arq_uuid}'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=ALL_PROJECTS, check_str=base.RULE_ADMIN_OR_SERVICE,
        description='See, bind and delete the ARQs of every project, not '
                    'only those of the caller\'s project.',
        operations=[{'method': 'GET', 'path': COLLECTION},
                    {'method': 'GET', 'path': COLLECTION + '/{arq_uuid}'},
                    {'method': 'PATCH', 'path': COLLECTION},
                    {'method': 'DELETE', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.RULE_ADMIN_OR_OWNER,
        description='Create ARQs from a device profile; they belong to the '
                    'caller\'s project (the target).',
        operations=[{'method': 'POST', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.RULE_ADMIN_OR_SERVICE,
        description='Bind or unbind ARQs (JSON-patch); the target is each '
                    'ARQ\'s project. Nova binds with its service token.',
        operations=[{'method': 'PATCH', 'path': COLLECTION}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.RULE_ADMIN_OR_OWNER,
        description='Delete ARQs that hold no device (Initial, Unbound); '
                    'the target is each ARQ\'s project.',
        operations=[{'method': 'DELETE',
                     'path': COLLECTION + '?instance={instance_uuid}'},
                    {'method': 'DELETE',
                     'path': COLLECTION + '?arqs={arq_uuids}'}],
        scope_types=base.PROJECT_SCOPE),
    policy.DocumentedRuleDefault(
        name=DELETE_BOUND, check_str=base.RULE_ADMIN_OR_SERVICE,
        description='Delete ARQs that are bound or binding (every state '
                    'but Initial and Unbound), releasing their device.',
        operations=[{'method': 'DELETE',
                     'path': COLLECTION + '?instance={instance_uuid}'},
                    {'method': 'DELETE',
                     'path': COLLECTION + '?arqs={arq_uuids}'}],
        scope_types=base.PROJECT_SCOPE),
]


def list_rules():
    return rules
