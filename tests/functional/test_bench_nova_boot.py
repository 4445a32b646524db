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

"""The Nova boot benchmark (``benchmarks.nova_boot``) at its smallest:
2 hosts (the embedded accel_backend's and one reported by an agent-role
service), one timed boot per flavor and one burst of 2 per flavor, as
the benchmark runs them; invariants only, no timing.

* every boot went ACTIVE with its ARQs Bound: none for plain, 1 and 8;
* each boot's marks come in the order Nova passes them, so every phase
  is >= 0 and the phases add up to the boot;
* the second host's GPUs, reported by the agent-role service, are in
  Placement as accel_backend reports them (two pools of 4 per host with
  ``[discovery] pool_numa_span`` false);
* the results file is written from the result.
"""

import math

import testtools

from benchmarks import nova_boot
from benchmarks import nova_boot_report


class TestNovaBootSmall(testtools.TestCase):

    def test_two_hosts_one_boot_per_flavor(self):
        result = nova_boot.measure(2, 1, concurrent=2, rounds=1)
        self.assertEqual([], result['errors'])
        self.assertEqual(2, result['hosts'])
        samples = result['samples']
        self.assertEqual(set(nova_boot.FLAVORS), set(samples))
        arqs = {'plain': 0, 'gpu1': 1, 'gpu8': 8}
        for flavor, boots in samples.items():
            self.assertEqual(1, len(boots))
            (sample,) = boots
            self.assertEqual(arqs[flavor], sample['bound_arqs'], flavor)
            # Nova passed the marks in their order (the wait only with
            # ARQs), so no phase is negative.
            order = [m for m in nova_boot.ORDER if m in sample['marks_s']]
            self.assertEqual(order, sorted(order, key=sample['marks_s'].get))
            self.assertEqual(flavor != 'plain',
                             'wait_start' in sample['marks_s'], flavor)
            self.assertEqual(set(nova_boot.PHASES), set(sample['phases_s']))
            for phase, seconds in sample['phases_s'].items():
                self.assertGreaterEqual(seconds, 0.0, (flavor, phase))
            self.assertTrue(math.isclose(
                sum(sample['phases_s'].values()), sample['total_s'],
                rel_tol=1e-9), flavor)
            self.assertGreater(sample['total_s'], 0.0)
        self.assertEqual({f: 1 for f in nova_boot.FLAVORS},
                         {f: len(v) for f, v in
                          result['concurrent'].items()})
        # The first and the last host's device providers.
        self.assertEqual({'host-0001', 'host-0002'},
                         set(result['providers']))
        expected = [8] if result['pool_numa_span'] else [4, 4]
        for host, pools in result['providers'].items():
            self.assertEqual(expected, pools, host)

        result.update(load={'start': 0, 'end': 0, 'max': 0, 'mean': 0},
                      seconds=1.0)
        text = nova_boot_report.markdown(
            [result], {'date': 'now', 'command': 'test',
                       'total_seconds': 1.0, 'versions': {
                           'python': '3', 'openstack-placement': '1',
                           'nova-accel': '1'},
                       'machine': {'cpu': 'cpu', 'cores': 2,
                                   'memory': '1', 'os': 'os'}})
        for flavor in nova_boot.FLAVORS:
            self.assertIn('| 2 | %s | 1 |' % flavor, text)
        self.assertIn('gpu8 at 2 hosts', text)


class TestPhases(testtools.TestCase):

    def test_gaps_between_marks(self):
        # post 0, scheduler 1 to 3, ARQs 4 to 7, compute from 8, waits
        # 9 to 12, active at 20.
        marks = dict(zip(nova_boot.ORDER, (0, 1, 3, 4, 7, 8, 9, 12, 20)))
        self.assertEqual({'api': 1, 'scheduling': 2, 'arq_create_bind': 3,
                          'conductor': 2, 'event_wait': 3, 'compute': 9},
                         nova_boot.phases(marks))
        del marks['wait_start'], marks['wait_end']
        self.assertEqual((0, 12), (nova_boot.phases(marks)['event_wait'],
                                   nova_boot.phases(marks)['compute']))
