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

"""The ``nova-accel`` console script (``nova_accel.cmd.hotplug:main``) in a
fresh interpreter, with and without Nova.

``pip install nova-accel`` installs it on every host, Nova or not: where
Nova cannot be imported it exits 2 with one line that says so, never a
traceback (tests/install/test_bare_install.py runs the installed script
in a venv without Nova); with Nova it parses Nova's command line.  The
commands themselves run against real Nova in tests/functional/
test_hotplug.py.
"""

import os
import subprocess
import sys

import testtools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

# What the console script's wrapper does, with ``import nova`` failing
# first when argv[1] is "without-nova".
MAIN = '''
import sys
if sys.argv.pop(1) == 'without-nova':
    sys.modules['nova'] = None
from nova_accel.cmd import hotplug
sys.exit(hotplug.main(['nova-accel'] + sys.argv[1:]))
'''


class NovaAccelCommandTest(testtools.TestCase):

    def nova_accel(self, nova, *args):
        env = dict(os.environ, PYTHONPATH=REPO,
                   OS_NOVA_DISABLE_EVENTLET_PATCHING='1')
        return subprocess.run(
            [sys.executable, '-W', 'ignore', '-c', MAIN, nova] + list(args),
            cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
            stdin=subprocess.DEVNULL)

    def test_without_nova_one_line_and_exit_2(self):
        for args in (['--help'], ['attach-accelerator', '--server', 'x',
                                  '--device-profile', 'gpu']):
            proc = self.nova_accel('without-nova', *args)
            self.assertEqual(2, proc.returncode, proc.stderr)
            self.assertEqual('', proc.stdout)
            lines = proc.stderr.splitlines()
            self.assertEqual(1, len(lines), proc.stderr)
            self.assertIn('cannot import Nova', lines[0])
            self.assertTrue(lines[0].startswith('nova-accel: '), lines[0])

    def test_with_nova_parses_novas_command_line(self):
        proc = self.nova_accel('with-nova', '--help')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('usage: nova-accel', proc.stdout)
        self.assertIn('attach-accelerator', proc.stdout)
        self.assertIn('replace-accelerator', proc.stdout)
        # A bad command line is Nova's parser's exit status 2, with usage.
        proc = self.nova_accel('with-nova', 'attach-accelerator')
        self.assertEqual(2, proc.returncode, proc.stdout)
        self.assertIn('--server', proc.stderr)
