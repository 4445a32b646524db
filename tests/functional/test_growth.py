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

"""The growth benchmark (``benchmarks.growth``) at 2 hosts, as CI runs
it: the same code, real processes (RabbitMQ, PostgreSQL, Placement, the
conductor, two APIs, two agents of 8 fake devices each), invariants
only, no timing.

* start-up: every host's provider, with its inventory of 8, is in
  Placement; each agent made at most 3 Placement calls per device;
* a restart with nothing changed: every agent reports again with one
  Placement call (its checkpointed view, checked by one ``?in_tree=``
  read);
* binds one at a time (``growth_binds.probe``): one event each;
* a storm of 8 ARQs per host bound at once: each ARQ Bound, once (one
  ``accelerator-request-bound`` event each), no attach handle held by two
  ARQs, no PATCH refused, no log line of any process naming a deadlock;
  the CPU each component used for it is measured, and its background
  with nothing asked of it.
"""

import fixtures
import testtools

from benchmarks import growth
from benchmarks import growth_binds
from benchmarks import growth_report

HOSTS = 2


class TestGrowthSmall(testtools.TestCase):

    def test_two_agents(self):
        self.useFixture(fixtures.MonkeyPatch(
            'benchmarks.growth_binds.IDLE_S', 2.0))
        cloud = self.useFixture(growth.Cloud(
            [growth.host_name(i) for i in range(HOSTS)]))
        result = growth.measure(cloud)
        self.addDetail('result', testtools.content.json_content(
            {k: v for k, v in result.items() if k != 'storm'}))
        start, again = result['startup'], result['restart']
        self.assertEqual(sorted(cloud.hosts), sorted(start['ready_s']))
        self.assertEqual(sorted(cloud.hosts), sorted(cloud.providers()))
        for host in cloud.hosts:
            self.assertLessEqual(start['placement_calls'][host],
                                 3 * growth.DEVICES, host)
        self.assertEqual(sorted(cloud.hosts), sorted(again['done_s']))
        self.assertEqual({h: 1 for h in cloud.hosts},
                         again['placement_calls'])
        self.assertEqual(growth_binds.PROBE_ROUNDS * growth_binds.PROBE_BINDS,
                         len(result['probe_s']))
        storm = result['storm']
        self.assertEqual({'apis', 'conductor', 'postgresql', 'rabbitmq',
                          'placement'}, set(storm['cpu_ms_per_bind']))
        self.assertEqual(set(storm['cpu_ms_per_bind']),
                         set(storm['idle_cpu_ms_per_s']))
        self.assertGreater(storm['cpu_gross_ms_per_bind']['apis'], 0)
        self.assertGreater(storm['cpu_ms_per_bind']['apis'], 0)
        # Taking the idle out never adds.  (PostgreSQL's own share of 16
        # binds can be under the kernel's 10 ms accounting tick per
        # backend: it may read 0 at this size.)
        for name, net in storm['cpu_ms_per_bind'].items():
            self.assertLessEqual(net, storm['cpu_gross_ms_per_bind'][name],
                                 name)
        self.assertEqual(HOSTS * growth.DEVICES, storm['arqs'])
        self.assertEqual(
            ([], [], 0, 0, {}),
            (storm['patch_errors'], storm['not_bound'],
             storm['bound_twice'], storm['shared_handles'],
             storm['deadlocks']))
        self.assertEqual(storm['arqs'], len(storm['latency_s']))
        self.assertEqual(HOSTS, len(result['memory_mib']['agents']))
        # The results file's row of this size carries both CPU figures.
        row, = growth_report.rows([result])
        self.assertEqual(
            (sum(storm['cpu_ms_per_bind'].values()),
             sum(storm['cpu_gross_ms_per_bind'].values()),
             sum(storm['idle_cpu_ms_per_s'].values())),
            (row['cpu_ms_per_bind'], row['cpu_gross_ms_per_bind'],
             row['idle_cpu_ms_per_s']))
