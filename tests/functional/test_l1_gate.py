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

"""``tools.aio.l1_gate``, as ``tools.aio.nested.boot`` starts L1's
services with it: the program's modules are imported at once, its
``main`` runs only once the gate file exists, with the console script's
command line as ``sys.argv``, and its answer is the exit status."""

import os
import subprocess
import sys
import time

import fixtures
import testtools

from tools.aio import nested

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class L1GateTest(testtools.TestCase):

    def gate(self, *args):
        return subprocess.Popen(
            [sys.executable, '-m', 'tools.aio.l1_gate'] + list(args),
            cwd=ROOT, env=dict(os.environ, L1_GATE_TEST_MARK=self.mark),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.mark = os.path.join(tmp, 'mark')
        self.go = os.path.join(tmp, 'go')

    def test_imports_first_and_runs_once_the_gate_opens(self):
        proc = self.gate(self.go, 'tests.functional.l1_gate_target:main',
                         'json,tests.functional.l1_gate_preload', '--',
                         '/venv/bin/nova-compute', '--config-file', 'x.conf')
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + 60
        while self.marks() != ['imported', 'preloaded']:
            self.assertLess(time.monotonic(), deadline, self.marks())
            time.sleep(0.1)
        # Imported, and waiting for the gate.
        time.sleep(3 * 0.5)
        self.assertIsNone(proc.poll())
        with open(self.go, 'w'):
            pass
        out, err = proc.communicate(timeout=60)
        self.assertEqual((3, '/venv/bin/nova-compute --config-file x.conf\n'),
                         (proc.returncode, out), err)
        # The entry point's module first (Nova's nova.cmd.compute must
        # come before anything that imports eventlet), each once.
        self.assertEqual(['imported', 'preloaded'], self.marks())

    def marks(self):
        if not os.path.exists(self.mark):
            return []
        with open(self.mark) as f:
            return f.read().split()

    def test_a_command_line_of_another_shape_is_refused(self):
        proc = self.gate(self.go, 'tests.functional.l1_gate_target:main', '',
                         '/venv/bin/nova-compute')
        out, err = proc.communicate(timeout=60)
        self.assertNotEqual(0, proc.returncode)
        self.assertIn('GATE MODULE:FUNCTION', err)
        self.assertFalse(os.path.exists(self.mark))

    def test_the_services_of_l1_keep_their_console_script(self):
        # l1_restart.prepare finds nova-compute by "bin/nova-compute ".
        layout = type('Layout', (), {'venv': '/venv'})()
        paths = {'nova': '/n/nova-cpu.conf', 'agent': '/n/agent.conf'}
        gated = dict(nested.l1_services(layout, paths, gate='/n/go'))
        plain = dict(nested.l1_services(layout, paths))
        self.assertEqual({
            'nova-compute': '/venv/bin/nova-compute --config-file '
                            '/n/nova-cpu.conf',
            'accel-backend-agent': '/venv/bin/accel-backend-agent '
                                   '--config-file /n/agent.conf'}, plain)
        for name, command in plain.items():
            self.assertTrue(gated[name].endswith(' -- ' + command))
            self.assertIn(' -m tools.aio.l1_gate /n/go ', gated[name])
        # What the shell in L1 passes on: an empty preload list is an
        # argument of its own.
        self.assertIn(" accel_backend.cmd.agent:main '' -- ",
                      gated['accel-backend-agent'])
