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

"""A multi-function unit in one guest slot (``nova_accel.virt.hostdev``
``compose_unit``, ``nova_accel.virt.libvirt.slots`` and the driver
hook), each guest defined in libvirt's test driver, which validates it
against libvirt's schema and address rules."""

from nova_accel.virt import exception
from nova_accel.virt import hostdev
from tests.unit.virt import base
from tests.unit.virt import test_numa


def unit_arq(bus='01', functions='0,1', function='0', **info):
    return dict(base.PCI_ARQ, attach_handle_info=dict(
        {'domain': '0000', 'bus': bus, 'device': '00',
         'function': function, 'functions': functions}, **info))


def plain_guest(mach_type):
    guest = test_numa.numa_guest(mach_type=mach_type)
    guest.cpu.numa = None
    guest.numatune = None
    return guest


class UnitTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.drv = test_numa.hook_driver()

    def add(self, guest, arqs):
        self.drv._guest_add_accel_pci_devices(guest, arqs)
        return test_numa.define(self, guest.to_xml())

    @staticmethod
    def hostdevs(doc):
        """``[(host bus.slot.function, guest bus, slot, function,
        multifunction)]`` of the kept XML's hostdevs."""
        found = []
        for h in doc.findall('./devices/hostdev'):
            src, dst = h.find('source/address'), h.find('address')
            if dst is None:     # left to libvirt
                found.append(('%s.%s.%s' % (src.get('bus'), src.get('slot'),
                                            src.get('function')),))
                continue
            found.append(('%s.%s.%s' % (src.get('bus'), src.get('slot'),
                                        src.get('function')),
                          int(dst.get('bus'), 16), int(dst.get('slot'), 16),
                          int(dst.get('function'), 16),
                          dst.get('multifunction')))
        return found

    def test_q35_unit_on_a_root_port_of_its_own(self):
        doc = self.add(plain_guest('pc-q35-8.2'),
                       [unit_arq(), base.PCI_ARQ])
        (port,) = doc.findall('./devices/controller[@model="pcie-root-port"]')
        bus = int(port.get('index'))
        got = self.hostdevs(doc)
        self.assertEqual(
            [('0x01.0x00.0x0', bus, 0, 0, 'on'),
             ('0x01.0x00.0x1', bus, 0, 1, None)], got[:2])
        # The single function is left where libvirt puts it.
        self.assertEqual([('0xaf.0x00.0x0',)], got[2:])

    def test_pc_unit_on_a_bridge(self):
        doc = self.add(plain_guest('pc-i440fx-8.2'),
                       [unit_arq(), unit_arq(bus='41')])
        (bridge,) = doc.findall('./devices/controller[@model="pci-bridge"]')
        bus = int(bridge.get('index'))
        self.assertEqual(
            [('0x01.0x00.0x0', bus, 1, 0, 'on'),
             ('0x01.0x00.0x1', bus, 1, 1, None),
             ('0x41.0x00.0x0', bus, 2, 0, 'on'),
             ('0x41.0x00.0x1', bus, 2, 1, None)], self.hostdevs(doc))

    def test_numa_unit_on_its_cells_expander(self):
        doc = self.add(test_numa.numa_guest(), [unit_arq()])
        port = doc.find('./devices/controller[@model="pcie-root-port"]')
        self.assertEqual('0', doc.findtext(
            './devices/controller[@model="pcie-expander-bus"]/target/node'))
        bus = int(port.get('index'))
        self.assertEqual([('0x01.0x00.0x0', bus, 0, 0, 'on'),
                          ('0x01.0x00.0x1', bus, 0, 1, None)],
                         self.hostdevs(doc))

    def test_without_function_0_renumbered_from_0(self):
        doc = self.add(plain_guest('pc-q35-8.2'),
                       [unit_arq(functions='1,2', function='1')])
        self.assertEqual([(0, 'on'), (1, None)],
                         [(h[3], h[4]) for h in self.hostdevs(doc)])
        self.assertEqual(['0x01.0x00.0x1', '0x01.0x00.0x2'],
                         [h[0] for h in self.hostdevs(doc)])

    def test_managed_no_for_every_function(self):
        elems = hostdev.compose_unit(unit_arq(managed='no'))
        self.assertEqual(['no', 'no'], [e.get('managed') for e in elems])

    def test_bad_functions(self):
        for bad in ('x', '0,0', '2,3', '0,8', '', 7):
            self.assertRaises(exception.InvalidAttachHandle,
                              hostdev.compose_unit,
                              unit_arq(functions=bad))

    def test_a_unit_is_never_hot_plugged(self):
        e = self.assertRaises(exception.InvalidAttachHandle,
                              hostdev.compose_hostdevs, [unit_arq()])
        self.assertIn('cannot be hot-plugged', str(e))
        self.assertEqual(1, len(hostdev.compose_hostdevs([base.PCI_ARQ])))


#: An HGX H100 board (accel_backend's ``hgx-h100`` tree): eight GPUs and
#: four NVSwitches, each function alone in its slot.
BOARD = ['0000:%s:00.0' % b for b in (
    '05', '06', '07', '08', '18', '2a', '3a', '5d', '9a', 'ab', 'ba', 'db')]


def board_arq(addresses=','.join(BOARD), **info):
    return dict(base.PCI_ARQ, attach_handle_info=dict(
        {'domain': '0000', 'bus': '18', 'device': '00', 'function': '0',
         'addresses': addresses}, **info))


class BoardTest(UnitTest):
    """A unit of several host slots (an HGX board in full passthrough):
    one ``<hostdev>`` per function, each in a guest slot of its own."""

    @staticmethod
    def sources(doc):
        """Host addresses of the kept XML's hostdevs, as sysfs spells
        them."""
        found = []
        for h in doc.findall('./devices/hostdev/source/address'):
            found.append('%04x:%02x:%02x.%x' % tuple(
                int(h.get(k), 16)
                for k in ('domain', 'bus', 'slot', 'function')))
        return found

    def test_every_function_of_the_board_reaches_the_guest(self):
        doc = self.add(plain_guest('pc-q35-8.2'), [board_arq()])
        self.assertEqual(BOARD, self.sources(doc))
        self.assertEqual(12, len(doc.findall('./devices/hostdev')))
        self.assertEqual({'yes'}, {h.get('managed') for h in
                                   doc.findall('./devices/hostdev')})

    def test_each_slot_on_its_own_numa_cell(self):
        # Buses below 0x80 are on host node 0, the others on node 1.
        self.drv._host.device_lookup_by_name.side_effect = (
            lambda name: test_numa.mock.Mock(XMLDesc=test_numa.mock.Mock(
                return_value=test_numa.NODEDEV % {
                    'name': name,
                    'node': int(int(name.split('_')[2], 16) >= 0x80)})))
        guest = test_numa.numa_guest()
        doc = self.add(guest, [board_arq()])
        cells = test_numa.numa.guest_cells_by_host_node(guest)
        expander_cell = {
            c.get('index'): int(c.findtext('target/node')) for c in
            doc.findall('./devices/controller[@model="pcie-expander-bus"]')}
        port_cell = {}
        for port in doc.findall('./devices/controller'
                                '[@model="pcie-root-port"]'):
            at = port.find('address')
            expander = str(int(at.get('bus'), 16))
            if expander in expander_cell:
                port_cell[port.get('index')] = expander_cell[expander]
        got = {}
        for h in doc.findall('./devices/hostdev'):
            bus = h.find('source/address').get('bus')
            port = str(int(h.find('address').get('bus'), 16))
            got[bus] = port_cell[port]
        self.assertEqual(
            {'0x%s' % a[5:7]: cells[int(int(a[5:7], 16) >= 0x80)]
             for a in BOARD}, got)

    def test_bad_addresses(self):
        for bad in ('0000:05:00.0', 'x', '0000:18:00.0,0000:18:00.0', '',
                    7, '0000:18:00.0,0000:99:00.8'):
            self.assertRaises(exception.InvalidAttachHandle,
                              hostdev.compose_slots, board_arq(bad))

    def test_addresses_with_functions_refused(self):
        e = self.assertRaises(exception.InvalidAttachHandle,
                              hostdev.compose_slots,
                              board_arq(functions='0'))
        self.assertIn('both', str(e))

    def test_functions_of_one_slot_share_a_guest_slot(self):
        slots = hostdev.compose_slots(board_arq(
            '0000:18:00.0,0000:18:00.1,0000:2a:00.0'))
        self.assertEqual([2, 1], [len(s) for s in slots])

    def test_a_board_is_never_hot_plugged(self):
        e = self.assertRaises(exception.InvalidAttachHandle,
                              hostdev.compose_hostdevs, [board_arq()])
        self.assertIn('cannot be hot-plugged', str(e))
