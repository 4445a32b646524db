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

"""Plain-HTTP requests of accel_backend's keystoneauth1 sessions over
kept-alive ``http.client`` connections (``accel_backend.keystone.
ServiceSession``).

Why our own code next to requests: the last leg of every binding is one
POST of ``accelerator-request-bound`` to Nova, on the path the bind
benchmark times (PATCH -> event).  The same request over one kept-alive
``http.client`` connection takes clearly less time than through
keystoneauth1, requests and urllib3 (the contributor guide's "Design
measurements"; ``tox -e bench`` times both).  The difference is
requests' per-request preparation (``prepare_request``, hooks, cookie
handling, urllib3's pool and response wrapping), not the wire.

keystoneauth1 keeps everything it does (auth headers and re-auth on 401,
endpoint lookup, microversion headers, retries, logging): only the
transport under its ``Session.request`` changes, and only for what this
module can do exactly as requests would.  Everything else (TLS, proxies,
streamed or form bodies, query ``params``, redirects followed by requests,
cookies) goes through requests unchanged; ``ServiceSession.request``
decides.
"""

import datetime
import socket
import threading
import time
from urllib import parse

import http.client
import requests
from requests import structures

from accel_backend import utils

# What keystoneauth1's TCPKeepAliveAdapter sets on every socket
# (keystoneauth1 5.x, ``session.py``): no Nagle, and keep-alive probes
# after 60 s idle, every 15 s, 4 of them.
_SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
                   (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
for _name, _value in (('TCP_KEEPIDLE', 60), ('TCP_KEEPCNT', 4),
                      ('TCP_KEEPINTVL', 15)):
    if hasattr(socket, _name):
        _SOCKET_OPTIONS.append((socket.IPPROTO_TCP, getattr(socket, _name),
                                _value))

# The keyword arguments a request may carry and still be sent here.
PLAIN_KWARGS = frozenset(('headers', 'data', 'allow_redirects', 'verify',
                          'cert', 'timeout'))


def _timeouts(timeout):
    """``(connect, read)`` seconds (each float or None) from requests'
    ``timeout`` (None, a number, or a 2-tuple).

    :raises ValueError: a tuple of another length.
    """
    if isinstance(timeout, tuple):
        if len(timeout) != 2:
            raise ValueError('timeout must be a number or a (connect, read) '
                             'tuple, not %r' % (timeout,))
        return timeout
    return timeout, timeout


def _dropped(conn):
    """True when an idle kept-alive connection cannot carry a request:
    it has no socket, or the server closed it or sent something unasked
    (``utils.readable_while_idle``)."""
    sock = conn.sock
    return sock is None or utils.readable_while_idle(sock)


class ConnectionPool:
    """Idle kept-alive ``http.client.HTTPConnection`` objects per
    ``(host, port)``, each used by one thread at a time.

    :param maxsize: idle connections kept per host (int; requests'
        ``pool_maxsize`` default, 10).  More threads than that still get a
        connection each; the surplus is closed when handed back.
    """

    def __init__(self, maxsize=10):
        self.maxsize = maxsize
        self._idle = {}
        self._lock = threading.Lock()

    def get(self, key, connect_timeout):
        """An idle connection to ``key`` that still looks open, or a new
        unconnected one.

        :param key: ``(host, port)``.
        :param connect_timeout: seconds (float or None) for a new one.
        :returns: ``(connection, reused)``.
        """
        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                return http.client.HTTPConnection(
                    key[0], key[1], timeout=connect_timeout), False
            if not _dropped(conn):
                return conn, True
            conn.close()

    def put(self, key, conn):
        """Keep ``conn`` for the next request to ``key`` (closed when
        ``maxsize`` are already idle)."""
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.maxsize:
                idle.append(conn)
                return
        conn.close()

    def close(self):
        """Close every idle connection."""
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()


def _connect(conn):
    """Connect ``conn`` (its timeout is the connect timeout), mapping
    failures onto requests' exceptions as its adapter does."""
    try:
        conn.connect()
    except socket.timeout as e:
        raise requests.exceptions.ConnectTimeout(e)
    except OSError as e:
        raise requests.exceptions.ConnectionError(e)
    for level, option, value in _SOCKET_OPTIONS:
        conn.sock.setsockopt(level, option, value)


def _header_items(headers):
    """requests' merged headers, without those whose value is None and
    without ``Accept-Encoding`` (http.client asks for ``identity``: the
    body is handed over as it came)."""
    for name, value in headers.items():
        if value is None or name.lower() == 'accept-encoding':
            continue
        yield name, value


def _response(raw, content, method, url, headers, body, started):
    resp = requests.Response()
    resp.status_code = raw.status
    resp.reason = raw.reason
    merged = structures.CaseInsensitiveDict()
    for name, value in raw.getheaders():
        # Repeated headers joined as urllib3's HTTPHeaderDict does.
        merged[name] = (merged[name] + ', ' + value if name in merged
                        else value)
    resp.headers = merged
    resp._content = content
    resp._content_consumed = True
    resp.url = url
    resp.encoding = requests.utils.get_encoding_from_headers(merged)
    resp.elapsed = datetime.timedelta(seconds=time.perf_counter() - started)
    prepared = requests.PreparedRequest()
    prepared.method, prepared.url = method, url
    prepared.headers, prepared.body = headers, body
    resp.request = prepared
    return resp


def send(pool, method, url, headers, body, timeout):
    """Send one plain-HTTP request and read the whole answer.

    :param pool: a ``ConnectionPool``.
    :param method: HTTP method (str).
    :param url: absolute ``http://`` URL (str).
    :param headers: requests' merged headers (mapping of str; None values
        left out).
    :param body: None, bytes or str (sent UTF-8 encoded).
    :param timeout: as requests' (seconds; None, a number, or
        ``(connect, read)``).
    :returns: a ``requests.Response`` with its content read.
    :raises requests.exceptions.ConnectTimeout: connecting took longer than
        the connect timeout.
    :raises requests.exceptions.ReadTimeout: the answer took longer than
        the read timeout.
    :raises requests.exceptions.ConnectionError: the connection failed or
        the answer is not HTTP; the request may or may not have reached
        the server, as with requests (keystoneauth1's ``connect_retries``
        decide).
    """
    started = time.perf_counter()
    split = parse.urlsplit(url)
    key = (split.hostname, split.port or 80)
    path = split.path or '/'
    if split.query:
        path += '?' + split.query
    if isinstance(body, str):
        body = body.encode('utf-8')
    connect_timeout, read_timeout = _timeouts(timeout)
    conn, reused = pool.get(key, connect_timeout)
    try:
        if not reused:
            _connect(conn)
        conn.sock.settimeout(read_timeout)
        sent = dict(_header_items(headers))
        conn.request(method, path, body=body, headers=sent)
        raw = conn.getresponse()
        content = raw.read()
    except requests.exceptions.RequestException:
        conn.close()
        raise
    except socket.timeout as e:
        conn.close()
        raise requests.exceptions.ReadTimeout(e)
    except (OSError, http.client.HTTPException) as e:
        conn.close()
        raise requests.exceptions.ConnectionError(e)
    except BaseException:
        conn.close()
        raise
    if raw.will_close:
        conn.close()
    else:
        pool.put(key, conn)
    return _response(raw, content, method, url, sent, body, started)
