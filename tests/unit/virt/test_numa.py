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

"""Guest NUMA placement of accelerator hostdevs
(``nova_accel.virt.libvirt.numa`` and the driver hook)."""

from unittest import mock

import libvirt
from lxml import etree
from nova.virt.libvirt import config as vconfig

from nova_accel.virt.libvirt import driver
from nova_accel.virt.libvirt import numa
from tests.unit.virt import base

# Host nodes crossed on purpose: guest cell 0 is on host node 1 and guest
# cell 1 on host node 0.
CELL_ON_NODE = {0: 1, 1: 0}

NODEDEV = """<device><name>%(name)s</name><parent>computer</parent>
<capability type='pci'><domain>0</domain><bus>175</bus><slot>0</slot>
<function>0</function><numa node='%(node)s'/></capability></device>"""


def numa_guest(mach_type='pc-q35-8.2', cell_on_node=CELL_ON_NODE):
    guest = base.config_guest('accel-numa',
                              'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5c', 2048, 2)
    guest.os_mach_type = mach_type
    guest.cpu = vconfig.LibvirtConfigGuestCPU()
    guest.cpu.numa = vconfig.LibvirtConfigGuestCPUNUMA()
    guest.numatune = vconfig.LibvirtConfigGuestNUMATune()
    for cell_id, host_node in sorted(cell_on_node.items()):
        cell = vconfig.LibvirtConfigGuestCPUNUMACell()
        cell.id = cell_id
        cell.cpus = {cell_id}
        cell.memory = 1024
        guest.cpu.numa.cells.append(cell)
        memnode = vconfig.LibvirtConfigGuestNUMATuneMemNode()
        memnode.cellid = cell_id
        memnode.nodeset = [host_node]
        guest.numatune.memnodes.append(memnode)
    return guest


def arq(bus, numa_node=None, uuid='3b4c6a5e-0d3e-4f7a-9d1c-0a0b0c0d0e10'):
    info = {'domain': '0000', 'bus': bus, 'device': '00', 'function': '0'}
    if numa_node is not None:
        info['numa_node'] = numa_node
    return dict(base.PCI_ARQ, uuid=uuid, attach_handle_info=info)


def define(test, xml):
    """Define the guest in libvirt's test driver, validating the XML
    against libvirt's schema; returns the XML libvirt keeps."""
    conn = libvirt.open('test:///default')
    test.addCleanup(conn.close)
    dom = conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
    try:
        return etree.fromstring(dom.XMLDesc(0))
    finally:
        dom.undefine()


class MappingTest(base.TestCase):

    def test_cells_by_host_node(self):
        self.assertEqual({1: 0, 0: 1},
                         numa.guest_cells_by_host_node(numa_guest()))

    def test_two_cells_on_one_node_take_the_lowest(self):
        guest = numa_guest(cell_on_node={0: 0, 1: 0})
        self.assertEqual({0: 0}, numa.guest_cells_by_host_node(guest))

    def test_no_numa_topology(self):
        guest = numa_guest()
        guest.cpu.numa = None
        self.assertEqual({}, numa.guest_cells_by_host_node(guest))
        guest = numa_guest()
        guest.numatune = None
        self.assertEqual({}, numa.guest_cells_by_host_node(guest))

    def test_host_node_from_attach_handle(self):
        lookup = mock.Mock()
        self.assertEqual(1, numa.host_numa_node(arq('af', 1), lookup))
        self.assertEqual(0, numa.host_numa_node(arq('af', '0'), lookup))
        self.assertIsNone(numa.host_numa_node(arq('af', -1), lookup))
        lookup.assert_not_called()

    def test_host_node_from_libvirt_nodedev(self):
        lookup = mock.Mock(return_value=1)
        self.assertEqual(1, numa.host_numa_node(arq('af'), lookup))
        lookup.assert_called_once_with('pci_0000_af_00_0')
        lookup = mock.Mock(side_effect=libvirt.libvirtError('no device'))
        self.assertIsNone(numa.host_numa_node(arq('af'), lookup))
        self.assertIsNone(numa.host_numa_node(arq('af')))

    def test_nodedev_numa_node(self):
        self.assertEqual(1, numa.nodedev_numa_node(
            NODEDEV % {'name': 'pci_0000_af_00_0', 'node': 1}))
        self.assertIsNone(numa.nodedev_numa_node(
            NODEDEV % {'name': 'pci_0000_af_00_0', 'node': -1}))
        self.assertIsNone(numa.nodedev_numa_node(
            "<device><name>x</name><capability type='pci'/></device>"))


class PlaceTest(base.TestCase):

    def _hostdevs(self, nodes):
        from nova_accel.virt import hostdev
        return [([hostdev.compose_hostdev(arq('%02x' % (0xa0 + i)))], node)
                for i, node in enumerate(nodes)]

    def _add(self, guest, hostdevs):
        from nova_accel.virt import hostdev
        for ctrl in numa.place(guest, hostdevs):
            guest.add_device(ctrl)
        for unit, _node in hostdevs:
            guest.add_device(hostdev.HostdevConfig(unit[0]))
        return etree.fromstring(guest.to_xml())

    def test_q35(self):
        guest = numa_guest()
        # Host node 1 -> guest cell 0, host node 0 -> guest cell 1; the
        # third device has no known node and stays on the root bus.
        doc = self._add(guest, self._hostdevs([1, 0, None, 1]))
        ctrls = doc.findall('./devices/controller')
        self.assertEqual(
            [('1', 'pcie-expander-bus', '0'), ('2', 'pcie-root-port', None),
             ('3', 'pcie-root-port', None),
             ('4', 'pcie-expander-bus', '1'), ('5', 'pcie-root-port', None)],
            [(c.get('index'), c.get('model'), c.findtext('./target/node'))
             for c in ctrls])
        # Root ports sit on their expander, slots 0, 1 ...
        self.assertEqual(
            [('0x01', '0x00'), ('0x01', '0x01'), ('0x04', '0x00')],
            [(c.find('address').get('bus'), c.find('address').get('slot'))
             for c in ctrls if c.get('model') == 'pcie-root-port'])
        # ... and each hostdev at slot 0 of its own root port.
        hds = doc.findall('./devices/hostdev')
        self.assertEqual(
            [('0xa0', '0x02'), ('0xa1', '0x05'), ('0xa2', None),
             ('0xa3', '0x03')],
            [(h.find('source/address').get('bus'),
              h.find('address').get('bus') if h.find('address') is not None
              else None) for h in hds])
        kept = define(self, guest.to_xml())
        self.assertEqual(
            ['0', '1'], [c.findtext('./target/node') for c in kept.findall(
                './devices/controller[@model="pcie-expander-bus"]')])

    def test_pc(self):
        guest = numa_guest(mach_type='pc-i440fx-8.2')
        doc = self._add(guest, self._hostdevs([1, 1, 0]))
        self.assertEqual(
            [('1', 'pci-expander-bus', '0'), ('2', 'pci-expander-bus', '1')],
            [(c.get('index'), c.get('model'), c.findtext('./target/node'))
             for c in doc.findall('./devices/controller')])
        self.assertEqual(
            [('0x01', '0x00'), ('0x01', '0x01'), ('0x02', '0x00')],
            [(h.find('address').get('bus'), h.find('address').get('slot'))
             for h in doc.findall('./devices/hostdev')])
        define(self, guest.to_xml())

    def test_after_novas_pcie_ports(self):
        # [libvirt] num_pcie_ports: Nova adds pcie-root and root ports
        # without index; ours come after them.
        guest = numa_guest()
        guest.add_device(vconfig.LibvirtConfigGuestPCIeRootController())
        for _ in range(3):
            guest.add_device(
                vconfig.LibvirtConfigGuestPCIeRootPortController())
        doc = self._add(guest, self._hostdevs([1]))
        self.assertEqual(
            ['4', '5'], [c.get('index') for c in doc.findall(
                './devices/controller[@index]')])

    def test_no_guest_cell_on_the_node(self):
        guest = numa_guest(cell_on_node={0: 0})
        self.assertEqual([], numa.place(guest, self._hostdevs([1, None])))

    def test_guest_without_numa(self):
        guest = numa_guest()
        guest.numatune = None
        hostdevs = self._hostdevs([0])
        self.assertEqual([], numa.place(guest, hostdevs))
        self.assertIsNone(hostdevs[0][0][0].find('address'))


def hook_driver():
    """An ``accel.LibvirtDriver`` for its guest-config hook alone, whose
    host's node devices are all on NUMA node 1."""
    drv = object.__new__(driver.LibvirtDriver)
    drv._host = mock.Mock()
    drv._host.device_lookup_by_name.side_effect = (
        lambda name: mock.Mock(XMLDesc=mock.Mock(
            return_value=NODEDEV % {'name': name, 'node': 1})))
    return drv


class DriverHookTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.drv = hook_driver()

    def test_numa_guest(self):
        guest = numa_guest()
        self.drv._guest_add_accel_pci_devices(
            guest, [base.PCI_ARQ, base.TEST_PCI_ARQ])
        self.drv._host.device_lookup_by_name.assert_called_once_with(
            'pci_0000_af_00_0')
        doc = define(self, guest.to_xml())
        self.assertEqual('0', doc.findtext(
            './devices/controller[@model="pcie-expander-bus"]/target/node'))
        port = doc.find('./devices/controller[@model="pcie-root-port"]')
        self.assertEqual(
            port.get('index'),
            str(int(doc.find('./devices/hostdev/address').get('bus'), 16)))

    def test_plain_guest_asks_libvirt_nothing(self):
        guest = numa_guest()
        guest.cpu.numa = None
        guest.numatune = None
        self.drv._guest_add_accel_pci_devices(guest, [base.PCI_ARQ])
        self.drv._host.device_lookup_by_name.assert_not_called()
        self.assertEqual(['hostdev'], [d.root_name for d in guest.devices])

    def test_disabled(self):
        self.flags(guest_numa_affinity=False, group='nova_accel')
        guest = numa_guest()
        self.drv._guest_add_accel_pci_devices(guest, [base.PCI_ARQ])
        self.drv._host.device_lookup_by_name.assert_not_called()
        self.assertEqual(['hostdev'], [d.root_name for d in guest.devices])
