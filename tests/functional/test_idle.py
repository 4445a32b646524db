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

"""The idle benchmark (``benchmarks.idle``) at its smallest size, as CI
runs it: one agent of 8 GPUs (one provider each) among real processes,
a one-second window, a one-second report interval; invariants only, no
timing goal.

* the window reads every component's CPU, the agents', the broker's
  connections, queues and frames, and the load;
* each periodic call of the agent, sent twice, has its CPU by component
  (``idle_calls.costs``);
* a GPU removed from the agent's sysfs tree leaves Placement
  (``idle_liveness.device_removed``);
* a SIGKILLed agent leaves no consumer at the broker, and its last
  status beat is younger than a few report intervals
  (``idle_liveness.agent_killed``);
* the results file renders both, with the slope line.
"""

import testtools

from benchmarks import growth
from benchmarks import idle
from benchmarks import idle_calls
from benchmarks import idle_liveness
from benchmarks import idle_report

INTERVAL = 1


class TestIdleSmall(testtools.TestCase):

    def test_one_agent(self):
        host = growth.host_name(0)
        cloud = self.useFixture(growth.Cloud(
            [host], layout='per_device',
            options={'discovery': {'report_interval': INTERVAL}}))
        # Three report intervals: the agent's CPU is read in clock
        # ticks (10 ms), and one pass on a loaded machine may fall
        # outside a window of one interval (0.0 was seen).
        result = idle.measure(cloud, seconds=3.0 * INTERVAL, stop=False)
        window = result['idle']
        self.addDetail('result', testtools.content.json_content(result))
        self.assertEqual({'apis', 'conductor', 'postgresql', 'rabbitmq',
                          'placement'}, set(window['cpu_ms_per_s']))
        self.assertGreater(window['agents_cpu_ms_per_s'], 0)
        # The conductor, both APIs and the agent hold connections, each
        # agent its own queue.
        self.assertGreaterEqual(window['amqp_connections'], 4)
        self.assertGreaterEqual(window['amqp_queues'], 2)
        self.assertGreater(window['amqp_frames_in_per_s'], 0)
        self.assertEqual(2, len(window['load']))
        result['calls_ms'] = idle_calls.costs(cloud, host, calls=2)
        self.assertEqual({'sync_host', 'record_status', 'handles_to_clean',
                          'placement_in_tree'}, set(result['calls_ms']))
        self.assertGreater(sum(result['calls_ms']['sync_host'].values()), 0)
        live = {'report_interval_s': INTERVAL,
                'beat_notice_bound_s': 2 * INTERVAL,
                'device_removed_s': idle_liveness.device_removed(
                    cloud, host)}
        live.update(idle_liveness.agent_killed(cloud, host))
        self.addDetail('liveness', testtools.content.json_content(live))
        self.assertLess(live['beat_age_at_kill_s'], 30 * INTERVAL)
        self.assertGreaterEqual(live['broker_s'], 0)
        text = idle_report.markdown({'runs': {'now': {
            'meta': {'command': 'x', 'date': 'd', 'machine': {},
                     'total_seconds': 1.0},
            'results': [result], 'liveness': live}}})
        self.assertIn('| 1 | ', text)
        self.assertIn('left Placement after', text)
        self.assertIn('| sync_host | ', text)
