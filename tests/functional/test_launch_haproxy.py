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

"""``tools.launch.haproxy.config`` renders the shipped sample: its own
lines as they are, this deployment's address, certificate and API nodes
in place of the sample's, and refuses a sample it cannot map.  (No
process is started; the module is here because the unit tier imports
nothing of ``tools.launch``.)"""

import testtools

from tools.launch import haproxy


def _sample():
    with open(haproxy.SAMPLE) as f:
        return f.read()


class TestConfig(testtools.TestCase):

    def render(self, text, servers=None):
        return haproxy.config(text, 8443, '/tmp/x/server.pem',
                              servers or {'api1': 7001, 'api2': 7002},
                              '/tmp/x/admin.sock', '/tmp/x/haproxy.pid')

    def test_sample_lines_kept_addresses_replaced(self):
        out = self.render(_sample()).splitlines()
        self.assertIn('    bind 127.0.0.1:8443 ssl crt /tmp/x/server.pem',
                      out)
        self.assertIn('    server api1 127.0.0.1:7001', out)
        self.assertIn('    server api2 127.0.0.1:7002', out)
        self.assertIn('    stats socket /tmp/x/admin.sock mode 600 level '
                      'admin', out)
        # What the install guide says the layout does is in the file run.
        for line in ('    option httpchk GET /healthcheck',
                     '    http-request set-header X-Forwarded-Proto https',
                     '    retry-on conn-failure'):
            self.assertIn(line, out)
        self.assertNotIn('192.0.2.', '\n'.join(out))

    def test_servers_must_match(self):
        self.assertRaises(ValueError, self.render, _sample(),
                          {'api1': 7001})
        self.assertRaises(ValueError, self.render, _sample(),
                          {'api1': 7001, 'api2': 7002, 'api3': 7003})

    def test_tls_bind_required(self):
        plain = _sample().replace(' ssl crt /etc/haproxy/certs/'
                                  'accel-backend.pem', '')
        self.assertRaises(ValueError, self.render, plain)
