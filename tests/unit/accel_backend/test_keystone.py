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

"""``accel_backend.keystone.EnvironmentOnceSession``: the proxy settings
of the environment, read once per host, still decide where a request
goes (a real HTTP proxy on loopback, a real server behind it)."""

import http.server
import threading

import fixtures
import requests
import testtools

from accel_backend import keystone


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 200 to any GET and records its request line."""

    def do_GET(self):
        self.server.lines.append(self.requestline)
        body = b'{}'
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(test):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Recorder)
    server.lines = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test.addCleanup(server.server_close)
    test.addCleanup(server.shutdown)
    return server


class EnvironmentOnceSessionTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.proxy = _serve(self)
        self.target = _serve(self)
        proxy_url = 'http://127.0.0.1:%d' % self.proxy.server_port
        for name in ('http_proxy', 'HTTP_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name, proxy_url))
        for name in ('https_proxy', 'HTTPS_PROXY', 'all_proxy',
                     'ALL_PROXY', 'NO_PROXY'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        # Loopback by name is direct; anything else goes to the proxy.
        self.useFixture(fixtures.EnvironmentVariable('no_proxy',
                                                     'localhost'))
        self.reads = []
        real = requests.sessions.get_environ_proxies

        def counted(url, no_proxy=None):
            self.reads.append(url)
            return real(url, no_proxy=no_proxy)
        self.useFixture(fixtures.MonkeyPatch(
            'requests.sessions.get_environ_proxies', counted))

    def test_proxy_and_no_proxy_apply_and_are_read_once_per_host(self):
        s = keystone.EnvironmentOnceSession()
        port = self.target.server_port
        via_proxy = 'http://127.0.0.1:%d/v2.1/x' % port
        direct = 'http://localhost:%d/v2.1/y' % port
        for _ in range(3):
            self.assertEqual(200, s.get(via_proxy).status_code)
            self.assertEqual(200, s.get(direct).status_code)
        # The proxy got the absolute URI of the first, never the second.
        self.assertEqual(['GET %s HTTP/1.1' % via_proxy] * 3,
                         self.proxy.lines)
        self.assertEqual(['GET /v2.1/y HTTP/1.1'] * 3, self.target.lines)
        # Read once per host, not per request.
        self.assertEqual(2, len(self.reads))

    def test_settings_handed_out_are_copies(self):
        s = keystone.EnvironmentOnceSession()
        url = 'http://127.0.0.1:%d/' % self.target.server_port
        first = s.merge_environment_settings(url, {}, None, True, None)
        first['proxies'].clear()
        first['verify'] = False
        again = s.merge_environment_settings(url, {}, None, True, None)
        self.assertEqual('http://127.0.0.1:%d' % self.proxy.server_port,
                         again['proxies']['http'])
        self.assertTrue(again['verify'])
