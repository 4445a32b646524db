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
"""MIG-backed vGPU as mdev types on VFs (Ampere): a ``Service`` over a
copy of the generated ``a100-mig-vgpu-vfs`` tree reports each enabled
MIG-backed type as a ``CUSTOM_MIG_SLICE`` provider of a real Placement,
as many units as the GPU has GPU instances of its profile, which a fake
``nvidia-smi`` (a script: the program is the system boundary) lists in
the NVIDIA Multi-Instance GPU User Guide's ``-lgi`` format."""

import os
import stat

from accel_backend.agent.mig import host as mig_host
from accel_backend.objects import device as device_obj
from tests.unit.accel_backend import test_real_servers

GPU = '0000:ca:00.0'
T3, T2, T1 = 'nvidia-472', 'nvidia-473', 'nvidia-475'
# The GPU instances of the tree's A100 (profile ids of the guide's
# A100-SXM4-40GB: 14 2g.10gb, 19 1g.5gb, 9 3g.20gb).
LGI = """\
+----------------------------------------------------+
| GPU instances:                                     |
| GPU   Name          Profile  Instance   Placement  |
|                       ID       ID       Start:Size |
|====================================================|
|   0  MIG 2g.10gb      14        3          0:2     |
+----------------------------------------------------+
|   0  MIG 1g.5gb       19        9          2:1     |
+----------------------------------------------------+
|   0  MIG 1g.5gb       19       10          3:1     |
+----------------------------------------------------+
|   0  MIG 3g.20gb       9        2          4:4     |
+----------------------------------------------------+
"""
SCRIPT = """#!/bin/sh
case "$*" in
  "--query-gpu=index,pci.bus_id --format=csv,noheader")
    echo "0, 00000000:CA:00.0" ;;
  "mig -i 0 -lgi") cat "$(dirname "$0")/lgi.txt" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


class TestParsing(test_real_servers.testtools.TestCase):

    def test_bus_ids(self):
        self.assertEqual({'0000:ca:00.0': 0, '0001:3b:00.0': 1},
                         mig_host.parse_bus_ids(
                             '0, 00000000:CA:00.0\n1, 00000001:3B:00.0\n'))
        self.assertRaises(mig_host.exception.MigCommandFailed,
                          mig_host.parse_bus_ids, 'No devices were found')


class TestA100MigTypesOnVFs(test_real_servers.RealServerTest):

    TREE = test_real_servers.tree('a100-mig-vgpu-vfs')
    DRIVERS = 'mdev'

    def setUp(self):
        super().setUp()
        self.smi = os.path.join(self.tmp, 'bin', 'nvidia-smi')
        os.makedirs(os.path.dirname(self.smi))
        with open(self.smi, 'w') as f:
            f.write(SCRIPT)
        os.chmod(self.smi, stat.S_IRWXU)
        self.write_lgi(LGI)
        self.logger = self.useFixture(
            test_real_servers.fixtures.FakeLogger())

    def write_lgi(self, text):
        with open(os.path.join(self.tmp, 'bin', 'lgi.txt'), 'w') as f:
            f.write(text)

    def report(self, types=(T3, T2, T1), smi=None):
        return super().report(mdev_types=','.join(types),
                              nvidia_smi_path=smi or self.smi)

    def slices(self):
        return {name.rsplit('_', 1)[1]: self.inv(name, 'CUSTOM_MIG_SLICE')
                for name in self.providers()}

    def test_one_slice_per_gpu_instance(self):
        svc = self.report()
        # sysfs alone shows seven free VFs offering 2-10C and 1-5C each;
        # the GPU has one 2g.10gb and two 1g.5gb free, and the 3g.20gb
        # holds the vGPU of VF .4.
        self.assertEqual({T3: (1, 0, 1), T2: (1, 0, 1), T1: (2, 0, 2)},
                         self.slices())
        self.assertEqual({'CUSTOM_MIG_SLICE'}, set(self.inventory(
            self.providers()['%s_%s' % (GPU, T1)]['uuid'])))
        self.assertEqual(set(), {
            'CUSTOM_MIG_1G_5GB', 'CUSTOM_GPU_A100_SXM4_40GB',
            'CUSTOM_MIG_MEM_GE_5GB', 'CUSTOM_MDEV_NVIDIA_475'} -
            self.traits(self.providers()['%s_%s' % (GPU, T1)]['uuid']))
        self.assertEqual(['%s_%s' % (GPU, T3), '%s_%s' % (GPU, T2)],
                         self.candidates('resources=CUSTOM_MIG_SLICE:1&'
                                         'required=CUSTOM_MIG_MEM_GE_10GB'))
        self.assertEqual([], self.candidates('resources=VGPU:1'))
        # No VF is sold twice: the handles of the three types are apart.
        handles = self.handle_addresses(svc)
        self.assertEqual(['0000:ca:00.4'], handles[T3])
        self.assertEqual(['0000:ca:00.5'], handles[T2])
        self.assertEqual(['0000:ca:00.6', '0000:ca:00.7'], handles[T1])
        self.writes(svc)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))

    def test_gpu_instances_follow_nvidia_smi(self):
        self.report()
        # The operator destroys a 1g.5gb: one 1-5C slice fewer.
        self.write_lgi(LGI.replace(
            '|   0  MIG 1g.5gb       19       10          3:1     |\n', ''))
        self.report()
        self.assertEqual((1, 0, 1), self.slices()[T1])

    def test_without_nvidia_smi_nothing_is_offered(self):
        self.report(smi=os.path.join(self.tmp, 'missing-nvidia-smi'))
        self.assertEqual({}, self.providers())
        self.assertIn('GPU 0000:ca:00.0 is in MIG mode; its MIG-backed '
                      'vGPUs are not offered', self.logger.output)

    def handle_addresses(self, svc):
        found = {}
        with svc.db.transaction() as session:
            (dev,) = device_obj.list_(session)
            for dep in dev.deployables:
                found[dep.name.rsplit('_', 1)[1]] = sorted(
                    h.attach_info['parent'] for h in dep.attach_handles)
        return found
