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

"""Who is calling: ``oslo_context.context.RequestContext`` built from the
headers keystonemiddleware sets (or, with ``auth_strategy = noauth``, from
the token alone, Placement ``noauth2`` style).

The context carries the token's scope (project, domain or system: the
``OpenStack-System-Scope`` header keystonemiddleware sets for a
system-scoped token), so ``[oslo_policy] enforce_scope`` can refuse a
system-scoped token on the project-scoped rules, and its
``to_policy_values()`` are the credentials every rule is checked against
(``roles``, ``project_id``, ``service_roles``, ``system_scope``...).
"""

from oslo_context import context as oslo_context

from accel_backend.api import policy

#: Roles a noauth token gets (``auth_strategy = noauth``, local use only).
NOAUTH_ADMIN_ROLES = ('admin', 'manager', 'member', 'reader')
NOAUTH_USER_ROLES = ('member', 'reader')
NOAUTH_ADMIN_TOKEN = 'admin'


class RequestContext(oslo_context.RequestContext):
    """Identity of one API request (oslo.context) plus the policy
    enforcer of the app serving it.

    :param enforcer: ``oslo_policy.policy.Enforcer`` of the app, used by
        ``can()``; other keyword arguments are oslo.context's.
    """

    def __init__(self, enforcer=None, **kwargs):
        super().__init__(**kwargs)
        self.enforcer = enforcer

    def can(self, rule, target=None, fatal=True):
        """``accel_backend.api.policy.authorize`` for this context.

        :param rule: a registered rule name (``accelerator:<res>:<op>``).
        :param target: dict from ``policy.target()``; default the caller's
            own project.
        :raises Forbidden: denied (or a scope the rule does not accept)
            and ``fatal``.
        :returns: bool.
        """
        return policy.authorize(self, rule, target, fatal=fatal)


def _noauth_identity(environ):
    """Environ keys a noauth request's identity is read from.

    Follows Placement's ``noauth2`` convention (openstack/placement,
    ``placement/auth.py``, 2024.1 and later), extended with what Cyborg's
    clients send:

    * ``X-Roles`` sent by the client: taken as is (tests, curl);
    * else token ``admin``: roles admin, manager, member, reader;
    * else any other token: member and reader;
    * user and project: ``X-User-Id``/``X-Project-Id`` when sent, else
      from a token of the form ``user[:project]`` (project defaults to
      the user, as in Placement);
    * ``X-Service-Roles`` when sent, else the ``service`` service role
      when the request carries an ``X-Service-Token`` (what Nova adds with
      ``[service_user] send_service_user_token``). A user token alone,
      ``admin`` included, has no service role.

    Nothing is validated: ``noauth`` is for a single-host, local cloud.
    """
    token = environ.get('HTTP_X_AUTH_TOKEN') or ''
    user, _sep, project = token.partition(':')
    updates = {}
    if not environ.get('HTTP_X_ROLES'):
        roles = (NOAUTH_ADMIN_ROLES if user == NOAUTH_ADMIN_TOKEN
                 else NOAUTH_USER_ROLES if token else ())
        updates['HTTP_X_ROLES'] = ','.join(roles)
    if token and not environ.get('HTTP_X_USER_ID'):
        updates['HTTP_X_USER_ID'] = user
    if token and not environ.get('HTTP_X_PROJECT_ID'):
        updates['HTTP_X_PROJECT_ID'] = project or user
    if (environ.get('HTTP_X_SERVICE_TOKEN') and
            not environ.get('HTTP_X_SERVICE_ROLES')):
        updates['HTTP_X_SERVICE_ROLES'] = 'service'
    return dict(environ, **updates)


def from_environ(environ, noauth, enforcer=None):
    """Build the context of a WSGI request.

    :param environ: the WSGI environ, after keystonemiddleware when auth is
        on (it sets ``HTTP_X_*`` and ``HTTP_OPENSTACK_SYSTEM_SCOPE`` from
        the validated tokens and drops what the client sent).
    :param noauth: True for ``auth_strategy = noauth`` (see
        ``_noauth_identity``).
    :param enforcer: the app's policy ``Enforcer`` (for ``can()``).
    :returns: ``RequestContext``.
    """
    if noauth:
        environ = _noauth_identity(environ)
    ctx = RequestContext.from_environ(environ, enforcer=enforcer)
    # oslo.context takes empty headers as empty strings.
    ctx.user_id = ctx.user_id or None
    ctx.project_id = ctx.project_id or None
    ctx.is_admin = 'admin' in ctx.roles
    return ctx
