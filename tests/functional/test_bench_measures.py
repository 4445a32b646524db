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

"""The benchmarks' measures that start servers (the arithmetic and its
presentation: ``tests/unit/test_bench_stats.py``): the event POST measure
(``benchmarks.transport``) against the Nova stub in a child process, the
PostgreSQL transaction measure (``benchmarks.checkout``) against a real
server, and the flow measure (``benchmarks.flow``) on clouds of their own,
each labelled in the summary and the results file."""

import shutil
import tempfile
import types

import testtools

from benchmarks import checkout
from benchmarks import flow
from benchmarks import sections
from benchmarks import summary
from benchmarks import transport
from tests import waiting
from tools import fixtures as tools_fixtures
from tools.fixtures import nova_stub


class TestTransportMeasure(testtools.TestCase):

    def test_both_transports_post_each_event_to_the_stub(self):
        stub = tools_fixtures.start(nova_stub.NovaStubProcess())
        self.addCleanup(stub.cleanUp)
        env = types.SimpleNamespace(stub=stub, quick=True)
        tr = transport.measure(env, samples=5)
        self.assertEqual((5, 5), (tr['requests']['n'],
                                  tr['service_session']['n']))
        self.assertEqual(tr['requests']['p50'] /
                         tr['service_session']['p50'], tr['ratio_p50'])
        posts = 2 * (transport.WARMUP + 5)
        # The child hands its arrivals back over a pipe.
        waiting.wait_for('%d events at the stub' % posts,
                         lambda: len(stub.received()) >= posts, timeout=30)
        received = stub.received()
        self.assertEqual(posts, len(received))
        self.assertEqual(posts, len({ev['tag'] for ev in received}))
        # In the results file and the summary, labelled.
        rows = summary.summary_rows({'transport': tr})
        self.assertEqual('8 event POST', rows[0][0])
        self.assertEqual('%.2fx' % tr['ratio_p50'], rows[0][3])
        md = '\n'.join(sections.transport_md(tr))
        self.assertIn('## 8. The event POST to Nova', md)
        self.assertIn('| ServiceSession (http.client) | 5 |', md)


class TestCheckoutMeasure(testtools.TestCase):

    def test_both_engines_commit_each_transaction(self):
        env = types.SimpleNamespace(quick=True, versions={})
        co = checkout.measure(env, samples=5)
        self.assertEqual((5, 5), (co['pre_ping']['n'],
                                  co['accel_backend']['n']))
        # Every transaction of both sides, warm-up included, committed.
        self.assertEqual(2 * (checkout.WARMUP + 5), co['rows'])
        self.assertEqual(co['pre_ping']['p50'] / co['accel_backend']['p50'],
                         co['ratio_p50'])
        self.assertIn('postgresql', env.versions)
        # In the results file and the summary, labelled.
        rows = summary.summary_rows({'checkout': co})
        self.assertEqual('9 PostgreSQL transaction', rows[0][0])
        self.assertEqual('%.2fx' % co['ratio_p50'], rows[0][3])
        md = '\n'.join(sections.checkout_md(co))
        self.assertIn('## 9. A transaction on PostgreSQL', md)
        self.assertIn('| accel_backend Database | 5 |', md)


class TestFlowMeasure(testtools.TestCase):

    def test_each_cloud_on_a_placement_of_its_own(self):
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work, True)
        stub = tools_fixtures.start(nova_stub.NovaStubProcess(work))
        self.addCleanup(stub.cleanUp)
        env = types.SimpleNamespace(workdir=work, stub=stub, quick=True,
                                    log=lambda _msg: None)
        fl = flow.measure(env, clouds=(0, 3))
        alone, bigger = fl['clouds']
        # accel-backend's 16 GPUs, then 5 free ones on each of 3 more
        # hosts: every one a candidate of the request, on a Placement
        # that holds nothing else.
        self.assertEqual((0, flow.DEVICES), (alone['other_hosts'],
                                             alone['candidates']))
        self.assertEqual((3, flow.DEVICES + 3 * 5),
                         (bigger['other_hosts'], bigger['candidates']))
        for cloud in fl['clouds']:
            self.assertEqual(flow.TRIALS[True], cloud['total']['n'])
            self.assertGreater(cloud['ratio_total_to_placement']['min'], 1)
        rows = summary.summary_rows({'flow': fl})
        self.assertEqual(4, len(rows))
        self.assertIn('3 other hosts, %d candidates' % (flow.DEVICES + 15),
                      rows[2][1])
        self.assertIn('goal <= 1.15', rows[3][3])
