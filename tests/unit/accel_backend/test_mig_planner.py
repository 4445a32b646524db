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

"""The MIG repartitioning planner (``accel_backend.agent.mig.planner``):
unit tests, and a randomized run on a simulated host of eight H200s
compared with the best static layout.

``compare(seed, ops)`` is the randomized run, for benchmarks too: a
sequence of ``ops`` tenant operations (a request for a GI of a random
profile, or the release of a random live tenant) is played against

* the dynamic host: GPUs start empty; a request no free GI serves asks
  the planner for one free GI of its profile, the plan (which may
  repartition idle GPUs only) is carried out, then the request is
  served if a GI is free;
* one static host per allowed layout: all eight GPUs in that layout for
  the whole sequence.

Both serve a request with a free GI of exactly its profile, on the
busiest GPU that has one (packing keeps GPUs idle).  After every
operation of the dynamic run it checks that every GPU's layout follows
the rules, that no GPU with a GI in use was touched and that the
simulated host holds what the planner's plan said it would.
"""

import collections
import random

import testtools

from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import planner
from accel_backend.agent.mig import profiles

H200 = 'H200-SXM5-141GB'
GPUS = 8
#: The operator's allowed layouts in these tests.
ALLOWED = {H200: [
    ['7g.141gb'],
    ['4g.71gb', '3g.71gb'],
    ['3g.71gb', '3g.71gb'],
    ['3g.71gb', '2g.35gb', '1g.18gb', '1g.18gb'],
    ['2g.35gb', '2g.35gb', '2g.35gb', '1g.18gb'],
    ['1g.18gb'] * 7,
]}
#: What tenants ask for.
REQUESTED = ['1g.18gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb']
#: Operations per phase: each phase draws its own mix of profiles.
PHASE = 250
#: Live tenants at which a release is as likely as a request.
LOAD = 12


def workload(seed, ops):
    """``ops`` operations: ``('request', tenant, profile)`` or
    ``('release', tenant)``; the same for a seed whatever is served."""
    rng = random.Random(seed)
    live, sequence, weights = [], [], None
    for i in range(ops):
        if i % PHASE == 0:
            weights = [rng.random() ** 2 for _ in REQUESTED]
        if live and rng.random() < len(live) / (len(live) + LOAD):
            sequence.append(('release', live.pop(rng.randrange(len(live)))))
        else:
            tenant = len(sequence)
            sequence.append(('request', tenant,
                             rng.choices(REQUESTED, weights)[0]))
            live.append(tenant)
    return sequence


def instances(host):
    return {gpu: host.instances(gpu) for gpu in host.gpus()}


def take(host, in_use, profile):
    """A free GI of ``profile`` on the busiest GPU that has one, marked in
    use: ``(gpu, gi id)``, or None."""
    best = None
    for gpu in host.gpus():
        gis = host.instances(gpu)
        busy = sum(1 for gi in gis if (gpu, gi.id) in in_use)
        for gi in gis:
            if gi.profile == profile and (gpu, gi.id) not in in_use:
                if best is None or busy > best[0]:
                    best = (busy, (gpu, gi.id))
                break
    if best is None:
        return None
    in_use.add(best[1])
    return best[1]


def play(sequence, host, on_miss=None, after=None):
    """Play ``sequence`` on ``host``; ``on_miss(in_use, profile)`` runs
    when no free GI serves a request, ``after(in_use)`` after every
    operation.  Returns ``(requests, served)``."""
    in_use, held = set(), {}
    requests = served = 0
    for op in sequence:
        if op[0] == 'request':
            requests += 1
            got = take(host, in_use, op[2])
            if got is None and on_miss is not None:
                on_miss(in_use, op[2])
                got = take(host, in_use, op[2])
            if got is not None:
                served += 1
                held[op[1]] = got
        elif op[1] in held:
            in_use.discard(held.pop(op[1]))
        if after is not None:
            after(in_use)
    return requests, served


def static_share(sequence, names):
    host = mig_host.SimulatedMigHost({g: H200 for g in range(GPUS)})
    for gpu in host.gpus():
        for name, start in profiles.realize(H200, names):
            host.create(gpu, name, start)
    requests, served = play(sequence, host)
    return served / requests


def compare(seed, ops):
    """The randomized run (see the module docstring).

    :param seed: the workload's random seed (int).
    :param ops: the number of tenant operations (int).
    :returns: dict: ``requests``, ``dynamic_served``,
        ``dynamic_share``, ``static_shares`` (layout, as a
        ``'+'``-joined str -> share), ``best_static_layout``,
        ``best_static_share``, ``repartitions`` (GPUs repartitioned),
        ``host_operations`` (GI creates and destroys), and the
        violations seen: ``invalid_layouts``, ``busy_gpu_touched``,
        ``belief_mismatches`` (all 0 when the planner is right).
    """
    sequence = workload(seed, ops)
    models = {g: H200 for g in range(GPUS)}
    host = mig_host.SimulatedMigHost(models)
    believed = {g: [] for g in range(GPUS)}
    seen = collections.Counter()

    def on_miss(in_use, profile):
        now = instances(host)
        the_plan = planner.plan(now, models, in_use, ALLOWED, {profile: 1})
        busy = {gpu for gpu, _ in in_use}
        seen['busy_gpu_touched'] += sum(1 for s in the_plan.steps
                                        if s.gpu in busy)
        seen['repartitions'] += len({s.gpu for s in the_plan.steps})
        planner.execute(host, the_plan)
        believed.update(the_plan.layouts)

    def after(in_use):
        for gpu in host.gpus():
            layout = host.layout(gpu)
            if not profiles.valid_layout(H200, layout):
                seen['invalid_layouts'] += 1
            if layout != believed[gpu]:
                seen['belief_mismatches'] += 1

    requests, served = play(sequence, host, on_miss, after)
    statics = {'+'.join(names): static_share(sequence, names)
               for names in ALLOWED[H200]}
    best = max(statics, key=lambda k: (statics[k], k))
    return {
        'seed': seed, 'ops': ops, 'requests': requests,
        'dynamic_served': served, 'dynamic_share': served / requests,
        'static_shares': statics, 'best_static_layout': best,
        'best_static_share': statics[best],
        'repartitions': seen['repartitions'],
        'host_operations': len(host.calls),
        'invalid_layouts': seen['invalid_layouts'],
        'busy_gpu_touched': seen['busy_gpu_touched'],
        'belief_mismatches': seen['belief_mismatches'],
    }


def gi(gi_id, profile, start):
    return mig_host.GpuInstance(gi_id, profile, start)


class TestPlanner(testtools.TestCase):

    def test_met_target_plans_nothing(self):
        now = {0: [gi(1, '7g.141gb', 0)]}
        p = planner.plan(now, {0: H200}, set(), ALLOWED, {'7g.141gb': 1})
        self.assertEqual([], p.steps)
        self.assertEqual({0: [('7g.141gb', 0)]}, p.layouts)

    def test_busy_gpu_never_touched(self):
        now = {0: [gi(1, '4g.71gb', 0), gi(2, '3g.71gb', 4)],
               1: [gi(1, '7g.141gb', 0)]}
        models = {0: H200, 1: H200}
        # GPU 0 has a GI in use: only GPU 1 may change.
        p = planner.plan(now, models, {(0, 2)}, ALLOWED, {'1g.18gb': 3})
        self.assertEqual({1}, {s.gpu for s in p.steps})
        self.assertEqual(['1g.18gb'] * 7, [n for n, _ in p.layouts[1]])
        self.assertEqual(now[0], [gi(1, '4g.71gb', 0), gi(2, '3g.71gb', 4)])
        self.assertEqual([('4g.71gb', 0), ('3g.71gb', 4)], p.layouts[0])
        # Both busy: nothing to do.
        p = planner.plan(now, models, {(0, 2), (1, 1)}, ALLOWED,
                         {'1g.18gb': 3})
        self.assertEqual([], p.steps)

    def test_steps_destroy_then_create_and_keep_what_stays(self):
        now = {0: [gi(1, '3g.71gb', 0), gi(2, '3g.71gb', 4)]}
        p = planner.plan(now, {0: H200}, set(), ALLOWED, {'1g.18gb': 2})
        self.assertEqual([
            planner.Step('destroy', 0, '3g.71gb', 0, 1),
            planner.Step('create', 0, '2g.35gb', 0, None),
            planner.Step('create', 0, '1g.18gb', 2, None),
            planner.Step('create', 0, '1g.18gb', 3, None),
        ], p.steps)
        host = mig_host.SimulatedMigHost({0: H200})
        host.create(0, '3g.71gb', 0)
        host.create(0, '3g.71gb', 4)
        planner.execute(host, p)
        self.assertEqual(p.layouts[0], host.layout(0))

    def test_toward_target_across_gpus(self):
        now = {g: [] for g in range(3)}
        models = {g: H200 for g in range(3)}
        p = planner.plan(now, models, set(), ALLOWED,
                         {'7g.141gb': 1, '2g.35gb': 4, '1g.18gb': 1})
        got = collections.Counter(n for lay in p.layouts.values()
                                  for n, _ in lay)
        self.assertGreaterEqual(got['7g.141gb'], 1)
        self.assertGreaterEqual(got['2g.35gb'], 4)
        self.assertGreaterEqual(got['1g.18gb'], 1)
        for g, lay in p.layouts.items():
            self.assertIn(sorted(n for n, _ in lay),
                          [sorted(a) for a in ALLOWED[H200]] + [[]])
        # Deterministic.
        self.assertEqual(p, planner.plan(now, models, set(), ALLOWED,
                                         {'7g.141gb': 1, '2g.35gb': 4,
                                          '1g.18gb': 1}))

    def test_unreachable_target_partial(self):
        now = {0: []}
        p = planner.plan(now, {0: H200}, set(), ALLOWED, {'4g.71gb': 2})
        self.assertEqual([('4g.71gb', 0), ('3g.71gb', 4)], p.layouts[0])

    def test_model_without_allowed_layouts_untouched(self):
        now = {0: [], 1: []}
        p = planner.plan(now, {0: 'H100-SXM5-80GB', 1: H200}, set(),
                         ALLOWED, {'1g.18gb': 1})
        self.assertEqual({1}, {s.gpu for s in p.steps})

    def test_bad_allowed_layout(self):
        self.assertRaises(ValueError, planner.plan, {0: []}, {0: H200},
                          set(), {H200: [['4g.71gb', '4g.71gb']]},
                          {'4g.71gb': 1})

    def test_free_and_idle(self):
        now = {0: [gi(1, '3g.71gb', 0), gi(2, '3g.71gb', 4)],
               1: [gi(1, '7g.141gb', 0)], 2: []}
        self.assertEqual({'3g.71gb': 1, '7g.141gb': 1},
                         planner.free_counts(now, {(0, 1)}))
        self.assertEqual([1, 2], planner.idle_gpus(now, {(0, 1)}))


class TestRandomized(testtools.TestCase):

    def _check(self, result):
        print('seed %(seed)d, %(ops)d operations (%(requests)d requests): '
              'dynamic served %(dynamic_share).3f, best static '
              '%(best_static_share).3f (%(best_static_layout)s); '
              '%(repartitions)d GPUs repartitioned, %(host_operations)d '
              'GI creates and destroys' % result)
        self.assertEqual(0, result['invalid_layouts'])
        self.assertEqual(0, result['busy_gpu_touched'])
        self.assertEqual(0, result['belief_mismatches'])
        self.assertGreaterEqual(result['dynamic_share'],
                                result['best_static_share'])

    def test_eight_h200s(self):
        result = compare(1, 4000)
        self.assertGreaterEqual(result['requests'], 1000)
        self.assertGreaterEqual(result['host_operations'], 1000)
        self.assertGreater(result['repartitions'], 0)
        self._check(result)

    def test_more_seeds(self):
        for seed in (2, 3):
            self._check(compare(seed, 1000))

    def test_workload_is_the_seeds(self):
        self.assertEqual(workload(7, 300), workload(7, 300))
        self.assertNotEqual(workload(7, 300), workload(8, 300))
