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

"""Discovery drivers over recorded sysfs trees (``test_drivers``): mdev and
fake, and every loaded driver in one discovery pass."""

import json

import fixtures
import testtools

from accel_backend.agent.discovery import drivers
from accel_backend.agent.discovery import sysfs
from tests.unit.accel_backend import base
from tests.unit.accel_backend.test_drivers import load


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
                                         'nvidia_gpu,generic_pci',
                                         'nvidia_gpu_pool': 'false'})
        found = drivers.discover_all(
            drivers.load(conf, conf.discovery.enabled_drivers))
        self.assertEqual({'nvidia_gpu'}, {d.driver_name for d in found})
        self.assertEqual(base.T4_ADDRESSES, [d.address for d in found])
        self.assertIn('keeping nvidia_gpu', logger.output)
