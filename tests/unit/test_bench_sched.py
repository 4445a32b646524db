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

"""Measure 8's arithmetic and presentation (``benchmarks.sched``,
``benchmarks.sections.sched_md``, ``benchmarks.summary``): the query Nova
sends per layout and N, the candidates each layout answers, the trees
written into Placement, the 8/1 ratios with their timeouts.  The measure
against a real Placement is ``tests/functional/test_bench_measures.py``'s.
"""

import urllib.parse

import testtools

from benchmarks import flow_gpus
from benchmarks import sched
from benchmarks import sections
from benchmarks import summary


def _params(path):
    return urllib.parse.parse_qs(path.split('?', 1)[1])


class TestQuery(testtools.TestCase):

    def test_per_device_asks_one_isolated_group_per_gpu(self):
        q = _params(sched.query('per_device', 8))
        groups = sorted(k for k in q if k.startswith('resources') and
                        k != 'resources')
        self.assertEqual(['resourcesdevice_profile_%d' % i
                          for i in range(8)], groups)
        self.assertEqual({'PGPU:1'}, {q[g][0] for g in groups})
        self.assertEqual(['isolate'], q['group_policy'])
        self.assertEqual(['CUSTOM_NVIDIA_T4'],
                         q['requireddevice_profile_7'])

    def test_pooled_asks_one_group_of_n_without_a_policy(self):
        q = _params(sched.query('pooled', 8))
        self.assertEqual(['PGPU:8'], q['resourcesdevice_profile_0'])
        self.assertNotIn('resourcesdevice_profile_1', q)
        self.assertNotIn('group_policy', q)

    def test_what_nova_adds(self):
        q = _params(sched.query('pooled', 1))
        self.assertEqual(['1000'], q['limit'])
        self.assertEqual(['MEMORY_MB:512,VCPU:1'], q['resources'])
        self.assertEqual(['COMPUTE_ACCELERATORS,!COMPUTE_STATUS_DISABLED'],
                         q['root_required'])

    def test_numa_pools_split_eight_in_two_groups_of_four(self):
        self.assertEqual(['4', '4'], [g['resources:PGPU'] for g in
                                      sched.device_profile('pooled_numa',
                                                           8)])
        self.assertEqual(['4'], [g['resources:PGPU'] for g in
                                 sched.device_profile('pooled_numa', 4)])
        q = _params(sched.query('pooled_numa', 8))
        self.assertEqual(['isolate'], q['group_policy'])


class TestExpectedCandidates(testtools.TestCase):

    def test_per_device_grows_as_permutations(self):
        # 8, 8x7, 8x7x6x5 ordered assignments per host, capped by limit.
        self.assertEqual([8, 56, 1000, 1000], [
            sched.expected_candidates('per_device', n, 1)
            for n in sched.GPUS])
        self.assertEqual(16, sched.expected_candidates('per_device', 1, 2))

    def test_pooled_is_one_candidate_per_host_whatever_n(self):
        self.assertEqual([100] * 4, [
            sched.expected_candidates('pooled', n, 100)
            for n in sched.GPUS])
        self.assertEqual([200] * 4, [
            sched.expected_candidates('pooled_numa', n, 100)
            for n in sched.GPUS])
        self.assertEqual(1000, sched.expected_candidates('pooled', 1, 5000))


class TestTrees(testtools.TestCase):

    def _rows(self, layout, hosts=2):
        ids = {name: i for i, name in enumerate(
            ('COMPUTE_ACCELERATORS', 'OWNER_CYBORG', 'CUSTOM_NVIDIA_T4',
             'CUSTOM_NUMA_NODE_0', 'CUSTOM_NUMA_NODE_1'))}
        return sched._trees(hosts, layout, 99, ids, None), ids

    def test_pgpu_totals_per_layout(self):
        for layout, want in (('per_device', [1] * 8), ('pooled', [8]),
                             ('pooled_numa', [4, 4])):
            (rps, invs, _t), _ids = self._rows(layout, hosts=1)
            self.assertEqual(want, [i['total'] for i in invs
                                    if i['resource_class_id'] == 99])
            self.assertEqual(1 + len(want), len(rps))
            self.assertEqual({rps[0]['id']}, {
                r['root_provider_id'] for r in rps})

    def test_numa_pools_carry_their_node(self):
        (rps, _i, traits), ids = self._rows('pooled_numa', hosts=1)
        numa = {t['resource_provider_id']: t['trait_id'] for t in traits
                if t['trait_id'] in (ids['CUSTOM_NUMA_NODE_0'],
                                     ids['CUSTOM_NUMA_NODE_1'])}
        self.assertEqual({rps[1]['id']: ids['CUSTOM_NUMA_NODE_0'],
                          rps[2]['id']: ids['CUSTOM_NUMA_NODE_1']}, numa)

    def test_provider_ids_unique_across_hosts(self):
        (rps, _i, _t), _ids = self._rows('per_device', hosts=3)
        self.assertEqual(27, len({r['id'] for r in rps}))


def _result():
    ok = {'status': 'ok', 'n': 8, 'p50': 20.0, 'p95': 25.0,
          'candidates': 8}
    cells = {'per_device': {1: ok, 2: dict(ok, p50=40.0, candidates=56),
                            4: {'status': 'timeout'},
                            8: {'status': 'skipped'}},
             'pooled': {1: dict(ok, candidates=1), 2: dict(ok, p50=22.0),
                        4: dict(ok, p50=21.0), 8: dict(ok, p50=24.0)}}
    return {'sizes': [{'hosts': 100, 'layouts': cells,
                       'ratio_8_to_1': sched.ratios(cells)}],
            'limit': 1000, 'timeout_s': sched.TIMEOUT, 'goal': 1.5,
            'cell_budget_s': 60.0}


class TestPresentation(testtools.TestCase):

    def test_ratios(self):
        r = _result()['sizes'][0]['ratio_8_to_1']
        self.assertAlmostEqual(1.2, r['pooled'])
        # 8 GPUs skipped after 4 timed out: at least 30 s / 20 ms.
        self.assertEqual('>= 1500', r['per_device'])
        self.assertEqual({'x': '-'}, sched.ratios({'x': {1: {}}}))

    def test_section_table(self):
        md = '\n'.join(sections.sched_md(_result()))
        self.assertIn('| 100 | per_device | 20.0 (25.0) ms, n=8, 8 cand. | '
                      '40.0 (25.0) ms, n=8, 56 cand. | timeout | skipped | '
                      '>= 1500 |', md)
        self.assertIn('| 100 | pooled |', md)
        self.assertIn('1.20x |', md)
        self.assertIn('<= 1.5x 1 GPU', md)

    def test_summary_rows(self):
        rows = summary.summary_rows({'sched': _result()})
        self.assertEqual([('8 sched', '100 hosts x 8 GPUs, per_device: a_c '
                           'for 1 GPU p50; 8 GPUs / 1 GPU', '20.0 ms',
                           '>= 1500'),
                          ('8 sched', '100 hosts x 8 GPUs, pooled: a_c for '
                           '1 GPU p50; 8 GPUs / 1 GPU', '20.0 ms', '1.20x')],
                         rows)

    def test_not_measured(self):
        self.assertEqual(['', '## 8. Scheduling cost against GPUs per '
                          'request', '', 'Not measured: failed: x'],
                         sections.sched_md({'not_measured': 'failed: x'}))


class TestFlowGpus(testtools.TestCase):
    """Measure 9's bind mapping and ratio (``benchmarks.flow_gpus``)."""

    def test_each_arq_goes_to_its_groups_provider(self):
        # Placement's mappings of Nova's query: one key per group suffix.
        mappings = {'': ['root'], 'device_profile_1': ['rp-b'],
                    'device_profile_0': ['rp-a'],
                    'device_profile_10': ['rp-k']}
        self.assertEqual(['rp-a', 'rp-b', 'rp-k'], [
            flow_gpus.provider_of(mappings, i) for i in (0, 1, 10)])
        self.assertRaises(RuntimeError, flow_gpus.provider_of, mappings, 2)

    def test_ratio_of_totals_or_a_bound_past_the_timeout(self):
        def ok(p50):
            return {'status': 'ok', 'total': {'p50': p50}}
        self.assertAlmostEqual(1.25, flow_gpus.ratio({1: ok(40.0),
                                                      8: ok(50.0)}))
        # 8 GPUs timed out: at least the timeout over 1 GPU's p50.
        self.assertEqual('>= %.0f' % (sched.TIMEOUT * 1000 / 40.0),
                         flow_gpus.ratio({1: ok(40.0),
                                          8: {'status': 'timeout'}}))
        self.assertIsNone(flow_gpus.ratio({1: {'status': 'timeout'}}))
