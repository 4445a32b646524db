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

"""The arithmetic of comparing like with like: each path's floor from its
round trips and commits, the bootstrap confidence interval of a ratio of
medians, and the interleaved order of samples.

Pure functions (no servers, no clock), unit-tested in
``tests/unit/test_bench_stats.py``.
"""

import random
import statistics

#: The HTTP exchanges and database commits each measured path cannot do
#: without, on its critical path (what the clock waits for): the binding
#: must be committed before the event is sent (and before a GET may show
#: it), and the ARQs before they can be bound.  The embedded service
#: measured does exactly that: ``PATCH /v2/accelerator_requests`` commits
#: the binding (``BindStarted`` and ``Bound`` in one transaction) and
#: answers 202, then POSTs the event to Nova
#: (``os-server-external-events``, Nova API 2.1);
#: ``POST /v2/accelerator_requests`` commits the new ARQs.
PATHS = {
    'patch_to_event': {
        'http': 2, 'commits': 1,
        'what': 'PATCH request/answer + event POST to Nova; commits the '
                'binding'},
    'patch_to_get_bound': {
        'http': 2, 'commits': 1,
        'what': 'PATCH request/answer + the GET that shows Bound; commits '
                'the binding'},
    'create_bind_event': {
        'http': 3, 'commits': 2,
        'what': 'POST ARQs + PATCH + event POST to Nova; commits the '
                'ARQs, the binding'},
}


def path_floor(path, http_ms, commit_ms):
    """The floor of ``path``: ``n_http * http_ms + n_commits * commit_ms``.

    :param path: a key of ``PATHS`` (str).
    :param http_ms: p50 of one HTTP round trip to the same server stack
        answering a trivial route (milliseconds, float), or None.
    :param commit_ms: p50 of one commit on the same database engine and
        driver (milliseconds, float), or None.
    :returns: ``{'path', 'http', 'commits', 'what', 'ms', 'formula'}``;
        ``ms`` is None when a primitive is None.
    :raises KeyError: ``path`` is not in ``PATHS``.
    """
    p = PATHS[path]
    unknown = '%d HTTP x ? + %d commits x ?' % (p['http'], p['commits'])
    out = dict(p, path=path, ms=None, formula=unknown)
    if http_ms is None or commit_ms is None:
        return out
    out['ms'] = p['http'] * http_ms + p['commits'] * commit_ms
    out['formula'] = '%d HTTP x %.2f ms + %d commits x %.2f ms = %.2f ms' % (
        p['http'], http_ms, p['commits'], commit_ms, out['ms'])
    return out


def bootstrap_ratio_ci(a, b, resamples=2000, confidence=0.95, seed=0):
    """The ratio of medians ``median(a) / median(b)`` with a percentile
    bootstrap confidence interval: ``resamples`` times, each sample list
    is drawn again with replacement (same size) and the ratio of the
    medians taken; the interval is the central ``confidence`` part of
    those ratios.

    :param a: samples (list of numbers, any unit, same unit as ``b``).
    :param b: samples (list of numbers); ``median(b)`` must not be 0.
    :param resamples: how many bootstrap resamples (int, >= 1).
    :param confidence: in (0, 1), e.g. 0.95.
    :param seed: for ``random.Random`` (same seed, same interval).
    :returns: ``(ratio, low, high)`` (floats).
    :raises ValueError: an empty sample list, a zero median of ``b``,
        ``resamples`` < 1 or ``confidence`` outside (0, 1).
    """
    if not a or not b:
        raise ValueError('bootstrap needs samples on both sides '
                         '(got %d and %d)' % (len(a), len(b)))
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError('resamples must be >= 1 and confidence in (0, 1)')
    mb = statistics.median(b)
    if mb == 0:
        raise ValueError('the median of the denominator samples is 0')
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        ra = statistics.median(rng.choices(a, k=len(a)))
        rb = statistics.median(rng.choices(b, k=len(b)))
        if rb:
            ratios.append(ra / rb)
    ratios.sort()
    tail = (1 - confidence) / 2
    lo = ratios[int(tail * (len(ratios) - 1))]
    hi = ratios[int(round((1 - tail) * (len(ratios) - 1)))]
    return statistics.median(a) / mb, lo, hi


def interleaved(keys, count):
    """The order in which to take ``count`` samples of each of ``keys``,
    one of each in turn (ABCABC..., never AAA BBB), so that drift in the
    machine's speed falls on all alike.

    :param keys: the things to sample (sequence, order kept).
    :param count: samples per key (int >= 0).
    :returns: a list of ``len(keys) * count`` keys.
    """
    return [k for _ in range(count) for k in keys]


def rounds(total, per_round):
    """Split ``total`` samples into rounds of at most ``per_round``, for
    things that cannot be interleaved one by one (two test harnesses that
    cannot run at once alternate by rounds instead).

    :param total: samples in all (int >= 0).
    :param per_round: the most in one round (int >= 1).
    :returns: list of round sizes summing to ``total``, e.g. ``rounds(25,
        10) == [10, 10, 5]``.
    :raises ValueError: ``per_round`` < 1 or ``total`` < 0.
    """
    if per_round < 1 or total < 0:
        raise ValueError('need total >= 0 and per_round >= 1, got %r, %r'
                         % (total, per_round))
    full, rest = divmod(total, per_round)
    return [per_round] * full + ([rest] if rest else [])
