"""Who is calling: built from keystonemiddleware's headers (or, with
``auth_strategy = noauth``, from the same headers sent by the client)."""

import dataclasses

from accel_backend import policy


@dataclasses.dataclass
class RequestContext:
    """Identity of one API request.

    :ivar roles: role names of the user token (list of str).
    :ivar service_roles: roles of the ``X-Service-Token`` (list of str),
        empty when the caller sent none.
    """

    user_id: str = None
    project_id: str = None
    roles: list = dataclasses.field(default_factory=list)
    service_roles: list = dataclasses.field(default_factory=list)
    request_id: str = None
    #: ``oslo_policy.policy.Enforcer`` of the app serving the request.
    enforcer: object = dataclasses.field(default=None, repr=False,
                                         compare=False)

    @property
    def is_admin(self):
        return 'admin' in self.roles

    def can(self, rule, target=None, fatal=True):
        """``accel_backend.policy.authorize`` for this context.

        :param target: dict from ``policy.target()``; default the caller's
            own project.
        :raises Forbidden: denied and ``fatal``.
        """
        return policy.authorize(self, rule, target, fatal=fatal)

    def to_policy_values(self):
        """Credentials dict for oslo.policy."""
        return {'user_id': self.user_id, 'project_id': self.project_id,
                'roles': self.roles, 'service_roles': self.service_roles}


def _split(value):
    return [r.strip() for r in (value or '').split(',') if r.strip()]


def from_environ(environ, noauth, enforcer=None):
    """Build the context of a WSGI request.

    :param environ: the WSGI environ, after keystonemiddleware when auth is
        on (it sets ``HTTP_X_*`` from the validated token).
    :param noauth: True for local use without Keystone: a token equal to
        ``admin`` (as with Placement's noauth2) and no ``X-Roles`` gives an
        admin context that also carries the ``service`` service role, so
        a Nova configured with that token (no ``X-Service-Token``) can
        bind ARQs.
    :param enforcer: the app's policy ``Enforcer`` (for ``can()``).
    """
    roles = _split(environ.get('HTTP_X_ROLES'))
    service_roles = _split(environ.get('HTTP_X_SERVICE_ROLES'))
    if noauth and environ.get('HTTP_X_AUTH_TOKEN') == 'admin' and not roles:
        roles = ['admin', 'member', 'reader']
        service_roles = sorted(set(service_roles) | {'service'})
    return RequestContext(
        user_id=environ.get('HTTP_X_USER_ID') or None,
        project_id=environ.get('HTTP_X_PROJECT_ID') or None,
        roles=roles,
        service_roles=service_roles,
        request_id=environ.get('openstack.request_id'),
        enforcer=enforcer)
