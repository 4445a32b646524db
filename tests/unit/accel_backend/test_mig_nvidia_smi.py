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

"""MIG's ``nvidia-smi mig`` host (``accel_backend.agent.mig.host.
NvidiaSmiMigHost``): the command lines it runs and its reading of their
output.  The ``nvidia-smi`` output below is recorded sample text from
the NVIDIA Multi-Instance GPU User Guide ("Getting Started with MIG":
its ``-lgi`` tables and ``-cgi`` messages, the A100-SXM4-40GB examples);
nvidia-smi itself is never run: the host under test gets a fake runner
(``FakeNvidiaSmi``) that answers from a simulated host.
"""

import testtools

from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import profiles
from accel_backend import exception
from tests.unit.accel_backend import test_mig

A100 = test_mig.A100

# The guide's Example 2 table, aligned as nvidia-smi prints it.
LGI_EXAMPLE_2 = """\
+----------------------------------------------------+
| GPU instances:                                     |
| GPU   Name          Profile  Instance   Placement  |
|                       ID       ID       Start:Size |
|====================================================|
|   0  MIG 1g.5gb       19        7          0:1     |
+----------------------------------------------------+
|   0  MIG 1g.5gb       19        8          1:1     |
+----------------------------------------------------+
|   0  MIG 2g.10gb      14        4          2:2     |
+----------------------------------------------------+
|   0  MIG 3g.20gb       9        2          4:4     |
+----------------------------------------------------+
"""

# "Creating GPU Instances", with the spacing the guide's HTML page keeps.
LGI_CREATING = """\
$ sudo nvidia-smi mig -lgi
+----------------------------------------------------+
| GPU instances: |
| GPU Name Profile Instance Placement |
| ID ID Start:Size |
|====================================================|
| 0 MIG 3g.20gb 9 1 4:4 |
+----------------------------------------------------+
| 0 MIG 3g.20gb 9 2 0:4 |
+----------------------------------------------------+
"""

CGI_CREATING = (
    'Successfully created GPU instance ID 2 on GPU 0 using profile '
    'MIG 3g.20gb (ID 9)\n'
    'Successfully created compute instance ID 0 on GPU 0 GPU instance '
    'ID 2 using profile MIG 3g.20gb (ID 2)\n')


class FakeNvidiaSmi:
    """Answers ``nvidia-smi mig`` command lines from a simulated host, in
    the guide's output format; records every argv."""

    def __init__(self, models):
        self.sim = mig_host.SimulatedMigHost(models)
        self.argvs = []
        self.fail = set()

    def __call__(self, argv):
        self.argvs.append(argv)
        self.assertPrefix(argv)
        gpu = int(argv[3])
        args = argv[4:]
        if args[0] in self.fail:
            raise exception.MigCommandFailed(command=' '.join(argv),
                                             reason='exit status 6')
        if args == ['-lgi']:
            rows = []
            table = profiles.model(self.sim.model(gpu)).profiles
            for gi in self.sim.instances(gpu):
                prof = table[gi.profile]
                rows.append('|  %2d  MIG %-12s %3d  %8d  %9s     |' % (
                    gpu, gi.profile, prof.profile_id, gi.id, '%d:%d' % (
                        gi.start, prof.memory_slices)))
            return '\n'.join([LGI_EXAMPLE_2.splitlines()[0]] +
                             LGI_EXAMPLE_2.splitlines()[1:5] + rows) + '\n'
        if args[0] == '-cgi':
            name, start = args[1].split(':')
            gi = self.sim.create(gpu, name, int(start))
            return ('Successfully created GPU instance ID %2d on GPU %2d '
                    'using profile MIG %s (ID %2d)\n' % (
                        gi.id, gpu, name, profiles.profile(
                            self.sim.model(gpu), name).profile_id))
        if args[0] in ('-dci', '-dgi'):
            gi_id = int(args[2])
            if args[0] == '-dgi':
                self.sim.destroy(gpu, gi_id)
            return ''
        raise AssertionError('unexpected %s' % argv)

    @staticmethod
    def assertPrefix(argv):
        if argv[:3] != ['nvidia-smi', 'mig', '-i']:
            raise AssertionError('unexpected %s' % argv)


class TestNvidiaSmi(testtools.TestCase):

    def test_parse_guide_tables(self):
        self.assertEqual(
            [(0, 19, mig_host.GpuInstance(7, '1g.5gb', 0)),
             (0, 19, mig_host.GpuInstance(8, '1g.5gb', 1)),
             (0, 14, mig_host.GpuInstance(4, '2g.10gb', 2)),
             (0, 9, mig_host.GpuInstance(2, '3g.20gb', 4))],
            mig_host.parse_lgi(LGI_EXAMPLE_2))
        self.assertEqual(
            [(0, 9, mig_host.GpuInstance(1, '3g.20gb', 4)),
             (0, 9, mig_host.GpuInstance(2, '3g.20gb', 0))],
            mig_host.parse_lgi(LGI_CREATING))
        self.assertEqual([], mig_host.parse_lgi('No GPU instances found: '
                                                'Not Found\n'))
        self.assertRaises(exception.MigCommandFailed, mig_host.parse_lgi,
                          '|   0  MIG 3g.20gb   9   x   4:4   |')

    def test_lists_with_lgi(self):
        runs = []

        def run(argv):
            runs.append(argv)
            return LGI_CREATING

        nv = mig_host.NvidiaSmiMigHost({0: A100}, run=run)
        self.assertEqual([mig_host.GpuInstance(2, '3g.20gb', 0),
                          mig_host.GpuInstance(1, '3g.20gb', 4)],
                         nv.instances(0))
        self.assertEqual([['nvidia-smi', 'mig', '-i', '0', '-lgi']], runs)

    def test_gpu_without_instances(self):
        def run(argv):
            raise exception.MigCommandFailed(
                command=' '.join(argv),
                reason='exit status 6: No GPU instances found: Not Found')

        nv = mig_host.NvidiaSmiMigHost({0: A100}, run=run)
        self.assertEqual([], nv.instances(0))

        def broken(argv):
            raise exception.MigCommandFailed(command=' '.join(argv),
                                             reason='exit status 9')

        nv = mig_host.NvidiaSmiMigHost({0: A100}, run=broken)
        self.assertRaises(exception.MigCommandFailed, nv.instances, 0)

    def test_create_reads_the_guides_message(self):
        answers = [LGI_CREATING.replace('| 0 MIG 3g.20gb 9 1 4:4 |\n', ''),
                   CGI_CREATING, LGI_CREATING]
        runs = []

        def run(argv):
            runs.append(argv)
            return answers.pop(0)

        nv = mig_host.NvidiaSmiMigHost({0: A100}, run=run)
        gi = nv.create(0, '3g.20gb')
        self.assertEqual(mig_host.GpuInstance(2, '3g.20gb', 0), gi)
        # The rules placed it at 4 (slices 0-3 are taken); the driver's
        # answer is what counts.
        self.assertEqual(
            ['nvidia-smi', 'mig', '-i', '0', '-cgi', '3g.20gb:4', '-C'],
            runs[1])

    def test_round_trip(self):
        fake = FakeNvidiaSmi({0: A100, 1: A100})
        nv = mig_host.NvidiaSmiMigHost({0: A100, 1: A100}, run=fake)
        self.assertEqual([0, 1], nv.gpus())
        for name in ('3g.20gb', '2g.10gb', '1g.5gb', '1g.5gb'):
            nv.create(1, name)
        # The guide's 3-2-1-1, the 2g.10gb at 0 where the driver put it
        # at 2 (both leave the same room).
        self.assertEqual(
            [('2g.10gb', 0), ('1g.5gb', 2), ('1g.5gb', 3), ('3g.20gb', 4)],
            nv.layout(1))
        self.assertEqual(fake.sim.instances(1), nv.instances(1))
        gi = nv.instances(1)[0]
        fake.argvs[:] = []
        nv.destroy(1, gi.id)
        self.assertEqual(
            [['nvidia-smi', 'mig', '-i', '1', '-lgi'],
             ['nvidia-smi', 'mig', '-i', '1', '-dci', '-gi', str(gi.id)],
             ['nvidia-smi', 'mig', '-i', '1', '-dgi', '-gi', str(gi.id)]],
            fake.argvs)
        self.assertEqual(3, len(nv.instances(1)))

    def test_refused_before_running(self):
        fake = FakeNvidiaSmi({0: A100})
        nv = mig_host.NvidiaSmiMigHost({0: A100}, run=fake)
        nv.create(0, '4g.20gb', 0)
        fake.argvs[:] = []
        self.assertRaises(exception.MigLayoutRefused, nv.create, 0,
                          '3g.20gb', 0)
        self.assertEqual([['nvidia-smi', 'mig', '-i', '0', '-lgi']],
                         fake.argvs)

    def test_destroy(self):
        fake = FakeNvidiaSmi({0: A100})
        nv = mig_host.NvidiaSmiMigHost({0: A100}, run=fake)
        gi = nv.create(0, '7g.40gb')
        self.assertRaises(exception.MigInstanceNotFound, nv.destroy, 0,
                          gi.id + 1)
        # A GI without compute instances: -dci fails, -dgi still runs.
        fake.fail.add('-dci')
        nv.destroy(0, gi.id)
        self.assertEqual([], nv.instances(0))
        fake.fail.add('-dgi')
        gi = nv.create(0, '7g.40gb')
        self.assertRaises(exception.MigCommandFailed, nv.destroy, 0, gi.id)

    def test_create_unreadable_answer(self):
        nv = mig_host.NvidiaSmiMigHost(
            {0: A100}, run=lambda argv: '' if '-lgi' in argv else 'huh')
        e = self.assertRaises(exception.MigCommandFailed, nv.create, 0,
                              '7g.40gb')
        self.assertIn('-cgi 7g.40gb:0 -C', str(e))

    def test_run_command(self):
        self.assertEqual('x\n', mig_host.run_command(['echo', 'x']))
        self.assertRaises(exception.MigCommandFailed,
                          mig_host.run_command, ['false'])
        self.assertRaises(exception.MigCommandFailed,
                          mig_host.run_command, ['/nonexistent/nvidia-smi'])
