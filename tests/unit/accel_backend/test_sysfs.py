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

"""accel_backend.agent.discovery.sysfs against recorded sysfs trees."""

import os

import fixtures
import testtools

from accel_backend.agent.discovery import sysfs
from accel_backend import exception
from tests.unit.accel_backend import base


class TestScanTwoGPUs(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.fns = {fn.address: fn for fn in sysfs.scan(base.TWO_GPUS)}

    def test_every_function_sorted(self):
        self.assertEqual(
            ['0000:00:1f.0', '0000:3b:00.0', '0000:af:00.0', '0000:d8:00.0'],
            [fn.address for fn in sysfs.scan(base.TWO_GPUS)])

    def test_gpu_attributes(self):
        fn = self.fns['0000:af:00.0']
        self.assertEqual('10de', fn.vendor_id)
        self.assertEqual('1eb8', fn.product_id)
        self.assertEqual('030200', fn.class_code)
        self.assertEqual('10de', fn.subsystem_vendor_id)
        self.assertEqual('12a2', fn.subsystem_product_id)
        self.assertEqual(1, fn.numa_node)
        self.assertEqual('80', fn.iommu_group)
        self.assertEqual('vfio-pci', fn.driver)
        self.assertIsNone(fn.physfn)
        self.assertEqual('90', self.fns['0000:d8:00.0'].iommu_group)

    def test_nic_and_bridge(self):
        nic = self.fns['0000:3b:00.0']
        self.assertEqual(('8086', '1572', '020000'),
                         (nic.vendor_id, nic.product_id, nic.class_code))
        self.assertEqual('i40e', nic.driver)
        self.assertEqual(0, nic.numa_node)
        bridge = self.fns['0000:00:1f.0']
        self.assertIsNone(bridge.driver)
        self.assertEqual('10', bridge.iommu_group)
        self.assertEqual('060100', bridge.class_code)

    def test_address_parts(self):
        self.assertEqual(
            {'domain': '0000', 'bus': 'af', 'device': '00', 'function': '0'},
            self.fns['0000:af:00.0'].address_parts)
        self.assertEqual(
            {'domain': '0000', 'bus': '00', 'device': '1f', 'function': '0'},
            self.fns['0000:00:1f.0'].address_parts)

    def test_read_function_missing(self):
        self.assertIsNone(sysfs.read_function(base.TWO_GPUS, '0000:01:00.0'))


class TestScanSRIOV(testtools.TestCase):

    def test_vfs_have_physfn(self):
        fns = {fn.address: fn for fn in sysfs.scan(base.SRIOV_GPU)}
        self.assertEqual(['0000:81:00.0', '0000:81:00.4', '0000:81:00.5'],
                         sorted(fns))
        self.assertIsNone(fns['0000:81:00.0'].physfn)
        self.assertEqual('nvidia', fns['0000:81:00.0'].driver)
        for vf in ('0000:81:00.4', '0000:81:00.5'):
            self.assertEqual('0000:81:00.0', fns[vf].physfn)
            self.assertEqual('vfio-pci', fns[vf].driver)
            self.assertEqual(('10de', '20b5'),
                             (fns[vf].vendor_id, fns[vf].product_id))

    def test_numa_minus_one_is_none(self):
        for fn in sysfs.scan(base.SRIOV_GPU):
            self.assertIsNone(fn.numa_node)


class TestScanOddTrees(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def _write(self, address, **files):
        d = os.path.join(self.root, address)
        os.makedirs(d, exist_ok=True)
        for name, value in files.items():
            with open(os.path.join(d, name), 'w') as f:
                f.write(value + '\n')

    def test_missing_or_unreadable_root_is_refused(self):
        # Never "a host without devices": that would remove them all.
        for root in (os.path.join(self.root, 'nope'),
                     os.path.join(base.TWO_GPUS, '0000:af:00.0', 'vendor')):
            err = self.assertRaises(exception.SysfsRootUnavailable,
                                    sysfs.scan, root)
            self.assertIn(root, str(err))

    def test_dangling_symlink_root_is_refused(self):
        # The root exists as a name, its target does not (a bind mount or
        # a /sys path of a host that is gone).
        root = os.path.join(self.root, 'devices')
        os.symlink(os.path.join(self.root, 'gone'), root)
        err = self.assertRaises(exception.SysfsRootUnavailable,
                                sysfs.scan, root)
        self.assertIn('No such file or directory', str(err))

    def test_skips_non_addresses_and_unreadable(self):
        self._write('0000:02:00.0', vendor='0x10DE', device='0x1EB8',
                    **{'class': '0x30200'})
        self._write('0000:02:00.1')  # no vendor/device: not a function
        self._write('pci0000:00', vendor='0x8086', device='0x0001')
        self._write('0000:02:00.9', vendor='0x8086', device='0x0001')
        os.makedirs(os.path.join(self.root, '0000:02:00.1'), exist_ok=True)
        fns = sysfs.scan(self.root)
        self.assertEqual(['0000:02:00.0'], [fn.address for fn in fns])
        fn = fns[0]
        # Upper case and missing leading zeroes are normalised.
        self.assertEqual(('10de', '1eb8', '030200'),
                         (fn.vendor_id, fn.product_id, fn.class_code))
        self.assertIsNone(fn.numa_node)
        self.assertIsNone(fn.iommu_group)
        self.assertIsNone(fn.driver)
        self.assertIsNone(fn.subsystem_vendor_id)

    def test_garbage_numa_node(self):
        self._write('0000:02:00.0', vendor='0x10de', device='0x1eb8',
                    numa_node='x')
        self.assertIsNone(sysfs.scan(self.root)[0].numa_node)

    def test_symlinked_entries(self):
        # /sys/bus/pci/devices holds links into /sys/devices.
        real = os.path.join(self.root, 'devices', '0000:02:00.0')
        os.makedirs(real)
        for name, value in (('vendor', '0x10de'), ('device', '0x1eb8')):
            with open(os.path.join(real, name), 'w') as f:
                f.write(value)
        bus = os.path.join(self.root, 'bus')
        os.makedirs(bus)
        os.symlink('../devices/0000:02:00.0',
                   os.path.join(bus, '0000:02:00.0'))
        self.assertEqual(['0000:02:00.0'],
                         [fn.address for fn in sysfs.scan(bus)])
