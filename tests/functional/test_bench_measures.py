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
presentation: ``tests/unit/test_bench_stats.py`` and
``tests/unit/test_bench_sched.py``): the flow measure
(``benchmarks.flow``) on clouds of their own, against the Nova stub in a
child process, labelled in the summary and the results file; the
scheduling cost measure (``benchmarks.sched``) on real Placements; the
flow of 1 and 8 GPUs (``benchmarks.flow_gpus``), pooled and per device."""

import shutil
import signal
import tempfile
import types

import testtools

from benchmarks import flow
from benchmarks import flow_gpus
from benchmarks import sched
from benchmarks import sections
from benchmarks import summary
from tools import fixtures as tools_fixtures
from tools.fixtures import nova_stub


def stub_env(test):
    """A quick ``benchmarks.run.Env`` stand-in for ``test``: a work
    directory and the Nova stub in a child process, both cleaned up."""
    work = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, work, True)
    stub = tools_fixtures.start(nova_stub.NovaStubProcess(work))
    test.addCleanup(stub.cleanUp)
    return types.SimpleNamespace(workdir=work, stub=stub, quick=True,
                                 log=lambda _msg: None)


class TestFlowMeasure(testtools.TestCase):

    def test_each_cloud_on_a_placement_of_its_own(self):
        env = stub_env(self)
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


class TestSchedMeasure(testtools.TestCase):

    def test_each_layout_answers_its_candidates(self):
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work, True)
        env = types.SimpleNamespace(workdir=work, quick=True,
                                    log=lambda _msg: None)
        res = sched.measure(env, sizes=(1, 2), gpus=(1, 2),
                            layouts=('per_device', 'pooled'), samples=2)
        self.assertEqual([1, 2], [s['hosts'] for s in res['sizes']])
        for size in res['sizes']:
            for lay, by_n in size['layouts'].items():
                for n, cell in by_n.items():
                    # Placement's own answer to Nova's query: per device
                    # 8 then 56 ordered assignments per host, pooled one
                    # per host whatever N.
                    self.assertEqual(
                        ('ok', sched.expected_candidates(
                            lay, n, size['hosts']), 2),
                        (cell['status'], cell['candidates'], cell['n']),
                        (lay, n))
                    self.assertGreater(cell['p50'], 0)
        md = '\n'.join(sections.sched_md(res))
        self.assertIn('| 2 | pooled | ', md)
        self.assertEqual(4, len(summary.summary_rows({'sched': res})))

    def test_a_timed_out_request_kills_its_placement(self):
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work, True)
        cloud = sched.Cloud(work, 1, 'per_device')
        cloud.start()
        self.addCleanup(cloud.stop)
        old = cloud.server
        # 8 request groups over 8 providers of one GPU: 8! assignments,
        # far beyond a second.
        self.assertEqual((None, None), cloud.sample(8, timeout=1.0))
        # SIGKILLed, never sent SIGTERM: gunicorn's graceful stop would
        # wait for the abandoned answer.
        self.assertEqual(-signal.SIGKILL, old.proc.returncode)
        with open(old.log_path) as log:
            self.assertNotIn('Handling signal: term', log.read())
        # A fresh Placement, filled again, answers.
        self.assertIsNot(old, cloud.server)
        self.assertEqual(sched.expected_candidates('per_device', 1, 1),
                         cloud.sample(1)[1])


class TestFlowGpusMeasure(testtools.TestCase):

    def test_pooled_binds_eight_per_device_times_out(self):
        env = stub_env(self)
        # 8 request groups over 8 providers of one GPU: Placement
        # enumerates 8! assignments, far beyond a second.
        self.patch(sched, 'TIMEOUT', 1.0)
        res = flow_gpus.measure(env, clouds=(1,))
        (cloud,) = res['clouds']
        pooled, per_device = (cloud['layouts'][lay]
                              for lay in ('pooled', 'per_device'))
        # Pooled: one candidate per host (accel-backend's and the other)
        # for 1 or 8 GPUs, and the 8 ARQs bound to that one provider
        # sent 8 events each trial (the trial checks them).
        for n in (1, 8):
            self.assertEqual(('ok', 2, flow_gpus.SAMPLES[True]), (
                pooled[n]['status'], pooled[n]['candidates'],
                pooled[n]['total']['n']))
        self.assertEqual(('ok', 16), (per_device[1]['status'],
                                      per_device[1]['candidates']))
        self.assertEqual(flow_gpus.SAMPLES[True],
                         per_device[1]['total']['n'])
        self.assertEqual({'status': 'timeout'}, per_device[8])
        self.assertIsInstance(cloud['ratio_8_to_1']['pooled'], float)
        self.assertTrue(cloud['ratio_8_to_1']['per_device'].startswith(
            '>= '))
        md = '\n'.join(sections.flow_gpus_md(res))
        self.assertIn('| 1 | per_device | ', md)
        self.assertEqual(2, len(summary.summary_rows({'flow_gpus': res})))
