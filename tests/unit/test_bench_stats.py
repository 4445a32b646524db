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

"""The benchmarks' arithmetic (``benchmarks.stats``) and how the summary
and the results file present it (``benchmarks.summary``,
``benchmarks.report``): floors from counted round trips and commits, the
bootstrap interval of a ratio of medians, the interleaved order, the
turns by blocks of measure 3 (``benchmarks.upstream.take_turns``), the
upstream headline with the bare PATCH apart, the load averages.  The
measures that start servers are
``tests/functional/test_bench_measures.py``'s."""

import os
import random
import statistics
import tempfile

import testtools

from benchmarks import report
from benchmarks import sections
from benchmarks import stats
from benchmarks import summary
from benchmarks import upstream


class TestPathFloor(testtools.TestCase):

    def test_counts_of_each_path(self):
        # PATCH -> event: PATCH + event POST, one commit of the binding
        # (the event cannot go before it); create adds its POST and its
        # commit.
        self.assertEqual((2, 1), (stats.PATHS['patch_to_event']['http'],
                                  stats.PATHS['patch_to_event']['commits']))
        self.assertEqual((3, 2),
                         (stats.PATHS['create_bind_event']['http'],
                          stats.PATHS['create_bind_event']['commits']))

    def test_floor_is_http_and_commits_times_their_p50(self):
        fl = stats.path_floor('create_bind_event', 1.1, 0.4)
        self.assertAlmostEqual(3 * 1.1 + 2 * 0.4, fl['ms'])
        self.assertEqual('3 HTTP x 1.10 ms + 2 commits x 0.40 ms = 4.10 ms',
                         fl['formula'])
        fl = stats.path_floor('patch_to_event', 1.0, 0.5)
        self.assertAlmostEqual(2.5, fl['ms'])
        self.assertEqual(('patch_to_event', 2, 1),
                         (fl['path'], fl['http'], fl['commits']))

    def test_missing_primitive_gives_no_number(self):
        fl = stats.path_floor('patch_to_get_bound', None, 0.4)
        self.assertIsNone(fl['ms'])
        self.assertIn('2 HTTP x ?', fl['formula'])

    def test_unknown_path(self):
        self.assertRaises(KeyError, stats.path_floor, 'bare', 1.0, 1.0)


class TestBootstrapRatio(testtools.TestCase):

    def test_ratio_of_medians_inside_its_interval(self):
        rng = random.Random(1)
        a = [1.10 + rng.gauss(0, 0.05) for _ in range(40)]
        b = [1.00 + rng.gauss(0, 0.05) for _ in range(40)]
        r, lo, hi = stats.bootstrap_ratio_ci(a, b, resamples=2000)
        self.assertAlmostEqual(statistics.median(a) / statistics.median(b),
                               r)
        self.assertLess(lo, r)
        self.assertLess(r, hi)
        # 40 samples of 5 % spread: the interval is a few percent wide
        # and excludes 1 (a is 10 % slower).
        self.assertGreater(lo, 1.0)
        self.assertLess(hi - lo, 0.15)

    def test_spread_widens_the_interval(self):
        rng = random.Random(2)
        tight = [1.0 + rng.gauss(0, 0.01) for _ in range(30)]
        loose = [1.0 + rng.gauss(0, 0.4) for _ in range(30)]
        _, lo1, hi1 = stats.bootstrap_ratio_ci(tight, tight)
        _, lo2, hi2 = stats.bootstrap_ratio_ci(loose, tight)
        self.assertLess(hi1 - lo1, hi2 - lo2)

    def test_same_seed_same_interval_and_constant_samples(self):
        a, b = [2.0, 2.5, 3.0, 2.2], [1.0, 1.1, 0.9, 1.2]
        self.assertEqual(stats.bootstrap_ratio_ci(a, b, seed=7),
                         stats.bootstrap_ratio_ci(a, b, seed=7))
        self.assertEqual((2.0, 2.0, 2.0),
                         stats.bootstrap_ratio_ci([4.0] * 5, [2.0] * 3))

    def test_bad_input(self):
        self.assertRaises(ValueError, stats.bootstrap_ratio_ci, [], [1.0])
        self.assertRaises(ValueError, stats.bootstrap_ratio_ci, [1.0],
                          [0.0, 0.0])
        self.assertRaises(ValueError, stats.bootstrap_ratio_ci, [1.0],
                          [1.0], resamples=0)
        self.assertRaises(ValueError, stats.bootstrap_ratio_ci, [1.0],
                          [1.0], confidence=1.0)


class TestOrder(testtools.TestCase):

    def test_interleaved_takes_turns(self):
        self.assertEqual(list('abcabc'), stats.interleaved('abc', 2))
        self.assertEqual([], stats.interleaved(['a', 'b'], 0))

    def test_rounds(self):
        self.assertEqual([10, 10, 10], stats.rounds(30, 10))
        self.assertEqual([10, 10, 5], stats.rounds(25, 10))
        self.assertEqual([3, 3], stats.rounds(6, 3))
        self.assertEqual([], stats.rounds(0, 3))
        self.assertRaises(ValueError, stats.rounds, 5, 0)


class TestTakeTurns(testtools.TestCase):

    def test_blocks_of_each_service_in_turn(self):
        calls, after = [], []

        def trial(name, i):
            calls.append('%s%d' % (name, i))
            got = {'arq_list': i / 1000.0}
            if i % 2 == 0:
                got['patch_to_event'] = (100 if name == 'c' else 0) + i
            return got

        samples, first = upstream.take_turns(
            ['a', 'c'], stats.rounds(8, 3), trial, after.append)
        # A whole block of one service, then of the other; never a
        # service's trial between two of the other's in one block.
        self.assertEqual(['a0', 'a1', 'a2', 'c0', 'c1', 'c2',
                          'a3', 'a4', 'a5', 'c3', 'c4', 'c5',
                          'a6', 'a7', 'c6', 'c7'], calls)
        self.assertEqual(['a', 'c'] * 3, after)
        self.assertEqual([0, 2, 4, 6], samples['a']['patch_to_event'])
        self.assertEqual([100, 102, 104, 106],
                         samples['c']['patch_to_event'])
        self.assertEqual(8, len(samples['c']['arq_list']))
        self.assertEqual([], samples['a']['bind_patch'])
        # The first trial of each block that timed patch_to_event (the
        # second block starts at trial 3, which timed the GET instead).
        self.assertEqual({'a': [0, 6], 'c': [100, 106]}, first)


def _s(p50):
    return {'n': 30, 'p50': p50, 'p95': p50 * 1.2, 'p99': p50 * 1.3,
            'min': p50 * 0.8, 'max': p50 * 1.4, 'samples_ms': [p50]}


def _upstream():
    ops = {op: _s(10.0) for op in upstream.OPS}
    cy = {op: _s(50.0) for op in upstream.OPS}
    floors = {op: stats.path_floor(op, 1.0, 0.5) for op in upstream.HEADLINE}
    return {'accel_backend': ops, 'cyborg': cy, 'trials': 30,
            'ratios_p50': {op: 5.0 for op in upstream.OPS},
            'floors': floors,
            'ratios_to_floor_p50': {op: 10 / 3.0 for op in upstream.HEADLINE},
            '_load': (0.4, 0.7)}


class TestUpstreamRatios(testtools.TestCase):

    def test_ratio_of_medians_with_bootstrap_interval(self):
        accel = [0.004 + 0.0001 * (i % 7) for i in range(40)]
        cyborg = [0.05 + 0.002 * (i % 11) for i in range(40)]
        samples = {side: {op: [] for op in upstream.OPS}
                   for side in ('accel_backend', 'cyborg')}
        samples['accel_backend']['patch_to_event'] = accel
        samples['cyborg']['patch_to_event'] = cyborg
        out = upstream.ratios(samples)
        want = statistics.median(cyborg) / statistics.median(accel)
        self.assertAlmostEqual(want, out['ratios_p50']['patch_to_event'])
        lo, hi = out['ci95']['patch_to_event']
        self.assertLessEqual(lo, want)
        self.assertGreaterEqual(hi, want)
        self.assertLess(lo, hi)
        self.assertGreater(lo, 1.0)
        # An operation without samples has neither.
        self.assertIsNone(out['ratios_p50']['arq_list'])
        self.assertNotIn('arq_list', out['ci95'])


class TestPresentation(testtools.TestCase):

    def test_upstream_headline_first_bare_patch_apart_labelled(self):
        rows = summary.summary_rows({'upstream': _upstream()})
        whats = [r[1] for r in rows]
        self.assertTrue(whats[0].startswith('HEADLINE patch_to_event'))
        self.assertIn('HEADLINE patch_to_get_bound', whats[2])
        self.assertIn('ours sends the event after answering, Cyborg '
                      'before', whats[-1])
        self.assertIn('2 HTTP x 1.00 ms + 1 commits x 0.50 ms = 2.50 ms',
                      rows[1][2])
        self.assertEqual('accel/floor 3.33x', rows[1][3])

    def test_summary_table_prints_each_measures_load(self):
        meta = {'date': 'd', 'machine': {'cpu': 'c', 'cores': 2},
                'quick': True}
        flow = {'not_measured': 'x', '_load': (1.5, 0.25)}
        out = summary.summary_table(meta, {'upstream': _upstream(),
                                           'flow': flow})
        self.assertIn('upstream 0.40 -> 0.70, flow 1.50 -> 0.25', out)

    def test_first_trial_of_each_block_reported(self):
        up = _upstream()
        up['block'] = 10
        up['first_of_block'] = {'accel_backend': _s(4.5),
                                'cyborg': _s(61.0)}
        rows = summary.summary_rows({'upstream': up})
        row = [r for r in rows if 'first trial of each block of 10' in r[1]]
        self.assertEqual('accel 4.5 / cyborg 61.0 ms', row[0][2])
        md = '\n'.join(sections.upstream_md(up))
        self.assertIn('First trial of each block of 10 (the other '
                      "service's block ran just before), patch_to_event "
                      'p50: accel_backend 4.5 ms, Cyborg 17 61.0 ms '
                      '(n=30, 30)', md)
        # Results files of turns by single trials have neither.
        self.assertFalse([r for r in summary.summary_rows(
            {'upstream': _upstream()}) if 'first trial' in r[1]])

    def test_upstream_ratio_with_interval(self):
        up = _upstream()
        up['ci95'] = {'patch_to_event': [4.0, 6.5]}
        rows = summary.summary_rows({'upstream': up})
        self.assertEqual('cyborg/accel 5.00x [4.00x, 6.50x]', rows[0][3])
        # No interval (older results files): the ratio alone.
        self.assertEqual('cyborg/accel 5.00x', rows[2][3])

    def test_boot_ratio_with_interval(self):
        b = {'accel_backend': _s(1300.0), 'ratio_a_b': 1.1,
             'ci95_a_b': (1.02, 1.19), 'ratio_a_c': 1.05}
        rows = summary.summary_rows({'boot': b})
        self.assertEqual('1.10x [1.02x, 1.19x], 1.05x', rows[-1][3])

    def test_markdown_without_matplotlib(self):
        # plots=False: the results file is written without importing
        # benchmarks.plots (matplotlib is only in the bench env).
        cloud = {k: _s(60.0) for k in ('total', 'placement', 'a_c', 'put',
                                       'accel_part')}
        cloud.update(other_hosts=100, candidates=516, ratio_p50=1.1,
                     ratio_total_to_placement={'n': 15, 'p50': 1.1,
                                               'p95': 1.2})
        flow = {'trials': 15, 'devices': 16, 'goal': 1.15,
                'clouds': [cloud]}
        meta = {'date': '2026-01-01 00:00 UTC', 'quick': True,
                'command': 'c', 'total_seconds': 1.0, 'versions': {},
                'machine': {'cpu': 'cpu', 'cores': 2, 'memory': '',
                            'os': '', 'kernel': ''}}
        with tempfile.TemporaryDirectory() as d:
            path = report.write(d, meta, {'upstream': _upstream(),
                                          'flow': flow}, plots=False)
            with open(path) as f:
                md = f.read()
            self.assertFalse([n for n in os.listdir(d)
                              if n.endswith('.png')])
        head = md.index('### Headline')
        bare = md.index('### Not quite like with like: the bare PATCH')
        self.assertLess(head, bare)
        self.assertIn('| patch_to_event |', md[head:bare])
        self.assertNotIn('bind_patch', md[head:bare])
        self.assertIn('| bare PATCH (both answer once the binding', md[bare:])
        self.assertIn('## 7. Nova-like flow', md)
        self.assertIn('### 100 other hosts (516 allocation candidates)', md)
        self.assertIn('goal <= 1.15', md)
        self.assertNotIn('## 8.', md)
