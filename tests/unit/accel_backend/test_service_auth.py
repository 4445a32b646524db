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

"""``accel_backend.service_auth``: the Nova and Placement adapters are
keystoneauth1's own sessions built from the ``[nova]`` and
``[placement]`` options, against a real HTTP server on loopback."""

import http.server
import json
import threading
import time

import fixtures
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
import requests
import testtools

from accel_backend.agent.placement import client as placement_client
from accel_backend.conductor import nova_notifier
from tests.unit.accel_backend import base


class _Handler(http.server.BaseHTTPRequestHandler):
    """Records each request (line, headers, client port) and answers 200
    with ``{}`` after ``server.delay`` seconds."""

    protocol_version = 'HTTP/1.1'

    def _answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length)
        self.server.seen.append({'line': self.requestline,
                                 'headers': dict(self.headers),
                                 'body': body,
                                 'port': self.client_address[1]})
        time.sleep(self.server.delay)
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', '2')
        self.end_headers()
        self.wfile.write(b'{}')

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that timed out has gone: nothing to report.
        pass


class ServiceAuthTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        for name in ('http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.server = _Server(('127.0.0.1', 0), _Handler)
        self.server.seen, self.server.delay = [], 0
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.url = 'http://127.0.0.1:%d' % self.server.server_port

    def _conf(self, group, **extra):
        opts = base.placement_opts(self.url + '/' + group)
        opts.update(extra)
        return base.make_conf(self, **{group: opts})

    def test_nova_adapter_is_keystoneauth_over_requests(self):
        adapter = nova_notifier.adapter_from_conf(self._conf('nova'))
        self.addCleanup(adapter.session.session.close)
        self.assertIsInstance(adapter.session, ks_session.Session)
        # keystoneauth1's own requests session, not one of ours.
        self.assertIs(requests.Session, type(adapter.session.session))
        for n in range(3):
            resp = adapter.post('/os-server-external-events',
                                json={'events': [n]},
                                microversion=nova_notifier.MICROVERSION)
            self.assertEqual(200, resp.status_code)
        seen = self.server.seen
        self.assertEqual(['POST /nova/os-server-external-events '
                          'HTTP/1.1'] * 3, [s['line'] for s in seen])
        self.assertEqual([{'events': [n]} for n in range(3)],
                         [json.loads(s['body']) for s in seen])
        self.assertEqual({'admin'},
                         {s['headers']['X-Auth-Token'] for s in seen})
        self.assertEqual({'compute 2.82'}, {
            s['headers']['OpenStack-API-Version'] for s in seen})
        # Kept alive: one pooled connection carried all three.
        self.assertEqual(1, len({s['port'] for s in seen}))

    def test_placement_adapter_sends_its_default_microversion(self):
        adapter = placement_client.adapter_from_conf(
            self._conf('placement'))
        self.addCleanup(adapter.session.session.close)
        self.assertEqual(200, adapter.get('/resource_providers').status_code)
        self.assertEqual('placement %s' % placement_client.MICROVERSION,
                         self.server.seen[0]['headers'][
                             'OpenStack-API-Version'])

    def test_session_options_are_read_from_the_group(self):
        self.server.delay = 1.0
        adapter = nova_notifier.adapter_from_conf(
            self._conf('nova', timeout=0.2))
        self.addCleanup(adapter.session.session.close)
        started = time.monotonic()
        self.assertRaises(ks_exc.ConnectTimeout, adapter.get, '/servers')
        self.assertLess(time.monotonic() - started, 0.9)
