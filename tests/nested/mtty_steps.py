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

"""The mediated-device scenario of ``test_cloud``'s cloud: the kernel's
``mtty`` sample (``tools.nested.mtty``, loaded in L1 at boot) discovered
by the agent's ``mdev`` driver, sold through Placement, created by
``accel.LibvirtDriver`` through L1's libvirt, seen by the guest, and
hot-added and hot-removed (``nova-accel attach-accelerator``), and
destroyed after each release (``[cleaning] methods`` ``mdev:mdev``)."""

import sys
import time

from nova_accel_tempest_plugin import guest_console
from tools.aio import devices

#: The PCI id the guest sees for an mtty device (``samples/vfio-mdev/
#: mtty.c`` writes vendor 0x4348, device 0x3253 into its config space).
MTTY = '0x4348:0x3253'
PARENT = 'mtty_mtty'


class MttySteps:
    """Mixed into ``test_cloud.TestARealGuest`` (its cloud and helpers)."""

    def test_a_mediated_device_of_the_kernels_mtty_sample(self):
        start = time.monotonic()
        rp = self.provider_of(PARENT)
        inventory = self.api('GET', 'placement', '/resource_providers/%s/'
                             'inventories' % rp)['inventories']
        self.assertEqual(12, inventory['VGPU']['total'])
        self.assertIn('CUSTOM_MDEV_MTTY_2', self.api(
            'GET', 'placement', '/resource_providers/%s/traits' % rp,
            headers={'OpenStack-API-Version': 'placement 1.6'})['traits'])
        flavor = self.flavor_for('nested-mtty', devices.MTTY_GROUP)
        server = self.boot('nested-mtty', flavor)
        active = time.monotonic() - start
        arq, = self.arqs(server)
        self.assertEqual(('Bound', 'MDEV', rp), (
            arq['state'], arq['attach_handle_type'], arq['device_rp_uuid']))
        self.assertEqual(PARENT, arq['attach_handle_info']['parent'])
        mdev = arq['attach_handle_uuid']
        # L1's kernel holds the mediated device of the handle's UUID, of
        # the asked type; L1's libvirt defined it (mdevctl) and the
        # domain holds it.
        _, seen = self.sess.sh(
            'cat /sys/bus/mdev/devices/{u}/mdev_type/name\n'
            'mdevctl list --defined --uuid {u}\n'.format(u=mdev))
        self.assertIn('Dual port serial', seen)
        self.assertIn(devices.MTTY_TYPE, seen)
        _, xml = self.sess.sh('virsh -c qemu:///system dumpxml %s' % (
            server['OS-EXT-SRV-ATTR:instance_name']))
        self.assertIn("<hostdev mode='subsystem' type='mdev' managed='no' "
                      "model='vfio-pci'", xml)
        self.assertIn("<address uuid='%s'/>" % mdev, xml)
        self.assertEqual(1, self.api(
            'GET', 'placement', '/resource_providers/%s/usages' % rp)[
            'usages'].get('VGPU'))
        # The guest's kernel lists the serial card as a PCI function.
        out = self.console(server, lambda text: 'guest: done' in text)
        self.assertEqual(1, guest_console.count(out, MTTY), out[-2000:])
        listed = time.monotonic() - start
        plugged = self._hot_add_and_remove_mtty(server, mdev)
        # Deleted: the mediated device is destroyed (kernel and mdevctl)
        # and the parent offered whole again.
        self.delete(server)
        deleted = time.monotonic()
        self._until_mdev_destroyed(mdev)
        self._until(lambda: rp in self.api(
            'GET', 'placement', '/allocation_candidates?resources=VGPU:12'
            '&required=CUSTOM_MDEV_MTTY_2', headers={
                'OpenStack-API-Version': 'placement 1.36'})[
            'provider_summaries'], 'the mtty parent is not offered again')
        print('mtty scenario: ACTIVE %.1f s, guest listed the device %.1f s '
              'after the start; hot-added one listed %.1f s after the '
              'attach; destroyed and offered again %.1f s after the '
              'delete' % (active, listed, plugged,
                          time.monotonic() - deleted), file=sys.stderr)

    def _hot_add_and_remove_mtty(self, server, mdev):
        """``nova-accel attach-accelerator`` of a second mtty device:
        created in L1 and seen by the guest; detached: gone from the
        guest and destroyed.  Returns the seconds from the attach until
        the guest listed it."""
        self.api('POST', 'accel', '/v2/device_profiles',
                 [{'name': 'nested-mtty-extra',
                   'groups': [devices.MTTY_GROUP]}])
        self.addCleanup(self.api, 'DELETE', 'accel',
                        '/v2/device_profiles/nested-mtty-extra')
        start = time.monotonic()
        done = self.nova_accel('attach-accelerator', '--server',
                               server['id'], '--device-profile',
                               'nested-mtty-extra')
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        extra, = [a['attach_handle_uuid'] for a in self.arqs(server)
                  if a['attach_handle_uuid'] != mdev]
        out = self.console(server, lambda text: guest_console.count(
            text, MTTY) == 2, timeout=300)
        self.assertEqual(2, guest_console.count(out, MTTY), out[-2000:])
        plugged = time.monotonic() - start
        _, xml = self.sess.sh('virsh -c qemu:///system dumpxml %s' % (
            server['OS-EXT-SRV-ATTR:instance_name']))
        self.assertIn("<address uuid='%s'/>" % extra, xml)
        done = self.nova_accel('detach-accelerator', '--server',
                               server['id'], '--device-profile',
                               'nested-mtty-extra')
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        out = self.console(server, lambda text: guest_console.count(
            text, MTTY) == 1 and 'changed' in text, timeout=300)
        self.assertEqual(1, guest_console.count(out, MTTY), out[-2000:])
        self._until_mdev_destroyed(extra)
        return plugged

    def _until_mdev_destroyed(self, mdev):
        """Wait until L1 has neither mediated device ``mdev`` nor its
        mdevctl definition."""
        self._until(lambda: self.sess.sh(
            'test -e /sys/bus/mdev/devices/%s || '
            'test -n "$(mdevctl list --defined --uuid %s)"' % (mdev, mdev),
            check=False)[0] != 0, 'mediated device %s was not destroyed'
            % mdev)
