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

"""``accel_backend.keystone.ServiceSession`` and ``accel_backend.http_pool``:
keystoneauth1's plain-HTTP requests sent over kept-alive ``http.client``
connections, against real HTTP servers on loopback."""

import http.server
import json
import logging
import os
import socket
import threading
import time

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
import requests
import testtools
from wsgi_intercept import interceptor

from accel_backend import keystone
from tests.unit.accel_backend import base


class _Handler(http.server.BaseHTTPRequestHandler):
    """Records each request (line, headers, body, client port) and answers
    200 with a JSON body echoing the request's; ``server.close_after``
    drops the connection after answering without saying so,
    ``server.delay`` (seconds) waits before answering."""

    protocol_version = 'HTTP/1.1'

    def _answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length)
        self.server.seen.append({'line': self.requestline,
                                 'headers': dict(self.headers),
                                 'body': body,
                                 'port': self.client_address[1]})
        time.sleep(self.server.delay)
        out = json.dumps({'got': body.decode('utf-8')}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('X-Openstack-Request-Id', 'req-1')
        self.send_header('Vary', 'A')
        self.send_header('Vary', 'B')
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        if self.server.close_after:
            self.close_connection = True

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that timed out has gone: nothing to report.
        pass


def _serve(test):
    server = _Server(('127.0.0.1', 0), _Handler)
    server.seen, server.close_after, server.delay = [], False, 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test.addCleanup(server.server_close)
    test.addCleanup(server.shutdown)
    return server


def _adapter(session, url, **kwargs):
    auth = ks_loading.get_plugin_loader('admin_token').load_from_options(
        endpoint=url, token='tok')
    sess = ks_session.Session(auth=auth, session=session, **kwargs)
    return ks_adapter.Adapter(sess, service_type='compute',
                              endpoint_override=url)


class _NoRequestsTransport(fixtures.Fixture):
    """Counts the requests that go through requests' own transport."""

    def _setUp(self):
        self.calls = []
        real = requests.adapters.HTTPAdapter.send

        def send(adapter, request, **kwargs):
            self.calls.append(request.url)
            return real(adapter, request, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'requests.adapters.HTTPAdapter.send', send))


class ServiceSessionTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        for name in ('http_proxy', 'HTTP_PROXY', 'https_proxy',
                     'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.server = _serve(self)
        self.url = 'http://127.0.0.1:%d/v2.1' % self.server.server_port
        self.session = keystone.ServiceSession()
        self.addCleanup(self.session.close)
        self.requests_transport = self.useFixture(_NoRequestsTransport())

    def test_keystoneauth_request_sent_directly_on_one_connection(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name='keystoneauth', level=logging.DEBUG))
        ad = _adapter(self.session, self.url)
        for n in range(3):
            resp = ad.post('/os-server-external-events',
                           json={'events': [n, 'é']}, microversion='2.82',
                           raise_exc=False)
            self.assertEqual(200, resp.status_code)
            self.assertEqual({'events': [n, 'é']},
                             json.loads(resp.json()['got']))
        self.assertEqual([], self.requests_transport.calls)
        seen = self.server.seen
        self.assertEqual(['POST /v2.1/os-server-external-events HTTP/1.1'] * 3,
                         [s['line'] for s in seen])
        # One TCP connection, kept alive across the three.
        self.assertEqual(1, len({s['port'] for s in seen}))
        headers = seen[0]['headers']
        self.assertEqual('tok', headers['X-Auth-Token'])
        self.assertEqual('compute 2.82', headers['OpenStack-API-Version'])
        self.assertEqual('2.82', headers['X-OpenStack-Nova-API-Version'])
        self.assertEqual('application/json', headers['Content-Type'])
        self.assertIn('keystoneauth1/', headers['User-Agent'])
        self.assertEqual('identity', headers['Accept-Encoding'])
        # What keystoneauth and callers read off the response.
        self.assertEqual('A, B', resp.headers['vary'])
        self.assertEqual('req-1', resp.headers['x-openstack-request-id'])
        self.assertEqual('POST', resp.request.method)
        self.assertEqual(self.url + '/os-server-external-events', resp.url)
        self.assertGreater(resp.elapsed.total_seconds(), 0)
        self.assertIn('RESP BODY', logger.output)

    def test_connection_the_server_closed_is_replaced(self):
        self.server.close_after = True
        ad = _adapter(self.session, self.url)
        for _ in range(3):
            self.assertEqual(200, ad.get('/x').status_code)
            # The server's FIN arrives before the next request is sent.
            time.sleep(0.05)
        self.assertEqual(3, len({s['port'] for s in self.server.seen}))
        self.assertEqual([], self.requests_transport.calls)

    def test_connection_above_select_fd_limit_is_reused(self):
        # select() cannot watch descriptors from 1,024 on: a service
        # holding that many files must still reuse its connections.
        self.useFixture(base.FileLimit(1200))
        held = []
        self.addCleanup(lambda: [os.close(fd) for fd in held])
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        ad = _adapter(self.session, self.url)
        for _ in range(3):
            self.assertEqual(200, ad.get('/x').status_code)
        idle = [c for conns in self.session.pool._idle.values()
                for c in conns]
        self.assertGreater(idle[0].sock.fileno(), 1024)
        self.assertEqual(1, len({s['port'] for s in self.server.seen}))

    def test_read_timeout_and_refused_connection_reach_keystoneauth(self):
        self.server.delay = 0.5
        ad = _adapter(self.session, self.url, timeout=0.1)
        self.assertRaises(ks_exc.ConnectTimeout, ad.get, '/slow')
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        closed = _adapter(self.session, 'http://127.0.0.1:%d' % port)
        self.assertRaises(ks_exc.ConnectFailure, closed.get, '/x')
        # A later request is served on a new connection.
        self.server.delay = 0
        self.assertEqual(200, ad.get('/fast').status_code)
        self.assertEqual([], self.requests_transport.calls)

    def test_other_requests_go_through_requests(self):
        base = 'http://127.0.0.1:%d' % self.server.server_port
        # Query params, redirects followed, a session cookie: requests'.
        self.session.get(base + '/a', params={'q': '1'})
        self.session.get(base + '/b')
        self.session.cookies.set('c', 'v')
        self.session.get(base + '/c', allow_redirects=False)
        self.assertEqual([base + '/a?q=1', base + '/b', base + '/c'],
                         self.requests_transport.calls)
        self.assertEqual('c=v', self.server.seen[2]['headers']['Cookie'])

    def test_proxy_in_the_environment_goes_through_requests(self):
        proxy = _serve(self)
        self.useFixture(fixtures.EnvironmentVariable(
            'http_proxy', 'http://127.0.0.1:%d' % proxy.server_port))
        self.useFixture(fixtures.EnvironmentVariable('no_proxy', 'localhost'))
        session = keystone.ServiceSession()
        self.addCleanup(session.close)
        port = self.server.server_port
        _adapter(session, 'http://127.0.0.1:%d/p' % port).get('/x')
        _adapter(session, 'http://localhost:%d/d' % port).get('/y')
        self.assertEqual(['GET http://127.0.0.1:%d/p/x HTTP/1.1' % port],
                         [s['line'] for s in proxy.seen])
        self.assertEqual(['GET /d/y HTTP/1.1'],
                         [s['line'] for s in self.server.seen])
        # The proxied one through requests, the direct one not.
        self.assertEqual(1, len(self.requests_transport.calls))

    def test_a_replaced_urllib3_transport_sees_the_request(self):
        calls = []

        def app(environ, start_response):
            calls.append(environ['PATH_INFO'])
            start_response('200 OK', [('Content-Type', 'application/json')])
            return [b'{}']
        url = 'http://intercepted.test:8080'
        with interceptor.RequestsInterceptor(lambda: app, url=url):
            resp = _adapter(self.session, url).get('/here')
        self.assertEqual(200, resp.status_code)
        self.assertEqual(['/here'], calls)

    def test_services_adapters_use_it(self):
        from accel_backend.nova import notifier
        conf = base.make_conf(self, nova=base.NO_NOVA)
        adapter = notifier.adapter_from_conf(conf)
        self.assertIsInstance(adapter.session.session,
                              keystone.ServiceSession)
