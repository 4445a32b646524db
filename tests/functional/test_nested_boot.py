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

"""``tools.nested.node``: an L1 kernel that stops before its init runs is
booted again once (``BOOT_TRIES``), and a second stop fails with its
console.  QEMU is the boundary: a shell script stands in for it, writing
L1's console and the job's files into the shared directory as L1 does."""

import subprocess

import fixtures
import testtools

from tools.nested import node

# First boot: a kernel line, then nothing (the hang of 2026-11-25).
HANG = 'echo "[    1.6] hpet0: at MMIO" > "$1/console.log"; exec sleep 60'
# A boot whose init runs the job.
BOOTS = ('echo "%s, running stage2" > "$1/console.log"; '
         'echo "job output" > "$1/job.out"; echo 0 > "$1/job.rc"'
         % node.INIT_RAN)


class BootRetryTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'tools.nested.node.BOOT_TIMEOUT', 1))
        self.lines = []
        self.node = node.NestedNode(log=self.lines.append)
        self.started = []

    def fake_qemu(self, *scripts):
        """``NestedNode.start`` running ``scripts`` (sh, ``$1`` the shared
        directory) in turn, one per boot."""
        def start(script, out, stdout=subprocess.PIPE):
            self.started.append(subprocess.Popen(
                ['sh', '-c', scripts[len(self.started)], 'qemu', out],
                stdout=stdout, stderr=subprocess.STDOUT,
                start_new_session=True))
            return self.started[-1]
        self.useFixture(fixtures.MonkeyPatch(
            'tools.nested.node.NestedNode.start',
            lambda _self, script, out, stdout=subprocess.PIPE:
            start(script, out, stdout)))

    def test_a_kernel_that_stops_is_booted_again(self):
        self.fake_qemu(HANG, BOOTS)
        rc, out, _took = self.node.run('true', timeout=60)
        self.assertEqual((0, 'job output\n'), (rc, out))
        self.assertEqual(2, len(self.started))
        # The hung boot's QEMU was killed, and said so with its console.
        self.assertIsNotNone(self.started[0].poll())
        said = '\n'.join(self.lines)
        self.assertIn('did not reach its init', said)
        self.assertIn('hpet0', said)

    def test_two_stops_fail_with_the_console(self):
        self.fake_qemu(HANG, HANG)
        e = self.assertRaises(node.NestedError, self.node.run, 'true',
                              timeout=60)
        self.assertIn('in 2 boots', str(e))
        self.assertIn('hpet0', str(e))
        self.assertEqual(2, len(self.started))
        self.assertTrue(all(p.poll() is not None for p in self.started))

    def test_a_boot_that_reaches_init_is_not_repeated(self):
        self.fake_qemu(BOOTS)
        self.assertEqual(0, self.node.run('true', timeout=60)[0])
        self.assertEqual(1, len(self.started))
