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

"""PCI addresses in their three spellings (``accel_common.pci``)."""

import testtools

from accel_common import pci


class TestPCI(testtools.TestCase):

    def test_spellings_agree(self):
        addr = pci.parse('0000:af:1f.7')
        self.assertEqual((0, 0xaf, 0x1f, 7), addr)
        self.assertEqual('0000:af:1f.7', str(addr))
        self.assertEqual(addr, pci.from_fields('0x0000', '0xaf', '0x1f',
                                               '0x7'))
        self.assertEqual(addr, pci.from_handle_info(addr.handle_info()))
        self.assertEqual({'domain': '0000', 'bus': 'af', 'device': '1f',
                          'function': '7'}, addr.handle_info())
        self.assertEqual('pci_0000_af_1f_7', addr.nodedev_name())
        self.assertEqual([('domain', '0x0000'), ('bus', '0xaf'),
                          ('slot', '0x1f'), ('function', '0x7')],
                         addr.libvirt_attrs())

    def test_sysfs_spelling_refused(self):
        for text in ('0000:af:20.0', '0000:af:00.8', '000:af:00.0',
                     '0000:AF:00.0', '0000:af:00', None, 12):
            self.assertRaises(pci.InvalidAddress, pci.parse, text)

    def test_fields_refused(self):
        cases = [
            (('0x10000', '0', '0', '0'), 'PCI domain'),
            (('0', '0x100', '0', '0'), 'is not a hexadecimal number'),
            (('0', '0', '0x20', '0'), 'out of range (max 0x1f)'),
            (('0', '0', '0', '8'), 'out of range (max 0x7)'),
            (('0', 'zz', '0', '0'), 'PCI bus'),
            (('0', 0, '0', '0'), 'must be a hexadecimal string'),
        ]
        for fields, needle in cases:
            err = self.assertRaises(pci.InvalidAddress, pci.from_fields,
                                    *fields)
            self.assertIn(needle, str(err))

    def test_handle_info_refused(self):
        self.assertIn('has no \'device\'', str(self.assertRaises(
            pci.InvalidAddress, pci.from_handle_info,
            {'domain': '0', 'bus': '0', 'function': '0'})))
        self.assertIn('PCI device', str(self.assertRaises(
            pci.InvalidAddress, pci.from_handle_info,
            {'domain': '0', 'bus': '0', 'device': '20', 'function': '0'})))
        self.assertRaises(pci.InvalidAddress, pci.from_handle_info, None)
