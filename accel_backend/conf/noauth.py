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

"""``[api] auth_strategy = noauth``: the one rule both API servers apply
before they serve (the cheroot server of ``accel-backend`` and
``accel-backend-api``, ``accel_backend.cmd.server``, and the WSGI
application, ``accel_backend.wsgi.api``)."""

import ipaddress


def _loopback(host):
    """True when ``host`` (an address or a host name) is a loopback
    address (``localhost`` is the only name taken as one)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == 'localhost'


def refusal(conf, listen_host=None):
    """Why the API must not start with this ``[api] auth_strategy``; the
    one rule both API servers apply: the cheroot server of
    ``accel-backend`` and ``accel-backend-api``
    (``accel_backend.cmd.server``) and the WSGI application
    (``accel_backend.wsgi.api``).

    noauth takes identity and roles from the request's headers
    (``accel_backend.api.context``), so it is accepted only when the API
    listens on a loopback address, or when ``[api] allow_remote_noauth``
    says that the operator keeps other clients out.

    :param conf: accel_backend ``ConfigOpts``.
    :param listen_host: the address the API listens on (str: ``[api]
        host_ip`` for the cheroot server), or None when accel_backend does
        not know it (a WSGI server's ``--bind``): then only ``[api]
        allow_remote_noauth`` lets noauth in.
    :returns: None when the API may start, else the reason (str, one
        line, naming the options to change).
    """
    if conf.api.auth_strategy != 'noauth' or conf.api.allow_remote_noauth:
        return None
    if listen_host is None:
        return ('[api] auth_strategy = noauth is for local use only, and '
                'under a WSGI server accel_backend cannot tell which '
                'addresses the server listens on; set auth_strategy = '
                'keystone, or [api] allow_remote_noauth = true where only '
                'trusted clients reach the WSGI server')
    if _loopback(listen_host):
        return None
    return ('[api] auth_strategy = noauth is for local use only, and [api] '
            'host_ip = %s serves other hosts; set host_ip = 127.0.0.1 or '
            'auth_strategy = keystone (or [api] allow_remote_noauth = true '
            'where only trusted clients reach the port)' % listen_host)
