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

"""A device reaches a real guest: in L1, libvirt (QEMU driver, TCG)
starts a guest (L2) with the ``<hostdev>`` nova_accel composes from the
attach handle accel_backend discovered; L1's kernel and the guest's own
console show where the device is, before, during and after."""

import json
import os
import shlex
import sys

import testtools

from nova_accel_tempest_plugin import guest_console
from tools.nested import image
from tools.nested import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ADDRESS = node.Layout.ROOT_EDUS[0]
#: Two edu functions in one slot (no ACS: one IOMMU group, the kernel's
#: rule for multi-function devices), beside a function alone.
UNIT = '0000:00:05.0'
LAYOUT = node.Layout(devices=['edu,addr=04.0',
                              'edu,addr=05.0,multifunction=on',
                              'edu,addr=05.1'])


class TestPassthroughToAGuest(testtools.TestCase):
    """One L1 boot and one L2 boot (about 2.5 minutes under TCG): a
    function alone and a unit of two functions of one slot."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        vmlinuz, _, _ = image.kernel()
        initrd = image.guest_initramfs()
        script = '\n'.join([
            'set -e', 'modprobe vfio-pci',
            'cd %s' % shlex.quote(REPO),
            'OS_NOVA_DISABLE_EVENTLET_PATCHING=1 %s -m '
            'tools.nested.l1_passthrough --address %s --unit %s '
            '--kernel %s --initrd %s' % (
                shlex.quote(sys.executable), ADDRESS, UNIT,
                shlex.quote(vmlinuz), shlex.quote(initrd)),
            ''])
        rc, out, cls.took = node.NestedNode(layout=LAYOUT).run(script)
        if rc:
            raise AssertionError('passthrough in L1 failed (%d):\n%s' % (
                rc, out[-3000:]))
        cls.result = json.loads(out[out.index('{\n'):])

    def test_libvirt_holds_the_composed_hostdev(self):
        xml = self.result['dumpxml']
        self.assertIn("<hostdev mode='subsystem' type='pci' managed='yes'>",
                      xml)
        self.assertIn("<address domain='0x0000' bus='0x00' slot='0x04' "
                      "function='0x0'/>", xml)

    def test_the_guest_lists_the_device(self):
        lines = [line for line in self.result['guest_console'].splitlines()
                 if line.startswith('guest-pci ')]
        self.assertIn('0x1234:0x11e8', [line.split()[2] for line in lines],
                      self.result['guest_console'][-2000:])

    def test_l1_kernel_hands_the_device_to_vfio_and_back(self):
        # managed='yes': libvirt binds vfio-pci for the guest's lifetime
        # and gives the function back (here: to no driver) afterwards.
        self.assertEqual((None, 'vfio-pci', None), (
            self.result['driver_before'],
            self.result['driver_while_running'],
            self.result['driver_after']))

    def test_reset_method_as_the_kernel_offers_it(self):
        # QEMU's edu function has no FLR, PM or bus reset: the kernel
        # offers no ``reset`` file, so cleaning cannot reset it (the
        # cleaner's flr method fails it rather than pretend).
        self.assertFalse(self.result['reset_offered'])

    def test_the_slots_functions_are_one_unit(self):
        # From L1's real IOMMU groups, as discovery computes it.
        self.assertEqual('0,1', self.result['unit_info']['functions'])
        xml = self.result['dumpxml']
        for function in (0, 1):
            self.assertIn("<address domain='0x0000' bus='0x00' "
                          "slot='0x05' function='0x%d'/>" % function, xml)
        self.assertIn("multifunction='on'", xml)
        # libvirt moved both to vfio-pci for the guest, and back.
        self.assertEqual(
            ([None, None], ['vfio-pci', 'vfio-pci'], [None, None]),
            (self.result['unit_before'], self.result['unit_while_running'],
             self.result['unit_after']))

    def test_the_guest_lists_both_functions_in_one_slot(self):
        edus = [f.address for f in guest_console.listing(
            self.result['guest_console']) or []
            if f.pci_id == '0x1234:0x11e8']
        self.assertEqual(3, len(edus), self.result['guest_console'][-2000:])
        slots = {}
        for address in edus:
            slot, function = address.rsplit('.', 1)
            slots.setdefault(slot, []).append(function)
        self.assertIn(['0', '1'], sorted(sorted(f) for f in slots.values()),
                      edus)
