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

"""Discovery on the real sysfs of the nested compute node (no Nova): what
accel_backend reports for every PCI function a real Linux 6.1 kernel shows
with a virtual IOMMU, and what it must skip."""

import json
import os
import shlex
import sys

import testtools

from tools.nested import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EDU_SPEC = {'vendor_id': '1234', 'product_id': '11e8',
            'resource_class': 'CUSTOM_EDU', 'device_type': 'OTHER',
            'traits': ['CUSTOM_QEMU_EDU']}
# ICH9 SMBus controller: shares IOMMU group with the SATA controller,
# which the host's ahci driver holds.
SMBUS_SPEC = {'vendor_id': '8086', 'product_id': '2930',
              'resource_class': 'CUSTOM_SMBUS', 'device_type': 'OTHER'}


def discovery_command(*specs, bind_vfio=False):
    args = ' '.join('--spec %s' % shlex.quote(json.dumps(s)) for s in specs)
    lines = ['set -e', 'modprobe ahci']
    if bind_vfio:
        lines += ['modprobe vfio-pci',
                  'echo 1234 11e8 > /sys/bus/pci/drivers/vfio-pci/new_id']
    lines.append('cd %s && %s -m tools.nested.l1_discovery --driver '
                 'generic_pci %s > discovery.json' % (
                     shlex.quote(REPO), shlex.quote(sys.executable), args))
    lines.append('cat discovery.json')
    return '\n'.join(lines) + '\n'


class TestDiscoveryOnARealKernel(testtools.TestCase):
    """One boot of L1 for the class (about 1 minute under TCG)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rc, out, cls.took = node.NestedNode().run(
            discovery_command(EDU_SPEC, SMBUS_SPEC, bind_vfio=True))
        if rc:
            raise AssertionError('discovery in L1 failed (%d):\n%s' % (
                rc, out[-3000:]))
        cls.result = json.loads(out[out.index('{'):])
        cls.functions = {f['address']: f for f in cls.result['functions']}
        cls.reported = {d['address']: d for d in cls.result['deployables']}

    def test_every_function_is_seen_with_its_iommu_group(self):
        layout = node.Layout
        for address in layout.ROOT_EDUS + layout.BRIDGED_EDUS + (
                layout.NUMA1_EDU,):
            fn = self.functions[address]
            self.assertEqual(('1234', '11e8', '00ff00', 'vfio-pci'),
                             (fn['vendor_id'], fn['product_id'],
                              fn['class_code'], fn['driver']))
            self.assertIsNotNone(fn['iommu_group'])
        # The two functions behind the PCIe-to-PCI bridge and the bridge
        # share one group; the others have one each.
        groups = {a: self.functions[a]['iommu_group']
                  for a in layout.ROOT_EDUS + layout.BRIDGED_EDUS}
        self.assertEqual(groups[layout.BRIDGED_EDUS[0]],
                         groups[layout.BRIDGED_EDUS[1]])
        self.assertEqual(4, len({groups[a] for a in layout.ROOT_EDUS} |
                                {groups[layout.BRIDGED_EDUS[0]], None}))
        # The two functions of slot 08 (no ACS): one group of their own.
        first, second = (self.functions[a]['iommu_group']
                         for a in layout.UNIT_EDUS)
        self.assertEqual(first, second)
        self.assertNotIn(first, groups.values())

    def test_what_is_reported(self):
        layout = node.Layout
        # One device per IOMMU group; bridges, virtio 9p functions and
        # chipset functions no spec names are not reported.
        self.assertEqual(sorted(layout.ROOT_EDUS + (
            layout.BRIDGED_EDUS[0], layout.NUMA1_EDU, layout.UNIT_EDUS[0],
            '0000:00:1f.3')), sorted(self.reported))
        skipped = set(self.functions) - set(self.reported)
        self.assertIn(layout.BRIDGED_EDUS[1], skipped)
        # The second function of slot 08 goes with the first: one device
        # whose attach handle names both functions.
        self.assertIn(layout.UNIT_EDUS[1], skipped)
        unit = self.reported[layout.UNIT_EDUS[0]]
        self.assertEqual([('PCI', {'domain': '0000', 'bus': '00',
                                   'device': '08', 'function': '0',
                                   'functions': '0,1'})],
                         [tuple(h) for h in unit['attach_handles']])
        self.assertEqual('healthy', unit['health'])
        for address in skipped - {layout.BRIDGED_EDUS[1],
                                  layout.UNIT_EDUS[1]}:
            self.assertNotEqual(('1234', '11e8'), (
                self.functions[address]['vendor_id'],
                self.functions[address]['product_id']), address)
        edu = self.reported[layout.ROOT_EDUS[0]]
        self.assertEqual(('CUSTOM_EDU', 'healthy'),
                         (edu['resource_class'], edu['health']))
        self.assertIn('CUSTOM_QEMU_EDU', edu['traits'])
        self.assertEqual(str(self.functions[layout.ROOT_EDUS[0]][
            'iommu_group']), str(edu['std_board_info']['iommu_group']))

    def test_a_bus_reset_the_kernel_would_refuse_is_no_reset(self):
        layout = node.Layout
        listed = self.result['reset_method_files']
        first, second = layout.BRIDGED_EDUS
        # The kernel lists ``bus`` for the first function behind the
        # bridge (probed before the second was added) and nothing for the
        # second; it refuses that reset, so it is not offered.
        self.assertEqual(('bus', None), (listed[first], listed[second]))
        self.assertEqual([], self.functions[first]['reset_methods'])
        self.assertEqual('none', self.reported[first]['std_board_info'][
            'reset_method'])
        # Alone behind its root port, the NUMA node 1 function keeps it.
        self.assertEqual('bus', listed[layout.NUMA1_EDU])
        self.assertEqual(['bus'],
                         self.functions[layout.NUMA1_EDU]['reset_methods'])

    def test_numa_node_of_the_expander_bus(self):
        dep = self.reported[node.Layout.NUMA1_EDU]
        self.assertEqual(1, dep['numa_node'])
        self.assertIn('CUSTOM_NUMA_NODE_1', dep['traits'])

    def test_group_held_by_a_host_driver_blocks_the_device(self):
        smbus = self.reported['0000:00:1f.3']
        self.assertEqual('unhealthy', smbus['health'])
        self.assertIn('also holds 0000:00:1f.2 (driver ahci)',
                      smbus['health_reason'])


class TestDiscoveryWithoutAnIOMMU(testtools.TestCase):
    """L1 booted without QEMU's virtual IOMMU, as a host whose firmware
    leaves VT-d off: its kernel makes no IOMMU group, so vfio-pci could
    take none of its functions.  One boot of L1 for the class (about 30
    s under TCG).  That Nova's scheduler then ends a boot in "No valid
    host" with nothing left: ``tests.functional.test_no_iommu``."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rc, out, cls.took = node.NestedNode(iommu=False).run(
            discovery_command(EDU_SPEC) +
            'echo "iommu_groups=$(ls /sys/kernel/iommu_groups | wc -l)"\n')
        if rc:
            raise AssertionError('discovery in L1 failed (%d):\n%s' % (
                rc, out[-3000:]))
        cls.groups = out.rsplit('iommu_groups=', 1)[1].strip()
        cls.result = json.loads(out[out.index('{'):out.rindex('}') + 1])

    def test_the_kernel_made_no_iommu_group(self):
        self.assertEqual('0', self.groups)
        self.assertEqual([], [fn['address'] for fn in self.result[
            'functions'] if fn['iommu_group'] is not None])

    def test_every_device_is_unhealthy_naming_the_cause(self):
        layout = node.Layout
        reported = {d['address']: d for d in self.result['deployables']}
        # Without groups nothing joins the bridged functions: each is
        # reported, and none is offered.
        self.assertLessEqual(set(layout.ROOT_EDUS + layout.BRIDGED_EDUS + (
            layout.NUMA1_EDU, layout.UNIT_EDUS[0])), set(reported))
        for address, dep in reported.items():
            self.assertEqual(('1234', '11e8'), (
                dep['vendor_id'], dep['product_id']), address)
            self.assertEqual('unhealthy', dep['health'], address)
            self.assertIn("no IOMMU group: the host's IOMMU is off",
                          dep['health_reason'])
