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

"""Personas and base rules shared by the resource policies.

The defaults have the shape of Cyborg 17's "secure RBAC" defaults
(openstack-cyborg 17.0.0, ``cyborg/policies/base.py``): an administrator,
the project personas manager, member and reader (Keystone's implied roles
make admin a manager, a manager a member and a member a reader), and the
``service`` role of OpenStack services. Every resource rule is
project-scoped (``scope_types = ['project']``): a system- or
domain-scoped token is refused.

Credentials (``RequestContext.to_policy_values``, oslo.context) carry
``user_id``, ``project_id``, ``roles`` of the user's ``X-Auth-Token``,
``system_scope`` and ``service_roles``: the roles of the
``X-Service-Token`` a service such as Nova adds with ``[service_user]
send_service_user_token`` (empty without one).

Two "service" checks, kept apart on purpose:

* ``service_api`` (``role:service``): a user token with the service role,
  as the service users of Nova or of tempest's ``service`` persona have;
* ``service_token_api`` (``service_roles:service``): the request carries a
  service token with the service role. Moving a device between tenants
  (bind, unbind, deleting a bound ARQ) needs it whatever the user token's
  roles are, as Cyborg 17 requires since its fix of CVE-2026-40214.

Targets always carry ``project_id`` (the owning project of the object, or
the caller's for a collection) and ``user_id``; a missing owner is the
empty string, which never matches a caller's project.

oslo.policy 6 enforces the new defaults and the scope. ``[oslo_policy]
enforce_new_defaults = False`` adds each rule's ``deprecated_rule`` (the
legacy defaults of accel_backend before 2026.1: admin-or-owner for ARQs,
any user for profile reads, administrators for device reads) to its new
default with ``or``; the rules that need a service token have none.
"""

from oslo_log import versionutils
from oslo_policy import policy

ADMIN = 'rule:admin_api'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
PROJECT_MEMBER_OR_SERVICE = 'rule:project_member_or_service'
PROJECT_MANAGER_OR_ADMIN = 'rule:project_manager_or_admin'
SERVICE = 'rule:service_api'
SERVICE_TOKEN = 'rule:service_token_api'

# Any caller keystonemiddleware let through (it rejects requests without a
# valid token before they reach the policy checks).
ANY_AUTHENTICATED = '@'

PROJECT_SCOPE = ['project']

DEPRECATED_REASON = (
    'accel_backend adopts the project personas (manager, member, reader) '
    'and the service role of Cyborg 17\'s new defaults; the legacy '
    'defaults are used only while [oslo_policy] enforce_new_defaults = '
    'False.')
DEPRECATED_SINCE = versionutils.deprecated.GAZPACHO

# The legacy default of accel_backend's project-owned operations.
LEGACY_ADMIN_OR_OWNER = 'rule:admin_api or project_id:%(project_id)s'


def deprecated(name, check_str):
    """``DeprecatedRule`` for the legacy default of rule ``name``.

    :param name: the rule's name (unchanged: policy files that override it
        keep working).
    :param check_str: the legacy check string.
    """
    return policy.DeprecatedRule(
        name=name, check_str=check_str,
        deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE)


rules = [
    policy.RuleDefault(
        name='admin_api', check_str='role:admin',
        description='Cloud administrator (a user token with the admin '
                    'role).'),
    policy.RuleDefault(
        name='project_manager_api',
        check_str='role:manager and project_id:%(project_id)s',
        description='Manager of the project of the target.'),
    policy.RuleDefault(
        name='project_member_api',
        check_str='role:member and project_id:%(project_id)s',
        description='Member of the project of the target.'),
    policy.RuleDefault(
        name='project_reader_api',
        check_str='role:reader and project_id:%(project_id)s',
        description='Reader of the project of the target.'),
    policy.RuleDefault(
        name='service_api', check_str='role:service',
        description='A user token with the service role (the service '
                    'user of an OpenStack service).'),
    policy.RuleDefault(
        name='service_token_api', check_str='service_roles:service',
        description='A request carrying an X-Service-Token with the '
                    'service role: an OpenStack service (Nova) acting for '
                    'a user. Required to move a device between tenants.'),
    policy.RuleDefault(
        name='project_reader_or_admin',
        check_str='rule:project_reader_api or rule:admin_api',
        description='Reader of the target\'s project, or administrator.'),
    policy.RuleDefault(
        name='project_manager_or_admin',
        check_str='rule:project_manager_api or rule:admin_api',
        description='Manager of the target\'s project, or administrator.'),
    policy.RuleDefault(
        name='project_member_or_service',
        check_str='rule:project_member_api or rule:service_api',
        description='Member of the target\'s project, or a service user.'),
    policy.RuleDefault(
        name='admin_or_owner', check_str=LEGACY_ADMIN_OR_OWNER,
        description='Legacy: administrator, or any user of the project '
                    'that owns the object.',
        deprecated_for_removal=True,
        deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE),
]


def list_rules():
    """The base rules (list of ``oslo_policy.policy.RuleDefault``: the
    check strings the resource rules refer to) for
    ``accel_backend.api.policies.list_rules``."""
    return rules
