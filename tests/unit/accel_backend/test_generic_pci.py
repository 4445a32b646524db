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

"""GenericPCIDriver over the recorded sysfs trees."""

import json

import testtools

from accel_backend.agent.discovery import drivers
from accel_backend.agent.discovery.drivers import generic_pci
from accel_backend import exception
from tests.unit.accel_backend import base


class TestGenericPCI(testtools.TestCase):

    def _discover(self, root=base.TWO_GPUS, specs=(base.T4_SPEC,)):
        return generic_pci.GenericPCIDriver(
            base.make_conf(self, root, specs)).discover()

    def test_two_t4s(self):
        found = self._discover()
        self.assertEqual(base.T4_ADDRESSES, [d.address for d in found])
        dep = found[0]
        self.assertEqual('GPU', dep.device_type)
        self.assertEqual(('10de', '1eb8'), (dep.vendor_id, dep.product_id))
        # generic_pci devices are named too (built-in table here).
        self.assertEqual('NVIDIA Corporation TU104GL [Tesla T4]', dep.model)
        self.assertEqual('generic_pci', dep.driver_name)
        self.assertEqual('PGPU', dep.resource_class)
        self.assertEqual(1, dep.numa_node)
        self.assertEqual([('PCI', {'domain': '0000', 'bus': 'af',
                                   'device': '00', 'function': '0'})],
                         dep.attach_handles)
        self.assertEqual({'class': '030200', 'iommu_group': '80',
                          'numa_node': 1, 'driver': 'vfio-pci',
                          'reset_method': 'none'},
                         dep.std_board_info)
        self.assertEqual(('none', 'healthy'), (dep.cleaning, dep.health))

    def test_traits(self):
        for dep in self._discover():
            self.assertEqual({'OWNER_CYBORG', 'CUSTOM_NVIDIA_T4',
                              'CUSTOM_PCI_VENDOR_10DE',
                              'CUSTOM_PCI_PRODUCT_10DE_1EB8',
                              'CUSTOM_NUMA_NODE_1'},
                             set(dep.traits))

    def test_unmanaged_spec_says_so_in_its_handles(self):
        spec = dict(base.T4_SPEC, managed='no')
        found = self._discover(specs=(spec,))
        self.assertEqual([('PCI', {'domain': '0000', 'bus': 'af',
                                   'device': '00', 'function': '0',
                                   'managed': 'no'})],
                         found[0].attach_handles)
        self.assertRaises(exception.DeviceSpecError, self._discover,
                          specs=(dict(base.T4_SPEC, managed=False),))

    def test_no_spec_no_device(self):
        self.assertEqual([], self._discover(specs=()))

    def test_spec_matching_nothing(self):
        self.assertEqual([], self._discover(
            specs=[{'vendor_id': '1002', 'product_id': '66a1'}]))

    def test_address_glob_selects_one(self):
        spec = dict(base.T4_SPEC, address='0000:d8:*')
        self.assertEqual(['0000:d8:00.0'],
                         [d.address for d in self._discover(specs=[spec])])

    def test_class_prefix(self):
        self.assertEqual(base.T4_ADDRESSES, [d.address for d in self._discover(
            specs=[dict(base.T4_SPEC, **{'class': '0302'})])])
        self.assertEqual([], self._discover(
            specs=[dict(base.T4_SPEC, **{'class': '0300'})]))

    def test_first_matching_spec_wins(self):
        specs = [dict(base.T4_SPEC, address='0000:af:*',
                      resource_class='CUSTOM_T4_A', traits=['CUSTOM_A']),
                 dict(base.T4_SPEC, resource_class='CUSTOM_T4_B',
                      traits=['CUSTOM_B'], attach_handle_type='TEST_PCI')]
        found = {d.address: d for d in self._discover(specs=specs)}
        self.assertEqual('CUSTOM_T4_A', found['0000:af:00.0'].resource_class)
        self.assertIn('CUSTOM_A', found['0000:af:00.0'].traits)
        self.assertEqual('CUSTOM_T4_B', found['0000:d8:00.0'].resource_class)
        self.assertNotIn('CUSTOM_A', found['0000:d8:00.0'].traits)
        self.assertEqual('TEST_PCI',
                         found['0000:d8:00.0'].attach_handles[0][0])

    def test_several_device_types(self):
        specs = [base.T4_SPEC,
                 {'vendor_id': '8086', 'product_id': '1572',
                  'device_type': 'NIC', 'resource_class': 'CUSTOM_NIC_X710'}]
        found = {d.address: d for d in self._discover(specs=specs)}
        self.assertEqual(['0000:3b:00.0'] + base.T4_ADDRESSES, sorted(found))
        nic = found['0000:3b:00.0']
        self.assertEqual(('NIC', 'CUSTOM_NIC_X710', 0),
                         (nic.device_type, nic.resource_class,
                          nic.numa_node))
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_PCI_VENDOR_8086',
                          'CUSTOM_PCI_PRODUCT_8086_1572',
                          'CUSTOM_NUMA_NODE_0'}, set(nic.traits))

    def test_sriov_vfs_and_their_pf_skipped(self):
        # The PF serves two VFs: neither is a whole function to assign.
        self.assertEqual([], self._discover(
            root=base.SRIOV_GPU,
            specs=[{'vendor_id': '10de', 'product_id': '20b5',
                    'traits': ['CUSTOM_NVIDIA_A100']}]))

    def test_recorded_gpu_board_info(self):
        (gpu,) = self._discover(
            root=base.H200_VM,
            specs=[{'vendor_id': '10de', 'product_id': '2335',
                    'traits': ['CUSTOM_NVIDIA_H200']}])
        self.assertIsNone(gpu.numa_node)
        self.assertEqual({'class': '030200', 'iommu_group': None,
                          'numa_node': None, 'driver': 'nvidia',
                          'reset_method': 'flr',
                          'link': '32.0 GT/s PCIe x16'},
                         gpu.std_board_info)
        self.assertFalse([t for t in gpu.traits if 'NUMA' in t])
        self.assertIn('CUSTOM_PCI_PRODUCT_10DE_2335', gpu.traits)

    def test_sriov_vfs_skipped_even_when_spec_names_them(self):
        found = self._discover(
            root=base.SRIOV_GPU,
            specs=[{'vendor_id': '10de', 'product_id': '20b5',
                    'address': '0000:81:00.[45]'}])
        self.assertEqual([], found)

    def test_bad_spec_fails_at_construction(self):
        self.assertRaises(exception.DeviceSpecError,
                          generic_pci.GenericPCIDriver,
                          base.make_conf(self,
                                         specs=['{"vendor_id": "10de"}']))
        self.assertRaises(exception.DeviceSpecError,
                          generic_pci.GenericPCIDriver,
                          base.make_conf(self, specs=[json.dumps(
                              dict(base.T4_SPEC, traits=['BOGUS']))]))

    def test_missing_root_is_refused(self):
        self.assertRaises(exception.SysfsRootUnavailable, self._discover,
                          root='/nonexistent/sysfs')

    def test_loaded_by_entry_point(self):
        conf = base.make_conf(self)
        loaded = drivers.load(conf, ['generic_pci'])
        self.assertEqual(1, len(loaded))
        self.assertIsInstance(loaded[0], generic_pci.GenericPCIDriver)
        self.assertEqual(base.T4_ADDRESSES,
                         [d.address for d in loaded[0].discover()])
