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

"""Discovery drivers over recorded sysfs trees: nvidia_gpu, fpga, mdev,
fake; NUMA traits, health and pci.ids names (Nova PCI coexistence:
``test_nova_pci``)."""

import json
import os
import shutil

import fixtures
import testtools

from accel_backend.discovery import drivers
from accel_backend.discovery.drivers import base as drv_base
from accel_backend.discovery import pci_ids
from accel_backend.discovery import sysfs
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
        from accel_backend.discovery.drivers import fpga
        self.assertRaises(ValueError, fpga.FPGADriver, conf)

    def test_gpu_tree_has_no_fpga(self):
        self.assertEqual([], load(self, 'fpga', base.GPU_SERVER).discover())

    def test_default_ids_are_the_known_cards(self):
        from accel_backend.discovery.drivers import fpga
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


class TestMdev(testtools.TestCase):

    def test_one_type_per_gpu(self):
        # Several types enabled without device_addresses: the first one
        # is every GPU's type (Nova's [devices] enabled_mdev_types rule).
        found = load(self, 'mdev', base.MDEV_GPU, discovery={
            'mdev_types': 'nvidia-223,nvidia-222'}).discover()
        self.assertEqual([('0000:41:00.0', 'nvidia-223')],
                         [(d.address, d.subname) for d in found])
        (dep,) = found
        # Capacity = available_instances + mdevs that exist already.
        self.assertEqual(8, len(dep.attach_handles))
        self.assertEqual(('VGPU', 'GPU', 'mdev'),
                         (dep.resource_class, dep.device_type,
                          dep.driver_name))
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_MDEV_NVIDIA_223',
                          'CUSTOM_PCI_VENDOR_10DE',
                          'CUSTOM_PCI_PRODUCT_10DE_1EB8',
                          'CUSTOM_NUMA_NODE_0'}, dep.traits)
        kind, info = dep.attach_handles[0]
        self.assertEqual('MDEV', kind)
        self.assertEqual({'parent': '0000:41:00.0',
                          'asked_type': 'nvidia-223',
                          'vgpu_mark': 'nvidia-223_0', 'domain': '0000',
                          'bus': '41', 'device': '00', 'function': '0'},
                         info)
        self.assertEqual(
            {'nvidia-222': {'name': 'GRID T4-1B', 'device_api': 'vfio-pci'},
             'nvidia-223': {'name': 'GRID T4-2B', 'device_api': 'vfio-pci'},
             'nvidia-230': {'name': 'GRID T4-16Q',
                            'device_api': 'vfio-pci'}},
            dep.std_board_info['mdev_types'])

    def test_type_filter_and_custom_rc(self):
        found = load(self, 'mdev', base.MDEV_GPU, discovery={
            'mdev_types': 'nvidia-222',
            'mdev_resource_class': 'CUSTOM_T4_1B'}).discover()
        self.assertEqual([('nvidia-222', 'CUSTOM_T4_1B')],
                         [(d.subname, d.resource_class) for d in found])

    def test_reader(self):
        types = sysfs.mdev_types(base.MDEV_GPU, '0000:41:00.0')
        self.assertEqual([('nvidia-222', 16, 0), ('nvidia-223', 7, 1),
                          ('nvidia-230', 0, 0)],
                         [(t.type_id, t.available_instances, t.created)
                          for t in types])
        self.assertEqual([], sysfs.mdev_types(base.MDEV_GPU,
                                              '0000:00:00.0'))

    def test_flr_refused(self):
        self.assertRaises(ValueError, load, self, 'mdev', base.MDEV_GPU,
                          cleaning={'methods': 'mdev:flr'})

    def test_no_mdev_capable_function(self):
        self.assertEqual([], load(self, 'mdev', base.TWO_GPUS).discover())


class TestFake(testtools.TestCase):

    def test_like_cyborgs_fake_driver(self):
        (dep,) = load(self, 'fake', base.TWO_GPUS,
                      DEFAULT={'host': 'node9'}).discover()
        self.assertEqual('node9_FakeDevice', dep.deployable_name)
        self.assertEqual(('FPGA', 16), (dep.resource_class,
                                        len(dep.attach_handles)))
        self.assertEqual({'TEST_PCI'}, {h[0] for h in dep.attach_handles})
        self.assertIn('CUSTOM_FAKE_DEVICE', dep.traits)
        # Every handle is distinct (a key of its own).
        self.assertEqual(16, len({json.dumps(h[1], sort_keys=True)
                                  for h in dep.attach_handles}))

    def test_total_configurable(self):
        (dep,) = load(self, 'fake', base.TWO_GPUS,
                      discovery={'fake_total': '40'}).discover()
        self.assertEqual(40, len({json.dumps(h[1], sort_keys=True)
                                  for h in dep.attach_handles}))


class TestDiscoverAll(testtools.TestCase):

    def test_first_driver_wins_a_shared_device(self):
        logger = self.useFixture(fixtures.FakeLogger())
        conf = base.make_conf(self, base.TWO_GPUS, (base.T4_SPEC,),
                              discovery={'enabled_drivers':
                                         'nvidia_gpu,generic_pci'})
        found = drivers.discover_all(
            drivers.load(conf, conf.discovery.enabled_drivers))
        self.assertEqual({'nvidia_gpu'}, {d.driver_name for d in found})
        self.assertEqual(base.T4_ADDRESSES, [d.address for d in found])
        self.assertIn('keeping nvidia_gpu', logger.output)


class TestHealth(testtools.TestCase):

    def test_fatal_aer_count_goes_to_board_info(self):
        # The driver reports the count; discovery.aer judges new errors
        # against the previous pass (host_sync).
        root = copy_tree(self, base.GPU_SERVER)
        with open(os.path.join(root, '0000:ca:00.0', 'aer_dev_fatal'),
                  'w') as f:
            f.write(sysfs_tree.aer_fatal_text(2))
        found = {d.address: d for d in load(
            self, 'nvidia_gpu', root).discover()}
        self.assertEqual(2, found['0000:ca:00.0'].std_board_info[
            'aer_dev_fatal'])
        self.assertEqual(0, found['0000:17:00.0'].std_board_info[
            'aer_dev_fatal'])

    def test_check_can_be_turned_off(self):
        root = copy_tree(self, base.GPU_SERVER)
        with open(os.path.join(root, '0000:ca:00.0', 'aer_dev_fatal'),
                  'w') as f:
            f.write(sysfs_tree.aer_fatal_text(2))
        found = load(self, 'nvidia_gpu', root,
                     discovery={'health_check': 'false'}).discover()
        self.assertEqual({'healthy'}, {d.health for d in found})
        self.assertFalse([d for d in found
                          if 'aer_dev_fatal' in d.std_board_info])


class TestAERVerdict(testtools.TestCase):
    """``discovery.aer.verdict``: new errors, not totals, with recovery
    after quiet passes."""

    def passes(self, totals, recovery=3, first=None):
        """Run ``verdict`` over successive totals; returns the reasons
        (None: healthy)."""
        from accel_backend.discovery import aer
        previous, out = first, []
        for total in totals:
            current = {'aer_dev_fatal': total}
            out.append(aer.verdict(previous, current, recovery))
            previous = current
        return out

    def test_old_errors_count_at_first_sight_then_recover(self):
        got = self.passes([2, 2, 2, 2])
        self.assertIn('2 new fatal PCIe AER errors', got[0])
        self.assertIn('recovering: 1 of 3', got[1])
        self.assertIn('recovering: 2 of 3', got[2])
        self.assertIsNone(got[3])

    def test_never_any_error(self):
        self.assertEqual([None] * 3, self.passes([0, 0, 0]))

    def test_new_error_while_recovering_starts_over(self):
        got = self.passes([0, 1, 1, 3, 3, 3, 3], recovery=2)
        self.assertIsNone(got[0])
        self.assertIn('1 new fatal', got[1])
        self.assertIn('recovering: 1 of 2', got[2])
        self.assertIn('2 new fatal', got[3])
        self.assertIn('recovering: 1 of 2', got[4])
        self.assertEqual([None, None], got[5:])

    def test_reboot_resets_the_count(self):
        got = self.passes([5, 5, 5, 5, 1], first={'aer_dev_fatal': 0})
        self.assertIsNone(got[3])
        self.assertIn('1 new fatal', got[4])

    def test_not_shown(self):
        from accel_backend.discovery import aer
        self.assertIsNone(aer.verdict({'aer_dev_fatal': 3}, {}, 3))

    def test_reset_function(self):
        root = copy_tree(self, base.GPU_SERVER)
        sysfs.reset_function(root, '0000:17:00.0')
        with open(os.path.join(root, '0000:17:00.0', 'reset')) as f:
            self.assertEqual('1', f.read())
        # Never creates the file: no reset support is an error.
        self.assertRaises(OSError, sysfs.reset_function, root,
                          '0000:00:00.0')
        self.assertFalse(os.path.exists(
            os.path.join(root, '0000:00:00.0', 'reset')))
        self.assertRaises(OSError, sysfs.reset_function, root,
                          '../../etc')


class TestFellOffTheBus(testtools.TestCase):
    """A function whose config space reads all ones (the recorded
    ``gpu-server`` tree with a ``config`` file written as the kernel shows
    it: 256 bytes for a conventional read, 0xff when nothing answers)."""

    def setUp(self):
        super().setUp()
        self.root = copy_tree(self, base.GPU_SERVER)
        self.gpu = '0000:17:00.0'

    def write_config(self, head):
        with open(os.path.join(self.root, self.gpu, 'config'), 'wb') as f:
            f.write(head + b'\x00' * (256 - len(head)))

    def health(self):
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        return dep.health, dep.health_reason

    def test_all_ones_is_gone(self):
        self.write_config(b'\xff' * 4)
        health, reason = self.health()
        self.assertEqual('unhealthy', health)
        self.assertIn('0xffffffff: it fell off the bus', reason)

    def test_real_ids_are_present(self):
        self.write_config(b'\xde\x10\xb8\x1e')   # 10de:1eb8, little end.
        self.assertEqual(('healthy', None), self.health())


class TestLink(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.root = copy_tree(self, base.GPU_SERVER)
        self.gpu = '0000:17:00.0'

    def link(self, speed, width, max_speed='16.0 GT/s PCIe',
             max_width='16'):
        for name, text in (('current_link_speed', speed),
                           ('current_link_width', width),
                           ('max_link_speed', max_speed),
                           ('max_link_width', max_width)):
            with open(os.path.join(self.root, self.gpu, name), 'w') as f:
                f.write(text + '\n')
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        return dep.std_board_info['link']

    def test_full_link(self):
        self.assertEqual('16.0 GT/s PCIe x16',
                         self.link('16.0 GT/s PCIe', '16'))
        self.assertNotIn('trained', self.logger.output)

    def test_idle_speed_shown_not_warned(self):
        self.assertEqual('2.5 GT/s PCIe x16 (max 16.0 GT/s PCIe x16)',
                         self.link('2.5 GT/s PCIe', '16'))
        self.assertNotIn('trained', self.logger.output)

    def test_narrow_link_warned(self):
        self.assertEqual('16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)',
                         self.link('16.0 GT/s PCIe', '8'))
        self.assertIn('the PCIe link of %s trained narrower than its '
                      'maximum: x8, not x16' % self.gpu, self.logger.output)

    def test_no_link_files(self):
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        self.assertNotIn('link', dep.std_board_info)


class TestResetMethods(testtools.TestCase):
    """Cleaning follows what the kernel offers (``sysfs.reset_methods``):
    ``flr`` on a function without a reset method would fail after every
    tenant and lock the GPU out."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.root = copy_tree(self, base.GPU_SERVER)
        self.gpu = '0000:17:00.0'

    def write(self, name, text):
        with open(os.path.join(self.root, self.gpu, name), 'w') as f:
            f.write(text)

    def discover(self):
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        return dep

    def test_methods_named_by_the_kernel(self):
        self.write('reset_method', 'flr bus\n')
        dep = self.discover()
        self.assertEqual(('flr', 'flr bus'),
                         (dep.cleaning, dep.std_board_info['reset_method']))

    def test_kernel_before_5_15_names_no_method(self):
        dep = self.discover()
        self.assertEqual(('flr', 'reset'),
                         (dep.cleaning, dep.std_board_info['reset_method']))

    def test_no_reset_means_no_flr(self):
        os.unlink(os.path.join(self.root, self.gpu, 'reset'))
        dep = self.discover()
        self.assertEqual(('none', 'none'),
                         (dep.cleaning, dep.std_board_info['reset_method']))
        self.assertIn('the kernel offers no reset for %s' % self.gpu,
                      self.logger.output)
        # The other GPUs keep flr.
        others = {d.cleaning for d in load(
            self, 'nvidia_gpu', self.root).discover()
            if d.address != self.gpu}
        self.assertEqual({'flr'}, others)

    def test_command_is_kept_without_a_reset(self):
        os.unlink(os.path.join(self.root, self.gpu, 'reset'))
        (dep,) = [d for d in load(
            self, 'nvidia_gpu', self.root,
            cleaning={'methods': 'nvidia_gpu:command'}).discover()
            if d.address == self.gpu]
        self.assertEqual('command', dep.cleaning)


class TestNumaTrait(testtools.TestCase):

    def test_name(self):
        self.assertEqual('CUSTOM_NUMA_NODE_3', drv_base.numa_trait(3))
        self.assertIsNone(drv_base.numa_trait(None))
