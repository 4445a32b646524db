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

"""MIG partitioning (``accel_backend.agent.mig``): the profile tables and
layout rules and the simulated host (the ``nvidia-smi mig`` host is
``test_mig_nvidia_smi``'s).

The layouts called known-good are the three the NVIDIA Multi-Instance
GPU User Guide shows the driver placing ("Getting Started with MIG",
"Instance Geometry", on an A100-SXM4-40GB), and its two ``3g.20gb``.
"""

import re

import testtools

from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import profiles
from accel_backend import exception

A100 = 'A100-SXM4-40GB'
H100 = 'H100-SXM5-80GB'
H200 = 'H200-SXM5-141GB'

# "Instance Geometry", Example 1 (4-2-1), Example 2 (3-2-1-1) and
# Example 3 (2-1-1-1-1-1), as the guide's ``nvidia-smi mig -lgi`` lists
# them, and "Creating GPU Instances" (two 3g.20gb).
GUIDE_LAYOUTS = [
    [('1g.5gb', 6), ('2g.10gb', 4), ('4g.20gb', 0)],
    [('1g.5gb', 0), ('1g.5gb', 1), ('2g.10gb', 2), ('3g.20gb', 4)],
    [('1g.5gb', 0), ('1g.5gb', 1), ('1g.5gb', 2), ('1g.5gb', 3),
     ('1g.5gb', 6), ('2g.10gb', 4)],
    [('3g.20gb', 4), ('3g.20gb', 0)],
]


class TestProfileTables(testtools.TestCase):

    def test_h200_table(self):
        # "Supported MIG Profiles", H200 141GB.
        m = profiles.model(H200)
        self.assertEqual(
            ['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb',
             '4g.71gb', '7g.141gb'], list(m.profiles))
        self.assertEqual(
            [(1, 1, 7), (1, 1, 1), (1, 2, 4), (2, 2, 3), (3, 4, 2),
             (4, 4, 1), (7, 8, 1)],
            [(p.compute_slices, p.memory_slices, p.max_count)
             for p in m.profiles.values()])
        self.assertEqual(141, m.profiles['7g.141gb'].memory_gb)

    def test_a100_placements_are_the_guides(self):
        # "List GPU Instance Profiles": nvidia-smi mig -lgipp.
        lgipp = """\
GPU 0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
GPU 0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1
GPU 0 Profile ID 15 Placements: {0,2,4,6}:2
GPU 0 Profile ID 14 Placements: {0,2,4}:2
GPU 0 Profile ID 9 Placements: {0,4}:4
GPU 0 Profile ID 5 Placement : {0}:4
GPU 0 Profile ID 0 Placement : {0}:8
"""
        read = {}
        for pid, starts, size in re.findall(
                r'Profile ID\s+(\d+) Placements?\s*:\s*\{([\d,]+)\}:(\d+)',
                lgipp):
            read[int(pid)] = (tuple(int(s) for s in starts.split(',')),
                              int(size))
        ours = {p.profile_id: (p.starts, p.memory_slices)
                for p in profiles.model(A100).profiles.values()}
        self.assertEqual(read, ours)

    def test_pci_ids(self):
        self.assertEqual(H200, profiles.model_for_pci('10de', '2335'))
        self.assertEqual(H100, profiles.model_for_pci('0x10DE', '0x2330'))
        self.assertRaises(exception.MigModelUnknown,
                          profiles.model_for_pci, '10de', '1eb8')
        self.assertRaises(exception.MigModelUnknown, profiles.model, 'T4')


class TestLayoutRules(testtools.TestCase):

    def test_guide_layouts_are_valid(self):
        for layout in GUIDE_LAYOUTS:
            self.assertEqual([], profiles.layout_problems(A100, layout))

    def test_same_geometry_on_h200(self):
        h200 = {'1g.5gb': '1g.18gb', '2g.10gb': '2g.35gb',
                '3g.20gb': '3g.71gb', '4g.20gb': '4g.71gb'}
        for layout in GUIDE_LAYOUTS:
            self.assertTrue(profiles.valid_layout(
                H200, [(h200[p], s) for p, s in layout]))

    def test_known_good(self):
        for layout in ([('7g.141gb', 0)], [('4g.71gb', 0), ('3g.71gb', 4)],
                       [('1g.18gb', s) for s in range(7)],
                       [('1g.35gb', s) for s in (0, 2, 4, 6)],
                       [('2g.35gb', 0), ('2g.35gb', 2), ('2g.35gb', 4),
                        ('1g.18gb+me', 6)],
                       []):
            self.assertEqual([], profiles.layout_problems(H200, layout))

    def test_known_bad(self):
        cases = [
            ([('3g.71gb', 0), ('2g.35gb', 2)], 'overlaps'),
            ([('7g.141gb', 0), ('1g.18gb', 0)], 'overlaps'),
            ([('3g.71gb', 2)], 'cannot start at slice 2'),
            ([('1g.18gb', 7)], 'cannot start at slice 7'),
            ([('4g.71gb', 4)], 'cannot start at slice 4'),
            ([('2g.35gb', 6)], 'cannot start at slice 6'),
            ([('1g.18gb+me', 0), ('1g.18gb+me', 1)],
             '2 GIs of 1g.18gb+me, at most 1'),
            ([('3g.20gb', 0)], '3g.20gb is not a profile of H200'),
        ]
        for layout, why in cases:
            problems = profiles.layout_problems(H200, layout)
            self.assertFalse(profiles.valid_layout(H200, layout))
            self.assertIn(why, ' '.join(problems))

    def test_compute_slices(self):
        # No layout of these tables fits 8 memory slices and more than 7
        # compute slices; a table with a 1-slice, 1g profile allowed at
        # slice 7 shows the check.
        wide = profiles.Profile('1g.18gb', 18, 1, 1, tuple(range(8)), 8,
                                None)
        m = profiles.MODELS[H200]
        table = dict(m.profiles, **{'1g.18gb': wide})
        self.patch(profiles, 'MODELS',
                   dict(profiles.MODELS, **{H200: m._replace(
                       profiles=table)}))
        problems = profiles.layout_problems(
            H200, [('1g.18gb', s) for s in range(8)])
        self.assertEqual(['8 compute slices, at most 7'], problems)

    def test_placements(self):
        self.assertEqual([0, 1, 2, 3, 4, 5, 6],
                         profiles.placements(H200, [], '1g.18gb'))
        self.assertEqual([4], profiles.placements(
            H200, [('4g.71gb', 0)], '3g.71gb'))
        self.assertEqual([4, 6], profiles.placements(
            H200, [('3g.71gb', 0)], '1g.35gb'))
        self.assertEqual([0], profiles.placements(
            H200, [('3g.71gb', 4)], '4g.71gb'))
        self.assertEqual([], profiles.placements(
            H200, [('3g.71gb', 0)], '4g.71gb'))
        self.assertEqual([], profiles.placements(
            H200, [('1g.18gb+me', 3)], '1g.18gb+me'))
        self.assertEqual([], profiles.placements(H200, [], '3g.20gb'))

    def test_best_placement(self):
        # As the driver placed them in the guide's examples.
        self.assertEqual(4, profiles.best_placement(A100, [], '3g.20gb'))
        self.assertEqual(6, profiles.best_placement(
            A100, [('4g.20gb', 0), ('2g.10gb', 4)], '1g.5gb'))
        self.assertIsNone(profiles.best_placement(
            A100, [('7g.40gb', 0)], '1g.5gb'))

    def test_realize(self):
        # Largest first with backtracking: the guide's 3-2-1-1 (3g.20gb
        # at 0 leaves no room for the second 1g.5gb).
        layout = profiles.realize(A100, ['1g.5gb', '2g.10gb', '1g.5gb',
                                         '3g.20gb'])
        self.assertEqual(
            [('2g.10gb', 0), ('1g.5gb', 2), ('1g.5gb', 3), ('3g.20gb', 4)],
            layout)
        self.assertTrue(profiles.valid_layout(A100, layout))
        self.assertIsNone(profiles.realize(H200, ['4g.71gb', '4g.71gb']))
        self.assertIsNone(profiles.realize(H200, ['1g.18gb'] * 8))
        self.assertEqual([('1g.18gb', 5)], profiles.realize(
            H200, ['1g.18gb'], prefer=[('1g.18gb', 5)]))


class TestSimulatedHost(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.host = mig_host.SimulatedMigHost({0: H200, 1: H100})

    def test_create_where_it_fits_and_destroy(self):
        a = self.host.create(0, '3g.71gb')
        b = self.host.create(0, '3g.71gb')
        # The first at 4, where it leaves more room (best_placement).
        self.assertEqual([(1, 4), (2, 0)], [(a.id, a.start),
                                            (b.id, b.start)])
        self.assertEqual([('3g.71gb', 0), ('3g.71gb', 4)],
                         self.host.layout(0))
        self.host.destroy(0, b.id)
        self.assertEqual([('3g.71gb', 4)], self.host.layout(0))
        self.assertEqual(2, self.host.create(0, '1g.18gb', 2).id)
        self.assertEqual([], self.host.instances(1))

    def test_refused(self):
        self.host.create(0, '4g.71gb', 0)
        e = self.assertRaises(exception.MigLayoutRefused, self.host.create,
                              0, '2g.35gb', 2)
        self.assertEqual(409, e.status)
        self.assertIn('overlaps 4g.71gb at 0', str(e))
        self.host.create(0, '3g.71gb')
        e = self.assertRaises(exception.MigLayoutRefused, self.host.create,
                              0, '1g.18gb')
        self.assertIn('no free placement', str(e))
        e = self.assertRaises(exception.MigLayoutRefused, self.host.create,
                              1, '1g.18gb')
        self.assertIn('not a profile of H100-SXM5-80GB', str(e))
        self.assertEqual([('4g.71gb', 0), ('3g.71gb', 4)],
                         self.host.layout(0))

    def test_destroy_unknown(self):
        e = self.assertRaises(exception.MigInstanceNotFound,
                              self.host.destroy, 0, 9)
        self.assertEqual(404, e.status)

    def test_unknown_model(self):
        self.assertRaises(exception.MigModelUnknown,
                          mig_host.SimulatedMigHost, {0: 'V100'})
