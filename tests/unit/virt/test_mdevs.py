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

"""``accel.LibvirtDriver._allocate_cyborg_mdevs``: mediated devices of
parents that are not PCI functions (``nova_accel.virt.mdevs``),
created through Nova 34's own ``_create_mdev``; the others left to
Nova's method.  libvirt's boundary: node devices are looked up in
libvirt's ``test:///default`` driver (a real ``VIR_ERR_NO_NODE_DEVICE``
for an unknown name) and the creations Nova asks for are recorded."""

import types

import fixtures
import libvirt
from nova.virt.libvirt import guest as nova_guest

from nova_accel.virt import exception
from nova_accel.virt.libvirt import driver
from nova_accel.virt import mdevs
from tests.unit.virt import base

MTTY_NODE = 'mdev_b1ae8bf6_38b0_4c81_9d44_78ce3f520496_mtty'


class _DriverTestCase(base.TestCase):
    """``self.drv``: an ``accel.LibvirtDriver`` over a ``base.FakeHost``."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        libvirt.registerErrorHandler(base._quiet, None)
        self.addCleanup(libvirt.registerErrorHandler, None, None)
        self.drv = object.__new__(driver.LibvirtDriver)
        self.drv._host = base.FakeHost()
        # What Nova's _warn_if_nova_managed reads (no [devices] types).
        self.drv.pgpu_type_mapping = {}
        self.drv.pgpu_type_default = None


class AllocateCyborgMdevsTest(_DriverTestCase):

    def test_virtual_parent_created_through_nova(self):
        self.assertEqual([base.MTTY_UUID],
                         self.drv._allocate_cyborg_mdevs([base.MTTY_ARQ]))
        # Created, defined and autostarted on libvirt's parent name, as
        # Nova does for a GPU.
        self.assertEqual([
            ('create', 'mtty_mtty', 'mtty-2', base.MTTY_UUID),
            ('define', 'mtty_mtty', 'mtty-2', base.MTTY_UUID),
            ('autostart', 'mdev_mtty_mtty', True)], self.drv._host.calls)

    def test_pci_parents_left_to_nova_in_arq_order(self):
        got = self.drv._allocate_cyborg_mdevs(
            [base.MDEV_ARQ, base.PCI_ARQ, base.MTTY_ARQ])
        self.assertEqual([base.MDEV_UUID, base.MTTY_UUID], got)
        self.assertEqual(['pci_0000_5e_00_0', 'mtty_mtty'],
                         [c[1] for c in self.drv._host.calls
                          if c[0] == 'create'])

    def test_existing_device_not_created_again(self):
        self.drv._host.known.add(MTTY_NODE)
        self.assertEqual([base.MTTY_UUID],
                         self.drv._allocate_cyborg_mdevs([base.MTTY_ARQ]))
        self.assertEqual([], self.drv._host.calls)

    def test_other_libvirt_errors_raise(self):
        def broken(name):
            raise libvirt.libvirtError('connection lost')
        self.drv._host.device_lookup_by_name = broken
        self.assertRaises(libvirt.libvirtError,
                          self.drv._allocate_cyborg_mdevs, [base.MTTY_ARQ])
        self.assertEqual([], self.drv._host.calls)

    def test_malformed_handles_refused_before_libvirt(self):
        for key, value in (('parent_addr', '../mtty'), ('parent', ''),
                           ('asked_type', None)):
            arq = dict(base.MTTY_ARQ, attach_handle_info=dict(
                base.MTTY_ARQ['attach_handle_info'], **{key: value}))
            e = self.assertRaises(exception.InvalidAttachHandle,
                                  self.drv._allocate_cyborg_mdevs, [arq])
            self.assertIn(key, str(e))
        e = self.assertRaises(
            exception.InvalidAttachHandle, self.drv._allocate_cyborg_mdevs,
            [dict(base.MTTY_ARQ, attach_handle_uuid='not-a-uuid')])
        self.assertIn('not a UUID', str(e))
        self.assertEqual([], self.drv._host.calls)


class OnVirtualParentTest(base.TestCase):

    def test_which_handles(self):
        self.assertTrue(mdevs.on_virtual_parent(base.MTTY_ARQ))
        self.assertFalse(mdevs.on_virtual_parent(base.MDEV_ARQ))
        self.assertFalse(mdevs.on_virtual_parent(base.PCI_ARQ))
        self.assertFalse(mdevs.on_virtual_parent(
            dict(base.MTTY_ARQ, attach_handle_type='PCI')))

    def test_node_device_name(self):
        self.assertEqual((base.MTTY_UUID, 'mtty_mtty', 'mtty-2', MTTY_NODE),
                         mdevs.creation(base.MTTY_ARQ))


class HotPlugTest(_DriverTestCase):
    """``LibvirtHotplugMixin.accel_plug`` (``nova-accel
    attach-accelerator``): the mediated device is created before its
    ``<hostdev>`` is plugged into the running guest."""

    def test_created_then_plugged(self):
        instance = types.SimpleNamespace(uuid='0e9a2c1b-1111-4222-8333-'
                                              '944455556666')
        self.drv.accel_plug(instance, [base.MTTY_ARQ])
        calls = self.drv._host.calls
        self.assertEqual(['create', 'define', 'autostart', 'attach'],
                         [c[0] for c in calls])
        self.assertIn('type="mdev"', calls[-1][1])
        self.assertIn(base.MTTY_UUID, calls[-1][1])
        self.assertEqual((True, True), calls[-1][2:])

    def test_bad_handle_creates_nothing(self):
        self.assertRaises(
            exception.InvalidAttachHandle, self.drv.accel_plug, None,
            [base.MTTY_ARQ, dict(base.MDEV_ARQ, attach_handle_uuid='nope')])
        self.assertEqual([], self.drv._host.calls)


LIVE_XML = """<domain type='qemu'><name>g</name><devices>
<hostdev mode='subsystem' type='pci' managed='yes'><source>
<address domain='0x0000' bus='0x00' slot='0x04' function='0x0'/></source>
<alias name='hostdev0'/></hostdev>
<hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci'
 display='off'><source><address uuid='%s'/></source>
<alias name='hostdev1'/></hostdev>
</devices></domain>""" % base.MTTY_UUID


class LiveAliasTest(_DriverTestCase):
    """A hot-plugged mediated device's live config gets the alias Nova's
    live detach waits for (``mdevs.live_alias``)."""

    def _guest(self, xml):
        # Nova's Guest over a libvirt domain (the boundary) whose live
        # XML is ``xml``.
        return nova_guest.Guest(types.SimpleNamespace(
            XMLDesc=lambda flags: xml))

    def test_found_with_its_alias(self):
        guest = self._guest(LIVE_XML)
        dev = self.drv._accel_find_hostdev(guest, ('mdev', base.MTTY_UUID))
        self.assertEqual((base.MTTY_UUID, 'hostdev1'), (dev.uuid, dev.alias))
        self.assertIsNone(self.drv._accel_find_hostdev(
            guest, ('mdev', base.MDEV_UUID)))

    def test_no_alias_in_the_xml(self):
        self.assertIsNone(mdevs.live_alias(
            LIVE_XML.replace("<alias name='hostdev1'/>", ''), base.MTTY_UUID))
        self.assertIsNone(mdevs.live_alias(LIVE_XML, base.MDEV_UUID))
