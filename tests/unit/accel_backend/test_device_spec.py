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

"""accel_backend.agent.discovery.device_spec: parsing and matching."""

import json

import testtools

from accel_backend.agent.discovery import device_spec
from accel_backend.agent.discovery import sysfs
from accel_backend import exception
from tests.unit.accel_backend import base


def _fn(address='0000:af:00.0', vendor='10de', product='1eb8',
        class_code='030200'):
    return sysfs.PCIFunction(address=address, vendor_id=vendor,
                             product_id=product, class_code=class_code)


class TestParse(testtools.TestCase):

    def _parse(self, **raw):
        return device_spec.parse(json.dumps(raw))

    def _bad(self, text):
        if not isinstance(text, str):
            text = json.dumps(text)
        return self.assertRaises(exception.DeviceSpecError,
                                 device_spec.parse, text)

    def test_defaults(self):
        spec = self._parse(vendor_id='10de', product_id='1eb8')
        self.assertEqual(device_spec.DeviceSpec(
            vendor_id='10de', product_id='1eb8', address=None,
            class_prefix=None, resource_class='PGPU', traits=(),
            device_type='GPU', attach_handle_type='PCI'), spec)

    def test_full(self):
        spec = self._parse(vendor_id='0x10DE', product_id='1EB8',
                           address='0000:af:*', **{
                               'class': '0x0302',
                               'resource_class': 'CUSTOM_T4',
                               'traits': ['CUSTOM_NVIDIA_T4',
                                          'HW_GPU_CUDA_SDK_V10_0'],
                               'device_type': 'AICHIP',
                               'attach_handle_type': 'TEST_PCI'})
        self.assertEqual('10de', spec.vendor_id)
        self.assertEqual('1eb8', spec.product_id)
        self.assertEqual('0000:af:*', spec.address)
        self.assertEqual('0302', spec.class_prefix)
        self.assertEqual('CUSTOM_T4', spec.resource_class)
        self.assertEqual(('CUSTOM_NVIDIA_T4', 'HW_GPU_CUDA_SDK_V10_0'),
                         spec.traits)
        self.assertEqual('AICHIP', spec.device_type)
        self.assertEqual('TEST_PCI', spec.attach_handle_type)

    def test_standard_resource_classes(self):
        for rc in ('PGPU', 'VGPU', 'FPGA'):
            self.assertEqual(rc, self._parse(vendor_id='10de',
                                             product_id='1eb8',
                                             resource_class=rc
                                             ).resource_class)

    def test_bad_json(self):
        e = self._bad('{"vendor_id": "10de",')
        self.assertEqual('accel.config.device_spec', e.code)
        self.assertIn('vendor_id', e.detail)
        self._bad('')

    def test_not_an_object(self):
        self._bad('["10de", "1eb8"]')
        self._bad('"10de:1eb8"')
        self._bad('null')

    def test_unknown_keys(self):
        e = self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                       'devname': 'eth0', 'physical_network': 'x'})
        self.assertIn("['devname', 'physical_network']", e.detail)

    def test_bad_ids(self):
        for vendor, product in (('10de', None), (None, '1eb8'),
                                ('10d', '1eb8'), ('10dex', '1eb8'),
                                ('10de', 'zzzz'), ('10de', '*'),
                                ('', '1eb8'), ('10de', '01eb8')):
            raw = {}
            if vendor is not None:
                raw['vendor_id'] = vendor
            if product is not None:
                raw['product_id'] = product
            self._bad(raw)

    def test_ids_must_be_strings(self):
        # JSON has no hex numbers: 4318 would silently become "4318".
        self._bad({'vendor_id': 4318, 'product_id': '1eb8'})
        self._bad({'vendor_id': '10de', 'product_id': ['1eb8']})

    def test_bad_resource_class(self):
        for rc in ('NOT_A_CLASS', 'custom_t4', 'CUSTOM_', 'CUSTOM_T-4', '',
                   'pgpu'):
            self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                       'resource_class': rc})

    def test_resource_class_must_be_string(self):
        for rc in (5, ['PGPU'], {'PGPU': 1}, None):
            self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                       'resource_class': rc})

    def test_bad_traits(self):
        for traits in (['NOT_A_TRAIT'], ['custom_x'], ['CUSTOM_NVIDIA_T4',
                                                       'CUSTOM_a'],
                       ['CUSTOM_']):
            e = self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                           'traits': traits})
            self.assertIn('bad traits', e.detail)

    def test_traits_must_be_a_list_of_strings(self):
        for traits in (5, 'CUSTOM_NVIDIA_T4', {'CUSTOM_X': 1}, [5], None):
            self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                       'traits': traits})

    def test_bad_device_type(self):
        for dtype in ('gpu', 'TPU', '', ['GPU'], 5):
            self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                       'device_type': dtype})

    def test_bad_attach_handle_type(self):
        for ahtype in ('MDEV', 'pci', ''):
            self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                       'attach_handle_type': ahtype})

    def test_address_and_class_must_be_strings(self):
        self._bad({'vendor_id': '10de', 'product_id': '1eb8', 'address': 5})
        self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                   'address': ['0000:af:00.0']})
        self._bad({'vendor_id': '10de', 'product_id': '1eb8',
                   'class': ['0302']})

    def test_parse_all(self):
        specs = device_spec.parse_all(
            [json.dumps(base.T4_SPEC),
             json.dumps({'vendor_id': '8086', 'product_id': '1572',
                         'device_type': 'NIC'})])
        self.assertEqual(['1eb8', '1572'], [s.product_id for s in specs])
        self.assertRaises(exception.DeviceSpecError, device_spec.parse_all,
                          [json.dumps(base.T4_SPEC), '{'])
        self.assertEqual([], device_spec.parse_all([]))


class TestMatches(testtools.TestCase):

    def _spec(self, **kw):
        raw = {'vendor_id': '10de', 'product_id': '1eb8'}
        raw.update(kw)
        return device_spec.parse(json.dumps(raw))

    def test_ids(self):
        spec = self._spec()
        self.assertTrue(spec.matches(_fn()))
        self.assertFalse(spec.matches(_fn(vendor='8086')))
        self.assertFalse(spec.matches(_fn(product='1eb9')))

    def test_address_glob(self):
        spec = self._spec(address='0000:af:*')
        self.assertTrue(spec.matches(_fn('0000:af:00.0')))
        self.assertTrue(spec.matches(_fn('0000:af:01.3')))
        self.assertFalse(spec.matches(_fn('0000:d8:00.0')))
        exact = self._spec(address='0000:d8:00.0')
        self.assertTrue(exact.matches(_fn('0000:d8:00.0')))
        self.assertFalse(exact.matches(_fn('0000:d8:00.1')))
        funcs = self._spec(address='0000:*:00.[01]')
        self.assertTrue(funcs.matches(_fn('0000:3b:00.1')))
        self.assertFalse(funcs.matches(_fn('0000:3b:00.2')))

    def test_class_prefix(self):
        self.assertTrue(self._spec(**{'class': '03'}).matches(_fn()))
        self.assertTrue(self._spec(**{'class': '0302'}).matches(_fn()))
        self.assertTrue(self._spec(**{'class': '0x030200'}).matches(_fn()))
        self.assertFalse(self._spec(**{'class': '0300'}).matches(_fn()))
        self.assertFalse(self._spec(**{'class': '0302'}).matches(
            _fn(class_code='120000')))

    def test_against_recorded_tree(self):
        fns = sysfs.scan(base.TWO_GPUS)
        spec = self._spec()
        self.assertEqual(base.T4_ADDRESSES,
                         [fn.address for fn in fns if spec.matches(fn)])
        one = self._spec(address='0000:d8:*', **{'class': '0302'})
        self.assertEqual(['0000:d8:00.0'],
                         [fn.address for fn in fns if one.matches(fn)])


class TestValidators(testtools.TestCase):

    def test_valid_trait(self):
        self.assertTrue(device_spec.valid_trait('OWNER_CYBORG'))
        self.assertTrue(device_spec.valid_trait('CUSTOM_PCI_VENDOR_10DE'))
        self.assertFalse(device_spec.valid_trait('OWNER_NOBODY'))

    def test_valid_resource_class(self):
        self.assertTrue(device_spec.valid_resource_class('PGPU'))
        self.assertTrue(device_spec.valid_resource_class('CUSTOM_GPU_T4'))
        self.assertFalse(device_spec.valid_resource_class('GPU'))
