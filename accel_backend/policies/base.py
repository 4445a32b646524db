"""Check strings and base rules shared by the resource policies.

Credentials (``RequestContext.to_policy_values``) carry ``user_id``,
``project_id``, ``roles`` (of the user's ``X-Auth-Token``) and
``service_roles`` (of the ``X-Service-Token`` a service such as Nova adds
with ``[service_user] send_service_user_token``; empty without one).

Targets always carry ``project_id`` (the owning project of the object, or
the caller's for a collection) and ``user_id``; a missing owner is the
empty string, which never matches a caller's project.
"""

from oslo_policy import policy

RULE_ADMIN_API = 'rule:admin_api'
RULE_ADMIN_OR_OWNER = 'rule:admin_or_owner'
RULE_SERVICE_API = 'rule:service_api'
RULE_ADMIN_OR_SERVICE = 'rule:admin_or_service'

# Any caller keystonemiddleware let through (it rejects requests without a
# valid token before they reach the policy checks).
ANY_AUTHENTICATED = '@'

ADMIN = 'role:admin'
OWNER = 'project_id:%(project_id)s'
SERVICE = 'service_roles:service'

PROJECT_SCOPE = ['project']

rules = [
    policy.RuleDefault(
        name='admin_api', check_str=ADMIN,
        description='Cloud administrator (a user token with the admin '
                    'role).'),
    policy.RuleDefault(
        name='admin_or_owner', check_str='%s or %s' % (RULE_ADMIN_API, OWNER),
        description='Administrator, or a user of the project that owns the '
                    'object.'),
    policy.RuleDefault(
        name='service_api', check_str=SERVICE,
        description='A request carrying an X-Service-Token with the service '
                    'role: an OpenStack service (Nova) acting for a user.'),
    policy.RuleDefault(
        name='admin_or_service',
        check_str='%s or %s' % (RULE_ADMIN_API, RULE_SERVICE_API),
        description='Administrator or an OpenStack service.'),
]


def list_rules():
    return rules
