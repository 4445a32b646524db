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

"""Every console script of accel_backend (``accel_backend.cmd``) answers a
missing or broken configuration file, and a database that does not answer,
with one line and a non-zero exit status, not a traceback."""

import os
import socket

import fixtures
import testtools

from accel_backend.cmd import agent
from accel_backend.cmd import api
from accel_backend.cmd import manage
from accel_backend.cmd import server
from accel_backend.cmd import status

#: ``(program, main, arguments after the configuration)``.
COMMANDS = [
    ('accel-backend', server.main, []),
    ('accel-backend-api', api.main, []),
    ('accel-backend-agent', agent.main, []),
    ('accel-backend-manage', manage.main, ['db', 'sync']),
    ('accel-backend-status', status.main, ['upgrade', 'check']),
]


class OneLineErrorsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def run_main(self, prog, main, argv):
        """``main(argv)`` as console script ``prog``; returns ``(exit
        status, stderr)``."""
        self.useFixture(fixtures.MonkeyPatch('sys.argv', [prog]))
        err = self.useFixture(fixtures.StringStream('stderr'))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err.stream))
        code = main(argv)
        err.stream.flush()
        return code, err.getDetails()['stderr'].as_text()

    def test_missing_configuration_file(self):
        missing = os.path.join(self.tmp, 'nowhere.conf')
        for prog, main, rest in COMMANDS:
            code, err = self.run_main(prog, main,
                                      ['--config-file', missing] + rest)
            self.assertEqual(2, code, prog)
            self.assertEqual(
                '%s: configuration error: Failed to find some config '
                'files: %s\n' % (prog, missing), err)

    def test_configuration_file_that_does_not_parse(self):
        broken = os.path.join(self.tmp, 'broken.conf')
        with open(broken, 'w') as f:
            f.write('[DEFAULT\nhost = x\n')
        for prog, main, rest in COMMANDS:
            code, err = self.run_main(prog, main,
                                      ['--config-file', broken] + rest)
            self.assertEqual(2, code, prog)
            self.assertEqual(1, err.count('\n'), err)
            self.assertIn('Invalid section', err)

    def test_database_that_does_not_answer(self):
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]   # closed once the block ends
        path = os.path.join(self.tmp, 'db.conf')
        with open(path, 'w') as f:
            f.write('[database]\nconnection = postgresql+psycopg2://u:p@'
                    '127.0.0.1:%d/accel\nmax_retries = 0\n' % port)
        code, err = self.run_main('accel-backend-manage', manage.main,
                                  ['--config-file', path, 'db', 'sync'])
        self.assertEqual(1, code)
        self.assertTrue(err.startswith(
            'accel-backend-manage: the database does not answer: '), err)
        self.assertNotIn('Traceback', err)

    def test_noauth_refuses_to_serve_other_hosts(self):
        # noauth takes roles from the request's headers: with the default
        # [api] host_ip (every address) anyone could be an administrator.
        path = os.path.join(self.tmp, 'noauth.conf')
        with open(path, 'w') as f:
            f.write('[api]\nauth_strategy = noauth\n')
        code, err = self.run_main('accel-backend', server.main,
                                  ['--config-file', path])
        self.assertEqual(1, code)
        self.assertIn('accel-backend refuses to start: [api] auth_strategy '
                      '= noauth is for local use only, and [api] host_ip = '
                      '0.0.0.0 serves other hosts', err)
