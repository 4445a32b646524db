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

"""The WSGI application: auth, microversions, routing, error documents.

Middleware order (outermost first): request id, body size limit, then
keystonemiddleware ``auth_token`` unless ``[api] auth_strategy = noauth``
(the version documents at ``/`` and ``/v2`` are served without a token),
then ``AccelApp`` which builds the request context (with the policy
enforcer handlers check, ``accel_backend.api.policy``), negotiates the
microversion, dispatches through ``route_table.ROUTES`` and turns every
``AccelBackendError`` into a JSON error with a stable code (never a 500
for bad input; unexpected exceptions are logged and answered 500 with
code ``accel.internal_error``).
"""

from oslo_log import log as logging
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id as request_id_mw
from oslo_middleware import sizelimit
import routes as routes_lib
import webob
import webob.dec

from accel_backend.api import context as context_mod
from accel_backend.api import health
from accel_backend.api import microversion
from accel_backend.api import policy
from accel_backend.api import route_table
from accel_backend.api import util
from accel_backend.conf import library_defaults
from accel_backend import exception

LOG = logging.getLogger(__name__)


def _error_response(req, err, version=None):
    body = {
        'errors': [{
            'status': err.status,
            'code': err.code,
            'title': webob.exc.status_map.get(err.status,
                                              webob.exc.HTTPError).title,
            'detail': err.detail,
            'request_id': req.environ.get('openstack.request_id'),
        }],
        # Cyborg (WSME) clients read this key.
        'error_message': err.detail,
    }
    resp = util.response(err.status, body)
    if version is not None:
        resp.headers.update(microversion.response_headers(version))
    else:
        # No version was negotiated (406): still tell the client the
        # range it may ask for, as Cyborg does.
        resp.headers.update(microversion.range_headers())
    return resp


def _bad_url(req):
    """Why the request's path or query cannot be read, or None: not
    UTF-8 (webob raises UnicodeDecodeError on first use), or NUL
    characters (PostgreSQL refuses them in strings)."""
    try:
        parts = [req.path_info] + [
            text for item in req.GET.items() for text in item]
    except UnicodeDecodeError:
        return 'the URL is not valid UTF-8'
    if any('\x00' in text for text in parts):
        return 'the URL holds a NUL character'
    return None


class AccelApp:
    """Dispatches requests to the handlers of ``route_table.ROUTES``.

    :param service: the ``Service`` whose database and binder handlers use.
    :param noauth: True when no Keystone validates tokens.
    :param enforcer: ``accel_backend.api.policy.Enforcer`` (default: one
        built on ``service.conf``); handlers check it through the
        context, the policy files looked at once per request.
    """

    def __init__(self, service, noauth, enforcer=None):
        self.service = service
        self.noauth = noauth
        self.enforcer = enforcer or policy.new_enforcer(service.conf)
        self.mapper = routes_lib.Mapper()
        for path in route_table.ROUTES:
            self.mapper.connect(path, route=path)

    @webob.dec.wsgify
    def __call__(self, req):
        """Serve one request (WSGI, through ``webob.dec.wsgify``): route,
        negotiate the microversion, authenticate (``noauth``), run the
        handler.

        Never raises: every ``AccelBackendError`` becomes its status with
        an OpenStack error document, anything else a logged 500.
        """
        version = None
        bad_url = _bad_url(req)
        if bad_url:
            # Before anything reads req.path or req.GET (logging
            # included): they would raise UnicodeDecodeError.
            return _error_response(req, exception.BadRequest(
                reason=bad_url))
        try:
            version = microversion.from_headers(req.headers)
            match = self.mapper.match(environ=req.environ)
            if match is None:
                raise exception.NotFound(kind='Resource', ident=req.path)
            methods = route_table.ROUTES[match.pop('route')]
            handler = methods.get(req.method)
            if handler is None:
                err = exception.MethodNotAllowed(method=req.method,
                                                 path=req.path)
                resp = _error_response(req, err, version)
                resp.headers['Allow'] = ', '.join(sorted(methods))
                return resp
            if self.noauth and not _PublicVersions.public(req.environ) \
                    and not (req.headers.get('X-Auth-Token') or
                             req.headers.get('X-Roles')):
                # As Placement's noauth2: no user token, no identity (a
                # service token alone is not a caller); the version
                # documents are public in both modes.
                raise exception.Unauthorized(
                    reason='send X-Auth-Token (auth_strategy = noauth)')
            req.environ['accel.context'] = context_mod.from_environ(
                req.environ, self.noauth, enforcer=self.enforcer)
            req.environ['accel.version'] = version
            req.environ['accel.service'] = self.service
            with self.enforcer.request_scope():
                resp = handler(req, **match)
        except exception.AccelBackendError as err:
            if err.status >= 500:
                LOG.error('%s %s failed: %s', req.method, req.path, err)
            return _error_response(req, err, version)
        except Exception:
            LOG.exception('Unexpected error in %s %s', req.method, req.path)
            return _error_response(req, exception.AccelBackendError(),
                                   version)
        resp.headers.update(microversion.response_headers(version))
        return resp


class _PublicVersions:
    """Serves the version documents (``/``, ``/v2``) without a token,
    as Cyborg and Placement do, so clients can discover the endpoint
    before they authenticate; every other path goes through
    ``auth_token``."""

    PATHS = ('', '/', '/v2', '/v2/')

    def __init__(self, authenticated, app):
        self.authenticated = authenticated
        self.app = app

    @classmethod
    def public(cls, environ):
        """True for a request of a version document (no token needed,
        with ``auth_strategy`` ``keystone`` or ``noauth``)."""
        return (environ.get('REQUEST_METHOD') == 'GET' and
                environ.get('PATH_INFO', '') in cls.PATHS)

    def __call__(self, environ, start_response):
        if self.public(environ):
            return self.app(environ, start_response)
        return self.authenticated(environ, start_response)


class _JSONRequestTooLarge:
    """Answer oslo.middleware's 413 (plain text) with our error document.

    ``RequestBodySizeLimiter`` refuses bodies over ``[oslo_middleware]
    max_request_body_size`` (by Content-Length, or while reading a longer
    body); clients get the same JSON shape and a stable code as for any
    other error: ``accel.request_too_large``.

    :param app: the size-limited WSGI app.
    :param limit: the limit in bytes (int), for the message.
    """

    def __init__(self, app, limit):
        self.app = app
        self.limit = limit

    @webob.dec.wsgify
    def __call__(self, req):
        resp = req.get_response(self.app)
        if resp.status_int == 413 and resp.content_type != util.JSON:
            return _error_response(
                req, exception.RequestTooLarge(limit=self.limit))
        return resp


def make_app(conf, service):
    """Build the WSGI application.

    :param conf: accel_backend ``ConfigOpts``.
    :param service: the ``accel_backend.service.Service``.
    :returns: a WSGI callable.
    """
    noauth = conf.api.auth_strategy == 'noauth'
    app = AccelApp(service, noauth, enforcer=policy.new_enforcer(conf))
    if not noauth:
        from keystonemiddleware import auth_token
        app = _PublicVersions(
            auth_token.AuthProtocol(app, {'oslo_config_config': conf}), app)
    app = sizelimit.RequestBodySizeLimiter(app, conf)
    app = _JSONRequestTooLarge(app,
                               conf.oslo_middleware.max_request_body_size)
    app = _HealthcheckPath(health.make_app(conf, service), app)
    # Behind a TLS-terminating proxy: links say https (X-Forwarded-Proto,
    # Forwarded) when [oslo_middleware] enable_proxy_headers_parsing.
    app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    app = request_id_mw.RequestId(app)
    # Browsers (a dashboard on another origin): [cors] allowed_origin,
    # none by default; the headers and methods of the API.
    cors.set_defaults(**library_defaults.CORS_DEFAULTS)
    app = cors.CORS(app, conf)
    return _AfterResponse(app)


class _AfterResponse:
    """Runs the work a handler left for after its answer
    (``api.util.after_response``) once the server has sent the response,
    from the iterable's ``close()``, which WSGI servers call after the
    last byte (PEP 3333), so that the answer is not slowed by it."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        environ[util.AFTER_RESPONSE] = later = []
        try:
            body = self.app(environ, start_response)
        except BaseException:
            util.run_after_response(later)
            raise
        return _ClosingIterable(body, later)


class _ClosingIterable:

    def __init__(self, body, later):
        self.body = body
        self.later = later

    def __iter__(self):
        return iter(self.body)

    def close(self):
        try:
            close = getattr(self.body, 'close', None)
            if close is not None:
                close()
        finally:
            util.run_after_response(self.later)


class _HealthcheckPath:
    """Sends ``/healthcheck`` to oslo.middleware's health check
    (``accel_backend.api.health``), served without a token as load
    balancers call it; everything else to ``app``."""

    PATH = '/healthcheck'

    def __init__(self, healthcheck, app):
        self.healthcheck = healthcheck
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '').rstrip('/') == self.PATH:
            return self.healthcheck(environ, start_response)
        return self.app(environ, start_response)
