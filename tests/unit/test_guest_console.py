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

"""The parser of a test guest's console listing of its PCI functions
(``nova_accel_tempest_plugin.guest_console``), on console text as the
nested compute node's guest image prints it (``tools/nested/image.py``):
kernel lines interleaved, a hot-plug's second listing, a listing still
being printed."""

import testtools

from nova_accel_tempest_plugin import guest_console

EDU = '0x1234:0x11e8'
BOOT = '''[    1.2] Run /init as init process
guest: boot 6f1c2d3e-0000-4000-8000-000000000001
guest: PCI functions
guest-pci 0000:00:00.0 0x8086:0x29c0 numa=-1
guest-pci 0000:ff:00.0 0x1234:0x11e8 numa=1
[   20.3] random: crng init done
guest: done
'''
HOT_ADD = '''guest: PCI functions changed
guest-pci 0000:00:00.0 0x8086:0x29c0 numa=-1
guest-pci 0000:00:04.0 0x1234:0x11e8 numa=-1
guest-pci 0000:ff:00.0 0x1234:0x11e8 numa=1
'''


class ListingTest(testtools.TestCase):

    def test_nothing_before_the_first_listing_is_complete(self):
        self.assertIsNone(guest_console.listing('[    0.0] Linux\n'))
        self.assertIsNone(guest_console.listing(BOOT.replace(
            'guest: done\n', '')))
        self.assertEqual(0, guest_console.count('', EDU))

    def test_functions_with_their_numa_node(self):
        self.assertEqual([
            guest_console.Function('0000:00:00.0', '0x8086:0x29c0', -1),
            guest_console.Function('0000:ff:00.0', EDU, 1)],
            guest_console.listing(BOOT))
        self.assertEqual(1, guest_console.count(BOOT, EDU))

    def test_a_listing_being_printed_leaves_the_last_complete_one(self):
        self.assertEqual(1, guest_console.count(BOOT + HOT_ADD, EDU))
        self.assertEqual(2, guest_console.count(
            BOOT + HOT_ADD + 'guest: done\n', EDU))

    def test_a_line_without_numa_is_numa_minus_one(self):
        console = ('guest: PCI functions\nguest-pci 0000:00:04.0 '
                   '0x1234:0x11e8\nguest: done\n')
        self.assertEqual([-1], [fn.numa for fn in
                                guest_console.listing(console)])

    def test_the_last_boot(self):
        self.assertIsNone(guest_console.boot_id('[    0.0] Linux\n'))
        again = BOOT.replace('0000-4000-8000-000000000001',
                             '0000-4000-8000-000000000002')
        self.assertEqual('6f1c2d3e-0000-4000-8000-000000000002',
                         guest_console.boot_id(BOOT + HOT_ADD + again))
        # A console kept across boots: only the new boot's listing counts,
        # none until it is complete.
        kept = BOOT + HOT_ADD + 'guest: done\n'
        self.assertEqual(2, guest_console.count(kept, EDU))
        rebooting = kept + again.replace('guest: done\n', '')
        self.assertIsNone(guest_console.listing(rebooting))
        self.assertEqual(1, guest_console.count(kept + again, EDU))
