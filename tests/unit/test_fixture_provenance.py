#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS,
#    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#    See the License for the specific language governing permissions and
#    limitations under the License.
"""Every sysfs fixture tree says where it comes from, and the recorder
that makes recorded trees reads a host without touching it.

A tree is either ``Recorded`` (its README's first word; it carries the
``PROVENANCE.json`` that ``tools/record_sysfs.py`` wrote on the host,
which names the kernel) or ``Generated`` (its README names the writer and
the documents its facts come from)."""

import json
import os

import fixtures
import testtools

from tests.unit.accel_backend import sysfs_tree as st
from tools import record_sysfs

FIXTURES = os.path.join(os.path.dirname(__file__), '..', 'fixtures')
TREE_ROOTS = ('sysfs', 'sysfs-slots')


def trees():
    for root in TREE_ROOTS:
        base = os.path.join(FIXTURES, root)
        for name in sorted(os.listdir(base)):
            if os.path.isdir(os.path.join(base, name)):
                yield '%s/%s' % (root, name), os.path.join(base, name)


class TestEveryTreeSaysWhereItComesFrom(testtools.TestCase):

    def test_readme_says_recorded_or_generated(self):
        seen = []
        for name, path in trees():
            readme = os.path.join(path, 'README.md')
            self.assertTrue(os.path.isfile(readme), '%s: no README' % name)
            with open(readme) as f:
                text = f.read()
            word = text.split(None, 1)[0].rstrip(',')
            self.assertIn(word, ('Recorded', 'Generated'), name)
            seen.append(word)
            if word == 'Generated':
                self.assertFalse(os.path.exists(
                    os.path.join(path, 'PROVENANCE.json')), name)
                continue
            with open(os.path.join(path, 'PROVENANCE.json')) as f:
                provenance = json.load(f)
            self.assertEqual('tools/record_sysfs.py',
                             provenance['recorded_by'], name)
            self.assertIn(provenance['host']['kernel_release'], text, name)
            self.assertEqual(
                sorted(provenance['functions_recorded']),
                sorted(e for e in os.listdir(path) if e.startswith('0000:')),
                name)
        self.assertIn('Recorded', seen)
        self.assertIn('Generated', seen)


class TestRecorder(testtools.TestCase):
    """``tools/record_sysfs.py`` over a host laid out as ``/sys`` is:
    ``bus/pci/devices/<address>`` links to ``devices/pci0000:00/...``."""

    def setUp(self):
        super().setUp()
        self.sys = self.useFixture(fixtures.TempDir()).path
        devices = os.path.join(self.sys, 'devices', 'pci0000:00')
        self.real = devices
        os.makedirs(devices)
        st.write_function(devices, '0000:00:00.0', '8086', '09a2', '060000',
                          numa=0, reset=False, aer=False, iommu_group=0)
        st.write_function(devices, '0000:00:01.0', '8086', '09ab', '060400',
                          numa=0, driver='pcieport', iommu_group=1,
                          reset=False)
        gpu = os.path.join(devices, '0000:00:01.0', '0000:01:00.0')
        st.write_function(os.path.dirname(gpu), '0000:01:00.0', '10de',
                          '2330', '030200', numa=0, driver='vfio-pci',
                          iommu_group=14, subsystem=('10de', '16c1'))
        st.write_function(devices, '0000:00:02.0', '8086', '1572', '020000',
                          numa=0, driver='i40e', iommu_group=2)
        # The write-only reset file: its content must never be read.
        with open(os.path.join(gpu, 'reset'), 'w') as f:
            f.write('must not be read')
        with open(os.path.join(gpu, 'reset_method'), 'w') as f:
            f.write('flr bus\n')
        with open(os.path.join(gpu, 'config'), 'wb') as f:
            f.write(bytes(range(256)) * 16)
        with open(os.path.join(gpu, 'resource0'), 'w') as f:
            f.write('BAR')
        bus = os.path.join(self.sys, 'bus', 'pci', 'devices')
        os.makedirs(bus)
        for address, path in (
                ('0000:00:00.0', '0000:00:00.0'),
                ('0000:00:01.0', '0000:00:01.0'),
                ('0000:01:00.0', '0000:00:01.0/0000:01:00.0'),
                ('0000:00:02.0', '0000:00:02.0')):
            os.symlink('../../../devices/pci0000:00/' + path,
                       os.path.join(bus, address))
        self.out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                'tree')

    def read(self, *path):
        with open(os.path.join(self.out, *path), 'rb') as f:
            return f.read()

    def test_records_the_gpu_its_group_and_the_bridges_above(self):
        provenance = record_sysfs.record(self.sys, self.out)
        # The GPU and its root port, not the NIC nor the host bridge.
        self.assertEqual(['0000:00:01.0', '0000:01:00.0'],
                         sorted(provenance['functions_recorded']))
        self.assertEqual(b'0x10de\n', self.read('0000:01:00.0', 'vendor'))
        self.assertEqual(b'flr bus\n',
                         self.read('0000:01:00.0', 'reset_method'))
        self.assertEqual('../../../kernel/iommu_groups/14', os.readlink(
            os.path.join(self.out, '0000:01:00.0', 'iommu_group')))
        self.assertEqual('../../../bus/pci/drivers/vfio-pci', os.readlink(
            os.path.join(self.out, '0000:01:00.0', 'driver')))
        # The reset file is recorded by its presence alone, config space
        # up to 256 bytes, BARs not at all.
        self.assertEqual(b'', self.read('0000:01:00.0', 'reset'))
        self.assertEqual(bytes(range(256)),
                         self.read('0000:01:00.0', 'config'))
        self.assertFalse(os.path.exists(
            os.path.join(self.out, '0000:01:00.0', 'resource0')))
        self.assertEqual(
            os.path.join(self.real, '0000:00:01.0', '0000:01:00.0'),
            provenance['functions_recorded']['0000:01:00.0']['real_path'])

    def test_all_records_every_function(self):
        provenance = record_sysfs.record(self.sys, self.out, everything=True)
        self.assertEqual(4, len(provenance['functions_recorded']))
        with open(os.path.join(self.out, 'PROVENANCE.json')) as f:
            self.assertEqual(provenance['functions_seen'],
                             json.load(f)['functions_seen'])
