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

"""keystoneauth1 adapters for the services accel_backend calls."""

import threading
from urllib import parse

from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import requests
from requests import structures
from urllib3 import connection as urllib3_connection
from urllib3 import connectionpool as urllib3_pool

from accel_backend import http_pool


class EnvironmentOnceSession(requests.Session):
    """A ``requests.Session`` that reads the environment's proxy and CA
    bundle settings once per scheme and host rather than on every request.

    requests 2.34 (``Session.merge_environment_settings``) walks the whole
    process environment twice per request for ``*_proxy`` and
    ``no_proxy``.  A service's environment does not change once it runs,
    and the result depends only on the URL's scheme and host (``no_proxy``
    matches hosts), so it is kept per ``(scheme, host)`` and per
    ``stream``/``verify``/``cert``: what requests would answer, read once.
    Requests given ``proxies`` of their own go requests' usual way.
    The walk was a sizeable share of the CPU of one event POST to Nova
    through keystoneauth1 (the contributor guide's "Design
    measurements").

    As keystoneauth1's own sessions (``keystoneauth1.session.
    _construct_session``), every scheme is served by its
    ``TCPKeepAliveAdapter``.
    """

    def __init__(self):
        super().__init__()
        adapter = ks_session.TCPKeepAliveAdapter()
        for scheme in list(self.adapters):
            self.mount(scheme, adapter)
        self._settings = {}
        self._settings_lock = threading.Lock()

    def merge_environment_settings(self, url, proxies, stream, verify,
                                   cert):
        """``requests.Session.merge_environment_settings``, from the
        settings kept for ``url``'s scheme and host.

        :returns: ``{'proxies', 'stream', 'verify', 'cert'}``, a new dict
            (its ``proxies`` too) on every call.
        """
        if proxies:
            return super().merge_environment_settings(url, proxies, stream,
                                                      verify, cert)
        split = parse.urlsplit(url)
        key = (split.scheme, split.hostname, split.port, stream, verify,
               cert)
        settings = self._settings.get(key)
        if settings is None:
            settings = super().merge_environment_settings(
                url, proxies, stream, verify, cert)
            with self._settings_lock:
                self._settings.setdefault(key, settings)
        return dict(settings, proxies=dict(settings['proxies']))


class ServiceSession(EnvironmentOnceSession):
    """The ``requests.Session`` under accel_backend's keystoneauth1
    sessions (Nova, Placement): plain-HTTP requests as keystoneauth1 sends
    them go over kept-alive ``http.client`` connections
    (``accel_backend.http_pool``, which says why, with the measure);
    every other request goes through requests.

    A request is sent directly only when requests would do nothing more
    with it than send it: an ``http://`` URL with no proxy for it in the
    environment, a body of bytes or str (or none), only the keyword
    arguments of ``http_pool.PLAIN_KWARGS`` with redirects not followed
    (keystoneauth1 always passes ``allow_redirects=False`` and follows them
    itself), and a session with no auth, query params, cookies, response
    hooks, streaming or other transport adapters of its own, while
    urllib3's HTTP connection class is urllib3's own (one replaced in the
    process, as wsgi-intercept does to serve a WSGI app in place of a
    server, sees every request).  Cookies a server sets on such a request
    are not kept (OpenStack APIs set none).

    :param pool_maxsize: idle connections kept per host (int).
    """

    def __init__(self, pool_maxsize=10):
        super().__init__()
        self._direct = self.adapters['http://']
        self.pool = http_pool.ConnectionPool(pool_maxsize)

    def _plain(self, url, kwargs):
        if not kwargs.keys() <= http_pool.PLAIN_KWARGS:
            return False
        if kwargs.get('allow_redirects', True):
            return False
        data = kwargs.get('data')
        if data is not None and not isinstance(data, (bytes, str)):
            return False
        if not url[:7].lower() == 'http://':
            return False
        if (self.auth or self.params or self.stream or len(self.cookies) or
                any(self.hooks.values()) or
                self.get_adapter(url) is not self._direct or
                urllib3_pool.HTTPConnectionPool.ConnectionCls is not
                urllib3_connection.HTTPConnection):
            return False
        settings = self.merge_environment_settings(
            url, {}, None, kwargs.get('verify'), kwargs.get('cert'))
        return requests.utils.select_proxy(url, settings['proxies']) is None

    def request(self, method, url, *args, **kwargs):
        """``requests.Session.request``: directly over ``http_pool`` when
        the request is plain (see the class), else requests' own.

        :returns: a ``requests.Response`` (content read).
        :raises requests.exceptions.RequestException: as requests would
            (``ConnectTimeout``, ``ReadTimeout``, ``ConnectionError``).
        """
        if args or not self._plain(url, kwargs):
            return super().request(method, url, *args, **kwargs)
        headers = structures.CaseInsensitiveDict(self.headers)
        headers.update(kwargs.get('headers') or {})
        return http_pool.send(self.pool, method.upper(), url, headers,
                              kwargs.get('data'), kwargs.get('timeout'))

    def close(self):
        """Close the kept connections, then requests' own."""
        self.pool.close()
        super().close()


def adapter_from_conf(conf, group, service_type, auth=None, **kwargs):
    """A keystoneauth1 ``Adapter`` built from the options of ``group``,
    on a ``ServiceSession``.

    :param conf: accel_backend ``ConfigOpts`` with the keystoneauth session,
        auth and adapter options registered in ``group`` (``placement``,
        ``nova``).
    :param service_type: service catalog type (``placement``, ``compute``).
    :param auth: a keystoneauth1 auth plugin overriding the configured one.
    :param kwargs: more ``Adapter`` arguments (``default_microversion``).
    :raises keystoneauth1.exceptions.auth_plugins.MissingAuthPlugin: no
        ``auth_type`` configured and no ``auth`` given.
    """
    auth = auth or ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(
        conf, group, auth=auth, session=ServiceSession())
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth, service_type=service_type,
        **kwargs)
