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

"""Discovery drivers over recorded sysfs trees: nvidia_gpu, fpga, NUMA
traits and pci.ids names (mdev and fake: ``test_drivers_mdev``; health:
``test_drivers_health``; Nova PCI coexistence: ``test_nova_pci``)."""

import os
import shutil

import fixtures
import testtools

from accel_backend.agent.discovery import drivers
from accel_backend.agent.discovery.drivers import base as drv_base
from accel_backend.agent.discovery import pci_ids
from tests.unit.accel_backend import base
from tests.unit.accel_backend import sysfs_tree

A100S = ['0000:17:00.0', '0000:65:00.0', '0000:ca:00.0', '0000:e3:00.0']
PCI_IDS = """\
# a few lines in pci.ids format
10de  NVIDIA Corporation
\t1eb8  TU104GL [Tesla T4]
\t\t10de 12a2  T4 16GB
\t20b5  GA100 [A100 PCIe 80GB]
\t2bad  GB999 [Imaginary X1]
10ee  Xilinx Corporation
\t5004  Alveo U250 XDMA Platform
C 03  Display controller
\t02  3D controller
"""


def load(test, name, root, specs=(), **groups):
    conf = base.make_conf(test, root, specs, **groups)
    (drv,) = drivers.load(conf, [name])
    return drv


def copy_tree(test, root):
    dst = os.path.join(test.useFixture(fixtures.TempDir()).path, 'sysfs')
    shutil.copytree(root, dst, symlinks=True)
    return dst


class TestNvidiaGPU(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())

    def test_four_gpus_vfs_and_vga_bmc(self):
        found = load(self, 'nvidia_gpu', base.GPU_SERVER).discover()
        # VFs skipped; the ASPEED VGA is no NVIDIA; the NIC no GPU.
        self.assertEqual(A100S, [d.address for d in found])
        gpu = found[0]
        self.assertEqual(('GPU', 'PGPU', 'nvidia_gpu', 'flr'),
                         (gpu.device_type, gpu.resource_class,
                          gpu.driver_name, gpu.cleaning))
        self.assertEqual('NVIDIA Corporation GA100 [A100 PCIe 80GB]',
                         gpu.model)
        self.assertEqual([('PCI', {'domain': '0000', 'bus': '17',
                                   'device': '00', 'function': '0'})],
                         gpu.attach_handles)
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_NVIDIA_A100_PCIE_80GB',
                          'CUSTOM_PCI_VENDOR_10DE',
                          'CUSTOM_PCI_PRODUCT_10DE_20B5',
                          'CUSTOM_NUMA_NODE_0'}, gpu.traits)

    def test_numa_node_trait_and_board_info(self):
        found = load(self, 'nvidia_gpu', base.GPU_SERVER).discover()
        numa = {d.address: d.std_board_info['numa_node'] for d in found}
        self.assertEqual(dict(zip(A100S, [0, 0, 1, 1])), numa)
        for dep in found:
            self.assertIn('CUSTOM_NUMA_NODE_%d' % numa[dep.address],
                          dep.traits)
            self.assertEqual(1, len([t for t in dep.traits
                                     if t.startswith('CUSTOM_NUMA_')]))

    def test_physical_slot_from_sysfs_slots(self):
        slots = os.path.join(os.path.dirname(base.FIXTURES),
                             'sysfs-slots', 'gpu-server')
        found = load(self, 'nvidia_gpu', base.GPU_SERVER,
                     discovery={'pci_slots_path': slots}).discover()
        self.assertEqual(
            {'0000:17:00.0': 'CPU1 SLOT2', '0000:65:00.0': '7',
             '0000:ca:00.0': 'CPU2 SLOT4', '0000:e3:00.0': None},
            {d.address: d.std_board_info.get('slot') for d in found})
        # Default: the slots beside the sysfs root, absent for the
        # recorded tree: no slot, no error.
        found = load(self, 'nvidia_gpu', base.GPU_SERVER).discover()
        self.assertEqual({None}, {d.std_board_info.get('slot')
                                  for d in found})

    def test_no_numa_no_trait(self):
        # Recorded: the H200 guest shows numa_node -1.
        (pf,) = load(self, 'nvidia_gpu', base.H200_VM).discover()
        self.assertIsNone(pf.std_board_info['numa_node'])
        self.assertFalse([t for t in pf.traits if 'NUMA' in t])

    def test_vfs_never_and_pfs_with_vfs_withheld(self):
        logger = self.useFixture(fixtures.FakeLogger())
        # The PF serves two VFs: neither it nor they are whole GPUs, and
        # the deprecated flag changes nothing.
        for flag in ('false', 'true'):
            self.assertEqual([], load(
                self, 'nvidia_gpu', base.SRIOV_GPU,
                discovery={'nvidia_include_vfs': flag}).discover())
        self.assertIn('nvidia_include_vfs is deprecated and ignored',
                      logger.output)
        self.assertIn('not offering 0000:81:00.0 as a whole GPU: its 2 '
                      'SR-IOV VFs are enabled', logger.output)
        # A100s in vGPU mode (VFs on, vGPU types on the VFs).
        self.assertEqual([], load(self, 'nvidia_gpu',
                                  base.A100_VGPU_VFS).discover())

    def test_pf_with_mdevs_withheld(self):
        # T4 0000:41:00.0 holds two vGPUs; 0000:c1:00.0 holds none.
        found = load(self, 'nvidia_gpu', base.T4_MDEV_IN_USE).discover()
        self.assertEqual(['0000:c1:00.0'], [d.address for d in found])

    def test_pci_ids_file_names_the_product(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'pci.ids')
        with open(path, 'w') as f:
            f.write(PCI_IDS)
        found = load(self, 'nvidia_gpu', base.TWO_GPUS,
                     discovery={'pci_ids_path': path}).discover()
        self.assertEqual('NVIDIA Corporation TU104GL [Tesla T4]',
                         found[0].model)
        self.assertIn('CUSTOM_NVIDIA_T4', found[0].traits)

    def test_pci_ids_without_the_product_keeps_the_builtin_name(self):
        # A system pci.ids that lacks an id does not erase what the
        # built-in table knows of it.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'pci.ids')
        with open(path, 'w') as f:
            f.write('10de  NVIDIA Corp.\n')
        drv = load(self, 'nvidia_gpu', base.TWO_GPUS,
                   discovery={'pci_ids_path': path})
        (dep, _) = drv.discover()
        self.assertIn('CUSTOM_NVIDIA_T4', dep.traits)
        # The file's vendor name wins, the table fills the device.
        self.assertEqual('NVIDIA Corp. TU104GL [Tesla T4]', dep.model)

    def test_unknown_product_falls_back_to_its_id(self):
        ids = pci_ids.PCIIds(os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'none.ids'))
        self.assertEqual('NVIDIA Corporation 10de:ffff',
                         ids.model('10de', 'ffff'))
        self.assertEqual('abcd:0001', ids.model('abcd', '0001'))


class TestPCIIds(testtools.TestCase):

    def test_parse(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'pci.ids')
        with open(path, 'w') as f:
            f.write(PCI_IDS)
        ids = pci_ids.PCIIds(path)
        self.assertEqual(path + ' + built-in', ids.source)
        # The built-in table fills what the file lacks.
        self.assertEqual('Intel FPGA Programmable Acceleration Card N3000',
                         ids.device_name('8086', '0b30'))
        self.assertEqual('Xilinx Corporation', ids.vendor_name('10ee'))
        self.assertEqual('GB999 [Imaginary X1]',
                         ids.device_name('10de', '2bad'))
        # Subsystem and class lines are not devices.
        self.assertIsNone(ids.device_name('10de', '12a2'))
        self.assertIsNone(ids.device_name('03', '02'))

    def test_builtin_when_not_installed(self):
        self.useFixture(fixtures.MockPatchObject(
            pci_ids, 'SEARCH_PATHS', ('/nonexistent/pci.ids',)))
        ids = pci_ids.PCIIds()
        self.assertEqual('built-in', ids.source)
        self.assertEqual('TU104GL [Tesla T4]',
                         ids.device_name('10de', '1eb8'))

    def test_product_token(self):
        for name, token in (('TU104GL [Tesla T4]', 'T4'),
                            ('GA100 [A100 PCIe 80GB]', 'A100_PCIE_80GB'),
                            ('GA107GL [A2 / A16]', 'A2_A16'),
                            ('GH100 [H100 PCIe]', 'H100_PCIE'),
                            ('Alveo U250 XDMA Platform',
                             'ALVEO_U250_XDMA_PLATFORM')):
            self.assertEqual(token, pci_ids.product_token(name))


class TestFPGA(testtools.TestCase):

    def test_only_user_functions_by_default(self):
        # The U250's management PF (10ee:5004) and the N3000's PF
        # (8086:0b30, its FPGA Management Engine) are left out.
        found = load(self, 'fpga', base.FPGA_CARD).discover()
        self.assertEqual(['0000:3b:00.1'], [d.address for d in found])
        self.assertIn('U250', found[0].model)

    def test_xilinx_and_intel(self):
        found = load(self, 'fpga', base.FPGA_CARD, discovery={
            'fpga_management_functions': 'true'}).discover()
        self.assertEqual(['0000:3b:00.0', '0000:3b:00.1', '0000:86:00.0'],
                         [d.address for d in found])
        u250, _, n3000 = found
        self.assertEqual(('FPGA', 'FPGA', 'flr'),
                         (u250.device_type, u250.resource_class,
                          u250.cleaning))
        self.assertIn('CUSTOM_FPGA_XILINX', u250.traits)
        self.assertIn('CUSTOM_NUMA_NODE_0', u250.traits)
        self.assertIn('CUSTOM_FPGA_INTEL', n3000.traits)
        self.assertIn('CUSTOM_NUMA_NODE_1', n3000.traits)
        self.assertEqual(1, n3000.std_board_info['numa_node'])
        self.assertIn('N3000', n3000.model)

    def test_configured_ids(self):
        found = load(self, 'fpga', base.FPGA_CARD,
                     discovery={'fpga_ids': '10ee:5005'}).discover()
        self.assertEqual(['0000:3b:00.1'], [d.address for d in found])

    def test_bad_id(self):
        conf = base.make_conf(self, base.FPGA_CARD,
                              discovery={'fpga_ids': '10ee'})
        from accel_backend.agent.discovery.drivers import fpga
        self.assertRaises(ValueError, fpga.FPGADriver, conf)

    def test_gpu_tree_has_no_fpga(self):
        self.assertEqual([], load(self, 'fpga', base.GPU_SERVER).discover())

    def test_default_ids_are_the_known_cards(self):
        from accel_backend.agent.discovery.drivers import fpga
        conf = base.make_conf(self, base.FPGA_CARD)
        self.assertEqual(fpga.DEFAULT_IDS,
                         sorted(conf.discovery.fpga_ids))

    def test_management_function_offered_with_a_warning(self):
        logger = self.useFixture(fixtures.FakeLogger())
        found = load(self, 'fpga', base.FPGA_CARD, discovery={
            'fpga_management_functions': 'true'}).discover()
        self.assertIn('0000:3b:00.0', [d.address for d in found])
        self.assertIn('Offering 0000:3b:00.0 (10ee:5004), the management '
                      'function of an Alveo U250', logger.output)


class TestUnknownXilinxCard(testtools.TestCase):
    """A Xilinx card we have no ids for (generated tree: the U250's tree
    plus a card whose two functions follow XRT's layout, PF0 management
    and PF1 user, with ids of no particular card, 10ee:50f0/50f1)."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.root = copy_tree(self, base.FPGA_CARD)
        for fn, product in (('0', '50f0'), ('1', '50f1')):
            sysfs_tree.write_function(
                self.root, '0000:af:00.%s' % fn, '10ee', product, '120000',
                iommu_group='90' + fn)

    def addresses(self, **discovery):
        return [d.address for d in load(
            self, 'fpga', self.root, discovery=discovery).discover()]

    def test_not_offered_by_default(self):
        self.assertEqual(['0000:3b:00.1'], self.addresses())

    def test_glob_offers_the_user_function_only(self):
        self.assertEqual(['0000:3b:00.1', '0000:af:00.1'],
                         self.addresses(fpga_ids='10ee:*'))
        self.assertNotIn('Offering', self.logger.output)

    def test_management_function_named_exactly(self):
        self.assertEqual(['0000:3b:00.1', '0000:af:00.0', '0000:af:00.1'],
                         self.addresses(fpga_ids='10ee:*,10ee:50f0'))
        self.assertIn('Offering 0000:af:00.0 (10ee:50f0), the management '
                      'function of a Xilinx card (function 0)',
                      self.logger.output)


class TestNumaTrait(testtools.TestCase):

    def test_name(self):
        self.assertEqual('CUSTOM_NUMA_NODE_3', drv_base.numa_trait(3))
        self.assertIsNone(drv_base.numa_trait(None))
