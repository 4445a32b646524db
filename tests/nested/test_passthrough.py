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

from tools.nested import image
from tools.nested import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
ADDRESS = node.Layout.ROOT_EDUS[0]


class TestPassthroughToAGuest(testtools.TestCase):
    """One L1 boot and one L2 boot (about 2.5 minutes under TCG)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        vmlinuz, _, _ = image.kernel()
        initrd = image.guest_initramfs()
        script = '\n'.join([
            'set -e', 'modprobe vfio-pci',
            'cd %s' % shlex.quote(REPO),
            'OS_NOVA_DISABLE_EVENTLET_PATCHING=1 %s -m '
            'tools.nested.l1_passthrough --address %s --kernel %s '
            '--initrd %s' % (shlex.quote(sys.executable), ADDRESS,
                             shlex.quote(vmlinuz), shlex.quote(initrd)),
            ''])
        rc, out, cls.took = node.NestedNode().run(script)
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
