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

"""Tests for the nova_accel compute drivers and the nova.virt.accel shim."""

import inspect
import types
from unittest import mock

import libvirt
from lxml import etree
from nova.virt import fake as nova_fake
from nova.virt.libvirt import driver as nova_libvirt_driver

from nova_accel.virt import exception
from nova_accel.virt import fake
from nova_accel.virt import hostdev
from nova_accel.virt.libvirt import driver
from tests.unit.virt import base


class LibvirtDriverTest(base.TestCase):

    def setUp(self):
        super().setUp()
        # The hook uses no driver state: skip __init__ (no libvirt host).
        self.drv = object.__new__(driver.LibvirtDriver)

    def test_capabilities(self):
        self.assertTrue(
            driver.LibvirtDriver.capabilities['supports_accelerators'])
        base_caps = nova_libvirt_driver.LibvirtDriver.capabilities
        self.assertEqual(set(base_caps),
                         set(driver.LibvirtDriver.capabilities))

    def test_nova_still_calls_the_hook(self):
        # Guards against a Nova upgrade renaming the extension point.
        src = inspect.getsource(
            nova_libvirt_driver.LibvirtDriver._get_guest_config)
        self.assertIn('self._guest_add_accel_pci_devices(guest,', src)
        self.assertIsNot(
            nova_libvirt_driver.LibvirtDriver._guest_add_accel_pci_devices,
            driver.LibvirtDriver._guest_add_accel_pci_devices)

    def test_adds_our_hostdevs(self):
        guest = base.config_guest()
        self.drv._guest_add_accel_pci_devices(
            guest, [base.PCI_ARQ, base.TEST_PCI_ARQ, base.PCI_ARQ_2])
        self.assertEqual(2, len(guest.devices))
        for dev in guest.devices:
            self.assertIsInstance(dev, hostdev.HostdevConfig)
        xml = guest.to_xml()
        doc = etree.fromstring(xml)
        addrs = [dict(a.attrib) for a in
                 doc.findall('./devices/hostdev/source/address')]
        self.assertEqual(
            [{'domain': '0x0000', 'bus': '0xaf', 'slot': '0x00',
              'function': '0x0'},
             {'domain': '0x0001', 'bus': '0x3b', 'slot': '0x1f',
              'function': '0x7'}], addrs)
        for hd in doc.findall('./devices/hostdev'):
            self.assertEqual('yes', hd.get('managed'))
        # The whole guest document Nova would send is valid for libvirt.
        conn = libvirt.open('test:///default')
        self.addCleanup(conn.close)
        dom = conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
        dom.undefine()

    def test_bad_handle_fails_guest_config(self):
        guest = base.config_guest()
        bad = dict(base.PCI_ARQ, attach_handle_info={
            'domain': '0000', 'bus': 'af', 'device': '40', 'function': '0'})
        self.assertRaises(exception.InvalidAttachHandle,
                          self.drv._guest_add_accel_pci_devices, guest, [bad])
        self.assertEqual([], guest.devices)

    def test_no_arqs(self):
        guest = base.config_guest()
        self.drv._guest_add_accel_pci_devices(guest, [])
        self.assertEqual([], guest.devices)


def _instance(uuid='0e9a2c1b-1111-4222-8333-944455556666'):
    flavor = types.SimpleNamespace(vcpus=1, memory_mb=512, root_gb=1)
    return types.SimpleNamespace(uuid=uuid, name='inst', flavor=flavor,
                                 image_meta=None)


class FakeDriverTest(base.TestCase, base.LibvirtSchemaMixin):

    def setUp(self):
        super().setUp()
        self.drv = fake.FakeDriver(nova_fake.FakeVirtAPI())

    def _spawn(self, instance, accel_info):
        self.drv.spawn(None, instance, None, None, None, None,
                       accel_info=accel_info)

    def test_is_small_fake_driver(self):
        self.assertIsInstance(self.drv, nova_fake.SmallFakeDriver)
        self.assertTrue(fake.FakeDriver.capabilities['supports_accelerators'])
        self.assertEqual(2, self.drv.resources.vcpus)

    def test_spawn_records_hostdevs(self):
        inst = _instance()
        self._spawn(inst, [base.PCI_ARQ, base.TEST_PCI_ARQ, base.MDEV_ARQ])
        xmls = self.drv.guest_hostdevs[inst.uuid]
        self.assertEqual(2, len(xmls))
        self.assertIn("bus=\"0xaf\"", xmls[0])
        self.assertIn(base.MDEV_UUID, xmls[1])
        self.assertIn(inst.uuid, self.drv.instances)
        self.assertLibvirtAccepts(xmls)

    def test_spawn_without_accelerators(self):
        inst = _instance()
        self._spawn(inst, None)
        self.assertEqual([], self.drv.guest_hostdevs[inst.uuid])

    def test_spawn_bad_handle_creates_nothing(self):
        inst = _instance()
        bad = dict(base.PCI_ARQ, attach_handle_type='NVMe')
        self.assertRaises(exception.InvalidAttachHandle, self._spawn, inst,
                          [bad])
        self.assertNotIn(inst.uuid, self.drv.instances)
        self.assertNotIn(inst.uuid, self.drv.guest_hostdevs)

    def test_destroy_forgets(self):
        inst = _instance()
        self._spawn(inst, [base.PCI_ARQ])
        self.drv.destroy(None, inst, None)
        self.assertNotIn(inst.uuid, self.drv.guest_hostdevs)

    def test_hard_reboot_of_missing_guest_keeps_accelerators(self):
        inst = _instance()
        self.drv.reboot(None, inst, None, 'HARD', accel_info=[base.PCI_ARQ])
        self.assertEqual(1, len(self.drv.guest_hostdevs[inst.uuid]))
        self.assertIn(inst.uuid, self.drv.instances)

    def test_soft_reboot_delegates(self):
        inst = _instance()
        self._spawn(inst, [base.PCI_ARQ])
        with mock.patch.object(nova_fake.FakeDriver, 'reboot') as reboot:
            self.drv.reboot(None, inst, None, 'SOFT')
        reboot.assert_called_once()
        self.assertEqual(1, len(self.drv.guest_hostdevs[inst.uuid]))


class ShimTest(base.TestCase):

    def test_nova_virt_accel(self):
        # nova.virt.accel is importable once the bundle is installed
        # (pip install), and also from the source tree's nova/ directory
        # when that is on sys.path.  Nova loads drivers exactly like this.
        # tox runs nova-accel-driver-shim install first; a shim that
        # cannot be imported is a failure (tests/install covers the
        # layouts).
        from oslo_utils import importutils
        cls = importutils.import_class('nova.virt.accel.LibvirtDriver')
        self.assertIs(driver.LibvirtDriver, cls)
        self.assertIs(fake.FakeDriver, importutils.import_class(
            'nova.virt.accel.FakeDriver'))
