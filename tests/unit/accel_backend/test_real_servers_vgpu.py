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

"""vGPU types of real servers, end to end (``test_real_servers``): a T4
whose types share the card and an A100 whose VFs carry the types, over
copies of recorded trees, reported to a real Placement."""

import os

from accel_backend.cmd import runner

from tests.unit.accel_backend import test_real_servers

RealServerTest = test_real_servers.RealServerTest
tree = test_real_servers.tree


class TestT4TypesAreNotSoldTwice(RealServerTest):
    """vGPU types of one T4 share it: one type per GPU."""

    TREE = tree('t4-mdev-in-use')
    DRIVERS = 'mdev'
    BUSY, FREE = '0000:41:00.0', '0000:c1:00.0'

    def conf_types(self):
        # Two types enabled; the GPU that runs T4-2B already keeps it.
        return dict(mdev_types='nvidia-222,nvidia-223', groups={
            'mdev_nvidia-223': {'device_addresses': self.BUSY}})

    def test_one_type_per_gpu_end_to_end(self):
        svc = self.report(**self.conf_types())
        self.assertEqual(['%s_nvidia-223' % self.BUSY,
                          '%s_nvidia-222' % self.FREE],
                         sorted(self.providers()))
        # Capacity: 6 more T4-2B + the 2 that exist; 16 T4-1B.
        self.assertEqual((8, 0, 8), self.inv('%s_nvidia-223' % self.BUSY,
                                             'VGPU'))
        self.assertEqual((16, 0, 16), self.inv('%s_nvidia-222' % self.FREE,
                                               'VGPU'))
        # A T4-1B allocated on the free card ...
        self.allocate('%s_nvidia-222' % self.FREE, 'VGPU')
        # ... leaves no T4-2B candidate on that card: only on the GPU
        # that already runs T4-2B.
        self.assertEqual(['%s_nvidia-223' % self.BUSY], self.candidates(
            'resources=VGPU:1&required=CUSTOM_MDEV_NVIDIA_223'))
        self.raw.put('/traits/CUSTOM_MDEV_NVIDIA_230')
        self.assertEqual([], self.candidates(
            'resources=VGPU:1&required=CUSTOM_MDEV_NVIDIA_230'))
        self.writes(svc)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))

    def test_an_address_for_two_types_stops_the_driver(self):
        conf = self.make_conf(mdev_types='nvidia-222,nvidia-223', groups={
            'mdev_nvidia-222': {'device_addresses': self.BUSY},
            'mdev_nvidia-223': {'device_addresses': self.BUSY}})
        self.assertIsNone(runner.build_or_refuse(conf, 'embedded',
                                                 'test'))
        self.assertIn('both list 0000:41:00.0', self.logger.output)

    def test_no_enabled_type_reports_nothing(self):
        self.report()
        self.assertEqual({}, self.providers())
        self.assertIn('enables no type', self.logger.output)

    def test_lost_capacity_that_is_allocated_is_kept_reserved(self):
        svc = self.report(mdev_types='nvidia-222')
        name = '%s_nvidia-222' % self.FREE
        self.assertEqual((16, 0, 16), self.inv(name, 'VGPU'))
        consumer = self.allocate(name, 'VGPU', 2)
        # Someone creates a T4-16Q on that card behind our back: the
        # kernel shows no T4-1B left.
        types = os.path.join(self.root, self.FREE, 'mdev_supported_types')
        with open(os.path.join(types, 'nvidia-222',
                               'available_instances'), 'w') as f:
            f.write('0\n')
        self.writes(svc)
        svc.discover_and_report()
        # Placement refused to drop the allocated inventory (inventory.
        # inuse): it is kept and reserved, not retried as a conflict.
        self.assertEqual((16, 16, 16), self.inv(name, 'VGPU'))
        self.assertEqual(2, len(self.writes(svc)))
        self.assertIn('still has allocations of VGPU', self.logger.output)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))
        # Freed: the inventory goes at the next report.
        self.raw.delete('/allocations/%s' % consumer)
        svc.discover_and_report()
        self.assertIsNone(self.inv(name, 'VGPU'))
        self.assertEqual(1, len(self.writes(svc)))


class TestA100TypesOnVFs(RealServerTest):
    """Ampere: one vGPU per VF, the GPU's maximum across its VFs."""

    TREE = tree('a100-vgpu-vfs')
    DRIVERS = 'mdev'
    FREE, FULL = '0000:ca:00.0', '0000:e3:00.0'

    def test_one_provider_per_gpu_capped_by_the_type(self):
        # A100D-80C: one per GPU, although all four VFs offer it.
        svc = self.report(mdev_types='nvidia-694')
        self.assertEqual(['%s_nvidia-694' % self.FREE,
                          '%s_nvidia-694' % self.FULL],
                         sorted(self.providers()))
        self.assertEqual((1, 0, 1), self.inv('%s_nvidia-694' % self.FREE,
                                             'VGPU'))
        # The other GPU is full of A100D-40C: nothing to offer.
        self.assertIsNone(self.inv('%s_nvidia-694' % self.FULL, 'VGPU'))
        handles = self.handles(svc, self.FREE)
        self.assertEqual([('0000:ca:00.4', 'nvidia-694')], handles)
        # Both GPUs get a provider and traits; only the free one an
        # inventory; 4 custom traits once.
        self.assertEqual({'create': 2, 'inventory': 1, 'traits': 2,
                          'new trait': 4}, self.write_kinds(svc))
        svc.discover_and_report()
        self.assertEqual({}, self.write_kinds(svc))

    def test_types_per_gpu_and_handles_on_vfs(self):
        svc = self.report(mdev_types='nvidia-692,nvidia-693', groups={
            'mdev_nvidia-693': {'device_addresses': self.FULL}})
        self.assertEqual((4, 0, 4), self.inv('%s_nvidia-692' % self.FREE,
                                             'VGPU'))
        self.assertEqual((2, 0, 2), self.inv('%s_nvidia-693' % self.FULL,
                                             'VGPU'))
        self.assertEqual(['0000:ca:00.%d' % i for i in range(4, 8)],
                         [p for p, _ in self.handles(svc, self.FREE)])
        # The two VFs that hold the GPU's A100D-40C vGPUs.
        self.assertEqual([('0000:e3:00.4', 'nvidia-693'),
                          ('0000:e3:00.5', 'nvidia-693')],
                         self.handles(svc, self.FULL))
        self.assertIn('CUSTOM_MDEV_NVIDIA_692', self.traits(
            self.providers()['%s_nvidia-692' % self.FREE]['uuid']))
        self.assertEqual({'CUSTOM_MDEV_NVIDIA_693', 'CUSTOM_NUMA_NODE_1',
                          'CUSTOM_PCI_VENDOR_10DE', 'OWNER_CYBORG',
                          'CUSTOM_PCI_PRODUCT_10DE_20B5'}, self.traits(
            self.providers()['%s_nvidia-693' % self.FULL]['uuid']))
        # Per GPU: create, inventory, traits; the second type's trait is
        # the fifth custom trait.
        self.assertEqual({'create': 2, 'inventory': 2, 'traits': 2,
                          'new trait': 5}, self.write_kinds(svc))
        svc.discover_and_report()
        self.assertEqual({}, self.write_kinds(svc))

    def test_unknown_maximum_is_not_guessed(self):
        for vf in range(4, 8):
            path = os.path.join(self.root, '0000:ca:00.%d' % vf,
                                'mdev_supported_types', 'nvidia-692',
                                'description')
            with open(path, 'w') as f:
                f.write('num_heads=1, framebuffer=20480M\n')
        self.report(mdev_types='nvidia-692')
        self.assertNotIn('%s_nvidia-692' % self.FREE, self.providers())
        self.assertIn('neither [mdev_nvidia-692] max_instances',
                      self.logger.output)
        # The operator says it.
        self.report(mdev_types='nvidia-692', groups={
            'mdev_nvidia-692': {'max_instances': '3'}})
        self.assertEqual((3, 0, 3), self.inv('%s_nvidia-692' % self.FREE,
                                             'VGPU'))

    def handles(self, svc, pf):
        from accel_backend.objects import device as device_obj
        with svc.db.transaction() as session:
            (dev,) = [d for d in device_obj.list_(session)
                      if d.address == pf]
            return sorted((h.attach_info['parent'],
                           h.attach_info['asked_type'])
                          for dep in dev.deployables
                          for h in dep.attach_handles)
