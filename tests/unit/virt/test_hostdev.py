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

"""Tests for nova_accel.virt.hostdev: composition and libvirt validation."""

import copy

from lxml import etree

from nova_accel.virt import exception
from nova_accel.virt import hostdev
from tests.unit.virt import base


def _pci(**info):
    arq = copy.deepcopy(base.PCI_ARQ)
    arq['attach_handle_info'].update(info)
    return arq


class ComposePCITest(base.TestCase, base.LibvirtSchemaMixin):

    def test_pci(self):
        elem = hostdev.compose_hostdev(base.PCI_ARQ)
        self.assertEqual('hostdev', elem.tag)
        self.assertEqual({'mode': 'subsystem', 'type': 'pci',
                          'managed': 'yes'}, dict(elem.attrib))
        addr = elem.find('./source/address')
        self.assertEqual({'domain': '0x0000', 'bus': '0xaf', 'slot': '0x00',
                          'function': '0x0'}, dict(addr.attrib))
        defined = self.assertLibvirtAccepts([hostdev.to_string(elem)])
        self.assertEqual(1, len(defined))
        self.assertEqual('0xaf', defined[0].find('./source/address')
                         .get('bus'))

    def test_pci_upper_bounds_and_0x_prefix(self):
        elem = hostdev.compose_hostdev(_pci(domain='0xFFFF', bus='0xff',
                                            device='1F', function='7'))
        self.assertEqual({'domain': '0xffff', 'bus': '0xff', 'slot': '0x1f',
                          'function': '0x7'},
                         dict(elem.find('./source/address').attrib))
        self.assertLibvirtAccepts([hostdev.to_string(elem)])

    def test_pci_unmanaged(self):
        # A function the host keeps on its own driver (an NVIDIA VF with
        # a vGPU of the vendor-specific VFIO framework).
        elem = hostdev.compose_hostdev(_pci(managed='no'))
        self.assertEqual('no', elem.get('managed'))
        self.assertLibvirtAccepts([hostdev.to_string(elem)])
        self.assertEqual('yes', hostdev.compose_hostdev(
            _pci(managed='yes')).get('managed'))

    def test_pci_managed_must_be_yes_or_no(self):
        self.assertRaises(exception.InvalidAttachHandle,
                          hostdev.compose_hostdev, _pci(managed='false'))

    def test_pci_short_fields_are_zero_padded(self):
        elem = hostdev.compose_hostdev(_pci(domain='0', bus='3', device='2'))
        self.assertEqual({'domain': '0x0000', 'bus': '0x03', 'slot': '0x02',
                          'function': '0x0'},
                         dict(elem.find('./source/address').attrib))
        self.assertLibvirtAccepts([hostdev.to_string(elem)])

    def _assert_invalid(self, arq, *fragments):
        exc = self.assertRaises(exception.InvalidAttachHandle,
                                hostdev.compose_hostdev, arq)
        self.assertEqual(arq.get('uuid'), exc.arq_uuid)
        for fragment in fragments:
            self.assertIn(fragment, str(exc))
        return exc

    def test_bad_addresses(self):
        cases = [
            ({'device': '20'}, 'device', 'out of range'),
            ({'function': '8'}, 'function', 'out of range'),
            ({'bus': '100'}, 'bus', 'at most 2'),
            ({'domain': '10000'}, 'domain', 'at most 4'),
            ({'bus': 'zz'}, 'bus', 'not a hexadecimal'),
            ({'bus': ''}, 'bus', 'not a hexadecimal'),
            ({'function': '-1'}, 'function', 'not a hexadecimal'),
            ({'function': 0}, 'function', 'hexadecimal string'),
        ]
        for info, *fragments in cases:
            self._assert_invalid(_pci(**info), *fragments)

    def test_missing_field(self):
        arq = _pci()
        del arq['attach_handle_info']['function']
        self._assert_invalid(arq, "no 'function'")

    def test_missing_info(self):
        arq = dict(base.PCI_ARQ, attach_handle_info=None)
        self._assert_invalid(arq, 'must be a dict')

    def test_libvirt_rejects_what_the_composer_refuses(self):
        # The validation used above can fail: a hand-written hostdev with
        # slot 0x20 (the range compose_hostdev refuses) is rejected.
        elem = hostdev.compose_hostdev(base.PCI_ARQ)
        elem.find('./source/address').set('slot', '0x20')
        exc = self.assertLibvirtRejects([hostdev.to_string(elem)])
        self.assertIn('schema', str(exc))

    def test_libvirt_rejects_broken_hostdev(self):
        elem = hostdev.compose_hostdev(base.PCI_ARQ)
        elem.set('managed', 'maybe')
        self.assertLibvirtRejects([hostdev.to_string(elem)])


class ComposeMDEVTest(base.TestCase, base.LibvirtSchemaMixin):

    def test_mdev(self):
        elem = hostdev.compose_hostdev(base.MDEV_ARQ)
        # Written by Nova's LibvirtConfigGuestHostdevMDEV, which says
        # managed='no' for mediated devices.
        self.assertEqual({'mode': 'subsystem', 'type': 'mdev',
                          'managed': 'no', 'model': 'vfio-pci'},
                         dict(elem.attrib))
        self.assertEqual({'uuid': base.MDEV_UUID},
                         dict(elem.find('./source/address').attrib))
        defined = self.assertLibvirtAccepts([hostdev.to_string(elem)])
        self.assertEqual(base.MDEV_UUID,
                         defined[0].find('./source/address').get('uuid'))

    def test_mdev_uuid_normalised(self):
        arq = dict(base.MDEV_ARQ,
                   attach_handle_uuid=base.MDEV_UUID.upper().replace('-', ''))
        elem = hostdev.compose_hostdev(arq)
        self.assertEqual(base.MDEV_UUID,
                         elem.find('./source/address').get('uuid'))
        self.assertLibvirtAccepts([hostdev.to_string(elem)])

    def test_mdev_bad_uuid(self):
        for bad in ('not-a-uuid', None, '', 42):
            arq = dict(base.MDEV_ARQ, attach_handle_uuid=bad)
            self.assertRaises(exception.InvalidAttachHandle,
                              hostdev.compose_hostdev, arq)

    def test_libvirt_rejects_bad_mdev_uuid(self):
        elem = hostdev.compose_hostdev(base.MDEV_ARQ)
        elem.find('./source/address').set('uuid', 'not-a-uuid')
        self.assertLibvirtRejects([hostdev.to_string(elem)])


class ComposeTypesTest(base.TestCase, base.LibvirtSchemaMixin):

    def test_test_pci_ignored_by_default(self):
        with self.assertLogs('nova_accel.virt.hostdev', 'INFO') as logs:
            self.assertIsNone(hostdev.compose_hostdev(base.TEST_PCI_ARQ))
        self.assertIn(base.TEST_PCI_ARQ['uuid'], logs.output[0])
        self.assertIn('TEST_PCI', logs.output[0])

    def test_ignored_types_from_config(self):
        self.flags(group='nova_accel', ignored_attach_handle_types=['PCI'])
        self.assertIsNone(hostdev.compose_hostdev(base.PCI_ARQ))
        # TEST_PCI is no longer ignored, and it is no type we compose.
        self.assertRaises(exception.InvalidAttachHandle,
                          hostdev.compose_hostdev, base.TEST_PCI_ARQ)

    def test_unknown_type(self):
        for ah_type in ('NVMe', 'pci', None):
            arq = dict(base.PCI_ARQ, attach_handle_type=ah_type)
            exc = self.assertRaises(exception.InvalidAttachHandle,
                                    hostdev.compose_hostdev, arq)
            self.assertIn('unsupported attach_handle_type', str(exc))

    def test_compose_hostdevs_mixed(self):
        elems = hostdev.compose_hostdevs(
            [base.PCI_ARQ, base.TEST_PCI_ARQ, base.MDEV_ARQ, base.PCI_ARQ_2])
        self.assertEqual(['pci', 'mdev', 'pci'],
                         [e.get('type') for e in elems])
        self.assertEqual('0x3b', elems[2].find('./source/address').get('bus'))
        defined = self.assertLibvirtAccepts(
            [hostdev.to_string(e) for e in elems])
        self.assertEqual(3, len(defined))

    def test_compose_hostdevs_empty(self):
        self.assertEqual([], hostdev.compose_hostdevs([]))
        self.assertEqual([], hostdev.compose_hostdevs(None))

    def test_compose_hostdevs_stops_at_bad_arq(self):
        bad = _pci(device='ff')
        self.assertRaises(exception.InvalidAttachHandle,
                          hostdev.compose_hostdevs, [base.PCI_ARQ, bad])

    def test_to_string(self):
        text = hostdev.to_string(hostdev.compose_hostdev(base.PCI_ARQ))
        self.assertIsInstance(text, str)
        self.assertTrue(text.startswith('<hostdev '), text)
        self.assertEqual(
            'pci', etree.fromstring(text).get('type'))
        self.assertLibvirtAccepts([text])


class HostdevConfigTest(base.TestCase, base.LibvirtSchemaMixin):

    def test_to_xml_and_copy(self):
        elem = hostdev.compose_hostdev(base.PCI_ARQ)
        cfg = hostdev.HostdevConfig(elem)
        self.assertEqual('hostdev', cfg.root_name)
        # Mutating the caller's element or a formatted copy changes nothing.
        elem.set('managed', 'no')
        cfg.format_dom().set('managed', 'no')
        parsed = etree.fromstring(cfg.to_xml())
        self.assertEqual('yes', parsed.get('managed'))
        self.assertIsNot(cfg.format_dom(), cfg.format_dom())
        self.assertLibvirtAccepts([cfg.to_xml(pretty_print=False)])

    def test_from_arq(self):
        self.assertIsNone(hostdev.HostdevConfig.from_arq(base.TEST_PCI_ARQ))
        cfg = hostdev.HostdevConfig.from_arq(base.MDEV_ARQ)
        self.assertIn(base.MDEV_UUID, cfg.to_xml())
        self.assertLibvirtAccepts([cfg.to_xml()])

    def test_rejects_non_hostdev(self):
        self.assertRaises(ValueError, hostdev.HostdevConfig,
                          etree.Element('disk'))
        self.assertRaises(ValueError, hostdev.HostdevConfig, None)
