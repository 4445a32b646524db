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

"""The guest image's listing of its PCI functions
(``tools.nested.image.GUEST_LIST``), run by a POSIX shell over a PCI
devices directory laid out as sysfs shows one (``vendor``, ``device`` and
``numa_node`` files of one line each, Linux
``Documentation/ABI/testing/sysfs-bus-pci``): it prints what
``guest_console.listing`` reads, and runs no program (the guest lists
every 3 s, where each fork is slow)."""

import os
import subprocess

import fixtures
import testtools

from nova_accel_tempest_plugin import guest_console
from tools.nested import image


class GuestListTest(testtools.TestCase):

    def function(self, root, address, vendor, device, numa=None):
        path = os.path.join(root, address)
        os.makedirs(path)
        files = {'vendor': vendor, 'device': device}
        if numa is not None:
            files['numa_node'] = numa
        for name, value in files.items():
            with open(os.path.join(path, name), 'w') as f:
                f.write(value + '\n')

    def test_lists_every_function_with_builtins_only(self):
        root = self.useFixture(fixtures.TempDir()).path
        self.function(root, '0000:00:04.0', '0x1234', '0x11e8', '1')
        self.function(root, '0000:00:05.0', '0x1234', '0x11e8', '-1')
        # No numa_node file (a kernel without NUMA): an empty value.
        self.function(root, '0000:00:01.0', '0x8086', '0x7000')
        script = ('pci=%s\n%slist\necho "guest: PCI functions"\n'
                  'printf "%%s" "$now"\necho "guest: done"\n' % (
                      root, image.GUEST_LIST))
        # No PATH: a program instead of a builtin is not found.
        done = subprocess.run(['/bin/sh', '-c', script], env={'PATH': ''},
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(('', 0), (done.stderr, done.returncode))
        self.assertEqual([
            'guest: PCI functions',
            'guest-pci 0000:00:01.0 0x8086:0x7000 numa=',
            'guest-pci 0000:00:04.0 0x1234:0x11e8 numa=1',
            'guest-pci 0000:00:05.0 0x1234:0x11e8 numa=-1',
            'guest: done'], done.stdout.splitlines())
        self.assertEqual([
            guest_console.Function('0000:00:01.0', '0x8086:0x7000', -1),
            guest_console.Function('0000:00:04.0', '0x1234:0x11e8', 1),
            guest_console.Function('0000:00:05.0', '0x1234:0x11e8', -1)],
            guest_console.listing(done.stdout))
        self.assertEqual(2, guest_console.count(done.stdout,
                                                '0x1234:0x11e8'))
