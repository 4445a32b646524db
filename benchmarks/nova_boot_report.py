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

"""The results of ``benchmarks.nova_boot``: a Markdown file, its JSON and
a PNG of the curves (matplotlib, when installed), in
``benchmarks/results/<date>-<machine>-<name>.*``.  Imports no Nova.

    python -m benchmarks.nova_boot_report <results .json>

writes the Markdown and the plot again from a JSON file (on a Python
with matplotlib, when the run had none)."""

import datetime
import json
import os
import statistics
import sys

from benchmarks import common
from benchmarks import report
from benchmarks import stats
from tools import machine

#: The flavors of a size, in the order they take turns.
FLAVORS = ('plain', 'gpu1', 'gpu8')
#: A boot's phases, in order (``benchmarks.nova_boot.phases``).
PHASES = ('api', 'scheduling', 'arq_create_bind', 'conductor',
          'event_wait', 'compute')
#: What the scheduling phase holds, timed apart (``nova_boot_marks``).
SCHEDULING = ('allocation_candidates', 'claim')
#: Kubernetes DRA's published scheduler_perf figure (issue 55).
DRA = ('Kubernetes DRA scheduler_perf: 500 nodes x 10 devices, 5,000 '
       'claims, at least 40 pods/s, typically above 51')
DRA_DIFFERS = (
    'What differs: scheduler_perf times kube-scheduler alone binding pods '
    'to fake nodes (no kubelet, no container start), many pods in '
    'flight, on a machine of its own; ours is the whole boot, API call '
    'to ACTIVE saved by nova-compute, through nova-api, nova-scheduler, '
    'nova-conductor, Placement, accel_backend and nova-compute, every '
    'one of them in one Python process on 2 shared cores, one boot at a '
    'time (and bursts of a few), 8 GPUs per host.')
#: An accelerator boot's goal against a plain one at the largest size.
GOAL = 1.3
RESAMPLES = 2000
EXTRAPOLATE_TO = 1000


def _ms(values):
    return [v * 1000.0 for v in values]


def rows(results):
    """One dict per size and flavor: ``hosts``, ``flavor``, ``n``,
    ``p50_ms``, ``p99_ms``, ``mean_ms``, ``post_p50_ms``, ``seq_per_s``
    (1 / mean boot), ``burst_per_s`` (or None), ``ratio``/``ci95`` against
    plain (None for plain), ``phases_ms`` (means, which add up to
    ``mean_ms``)."""
    out = []
    for r in results:
        plain = _ms(s['total_s'] for s in r.get('samples', {})
                    .get('plain', []))
        for flavor in FLAVORS:
            samples = r.get('samples', {}).get(flavor)
            if not samples:
                continue
            total = _ms(s['total_s'] for s in samples)
            row = {'hosts': r['hosts'], 'flavor': flavor, 'n': len(total),
                   'p50_ms': common.percentile(total, 50),
                   'p99_ms': common.percentile(total, 99),
                   'mean_ms': statistics.fmean(total),
                   'post_p50_ms': common.percentile(
                       _ms(s['post_s'] for s in samples), 50),
                   'phases_ms': {p: statistics.fmean(
                       s['phases_s'][p] * 1000.0 for s in samples)
                       for p in PHASES},
                   'ratio': None, 'ci95': None, 'burst_per_s': None,
                   'scheduling_ms': {k: statistics.fmean(
                       s.get('scheduling_s', {}).get(k, 0.0) * 1000.0
                       for s in samples) for k in SCHEDULING}}
            row['seq_per_s'] = 1000.0 / row['mean_ms']
            bursts = r.get('concurrent', {}).get(flavor)
            if bursts:
                row['burst_per_s'] = (r['concurrency'] * len(bursts) /
                                      sum(bursts))
            if flavor != 'plain' and plain:
                ratio, lo, hi = stats.bootstrap_ratio_ci(total, plain,
                                                         RESAMPLES)
                row['ratio'], row['ci95'] = ratio, (lo, hi)
            out.append(row)
    return out


def slope(table, flavor, key):
    """``(slope per host, value at EXTRAPOLATE_TO hosts)`` of ``key``
    against hosts for ``flavor`` (least squares), or None with fewer than
    two sizes."""
    pts = [(r['hosts'], r[key]) for r in table if r['flavor'] == flavor]
    if len(pts) < 2:
        return None
    fit = statistics.linear_regression([x for x, _ in pts],
                                       [y for _, y in pts])
    return fit.slope, fit.intercept + fit.slope * EXTRAPOLATE_TO


def _how(span):
    """How the boots were run (one Markdown paragraph); ``span``: the set
    of ``pool_numa_span`` values of the sizes."""
    return (
        'How (`benchmarks/nova_boot.py`): one process per size, Nova 34\'s '
        'functional harness: real nova-api, nova-scheduler (Nova\'s '
        'weighers and ours), nova-conductor and Placement, one '
        'nova-compute service per host with `accel.FakeDriver` (Nova\'s '
        '`SmallFakeDriver`: nothing is spawned), accel_backend over HTTP. '
        'Each host has 8 GPUs, 4 per NUMA node, reported by accel_backend\'s'
        ' own discovery and report code: host 1 by the embedded service '
        '(API, binder: it binds every ARQ and posts the event to Nova), '
        'every other host by an agent-role `Service` of its own in the '
        'same process and database, one discovery pass each; no row is '
        'written by hand. `[discovery] pool_numa_span` = %s (the code\'s '
        'default at the run): %s. Flavors 1 VCPU, 512 MB; plain, 1-GPU and'
        ' 8-GPU boots take turns, one at a time after a warm-up each; a '
        'server is deleted and its GPUs cleaned before the next boot '
        '(untimed). Heartbeats once an hour (`report_interval`), so 500 '
        'services do not write the database every 20 ms.' % (
            ', '.join(str(s).lower() for s in sorted(span)) or '-',
            'a pool of 4 per NUMA node, the 8-GPU profile two groups of 4'
            if span == {False} else 'one pool of 8, one group of 8'))


_PHASES_TEXT = (
    'A boot runs from `POST /servers` to nova-compute having saved '
    'it ACTIVE (return of `ComputeManager._build_and_run_instance`, '
    'no polling). Phases, from five Nova methods wrapped in the '
    'benchmark process only: *api* POST to `select_destinations` '
    'called (API work, build request, cast to the conductor); '
    '*scheduling* `select_destinations` (allocation candidates, '
    'filters, weighers, allocation claim); *arq_create_bind* the '
    'conductor\'s `_create_and_bind_arq_for_instance` (ARQ POST and '
    'bind PATCH, accel_backend binds in the PATCH); *conductor* the '
    'rest of the conductor until the compute\'s '
    '`build_and_run_instance` runs; *event_wait* '
    '`_get_bound_arq_resources` (the wait for '
    '`accelerator-request-bound` and the ARQ read); *compute* the rest '
    'of the build. The means add up to the mean boot. `POST p50` is '
    'the API\'s own answer time, which overlaps scheduling.')


def markdown(results, meta):
    """The results file's text (str)."""
    table = rows(results)
    m, v = meta['machine'], meta['versions']
    span = {r.get('pool_numa_span') for r in results} - {None}
    title = '# Boots through Nova 34 at %s hosts, %s' % (
        ', '.join(str(r['hosts']) for r in results), meta['date'])
    L = [title, '',
         'Command: `%s` (%.0f s in all).' % (meta['command'],
                                             meta['total_seconds']), '',
         'Machine: %s, %s cores, %s, %s. Versions: python %s, nova %s, '
         'openstack-placement %s, nova-accel %s (git %s).' % (
             m['cpu'], m['cores'], m['memory'], m['os'], v['python'],
             v.get('nova'), v['openstack-placement'], v['nova-accel'],
             v.get('git')), '',
         _how(span), '', _PHASES_TEXT, '',
         '| hosts | flavor | boots | p50 ms | p99 ms | POST p50 ms | '
         'boots/s, one at a time | boots/s, bursts | x plain (95% CI) |',
         '|---|---|---|---|---|---|---|---|---|']
    for r in table:
        L.append('| %d | %s | %d | %.0f | %.0f | %.0f | %.2f | %s | %s |' % (
            r['hosts'], r['flavor'], r['n'], r['p50_ms'], r['p99_ms'],
            r['post_p50_ms'], r['seq_per_s'],
            '%.2f' % r['burst_per_s'] if r['burst_per_s'] else '-',
            '%.2f (%.2f-%.2f)' % ((r['ratio'],) + tuple(r['ci95']))
            if r['ratio'] else '-'))
    L += ['', 'Bursts: %s boots of one flavor posted at once, %s; only '
          'where there are at least that many hosts.' % (
              results[0].get('concurrency', 0),
              ', '.join('%d bursts per flavor at %d hosts' % (
                  len(r.get('concurrent', {}).get('plain', [])), r['hosts'])
                  for r in results)), '',
          '## Phases (mean ms)', '',
          '| hosts | flavor | %s | total |' % ' | '.join(PHASES),
          '|---|---|' + '---|' * (len(PHASES) + 1)]
    for r in table:
        L.append('| %d | %s | %s | %.0f |' % (
            r['hosts'], r['flavor'], ' | '.join(
                '%.1f' % r['phases_ms'][p] for p in PHASES),
            r['mean_ms']))
    L += ['', 'Within *scheduling* (mean ms): Nova\'s `GET '
          '/allocation_candidates`, its allocation claim (`PUT '
          '/allocations`, retries included) and the rest (host states, '
          'filters, weighers).', '',
          '| hosts | flavor | allocation candidates | claim | rest |',
          '|---|---|---|---|---|']
    for r in table:
        sc = r['scheduling_ms']
        L.append('| %d | %s | %.1f | %.1f | %.1f |' % (
            r['hosts'], r['flavor'], sc['allocation_candidates'],
            sc['claim'], r['phases_ms']['scheduling'] - sum(sc.values())))
    L += ['', '## Goal and growth', '']
    L += goals(table)
    loads = '; '.join(
        '%d hosts %.1f -> %.1f, max %.1f, mean %.1f (setup %.0f s of %.0f '
        's)' % (r['hosts'], r['load']['start'], r['load']['end'],
                r['load']['max'], r['load']['mean'], r.get('setup_s', 0),
                r['seconds']) for r in results)
    L += ['', '1-minute load average during each size (sampled every 5 '
          's): %s.' % loads, '',
          'External reference: %s. %s' % (DRA, DRA_DIFFERS)]
    for r in results:
        for err in r.get('errors', []):
            L += ['', 'Error at %d hosts: `%s`' % (
                r['hosts'], err.strip().splitlines()[-1][:300])]
    if meta.get('notes'):
        L += ['', '## Notes', '', meta['notes']]
    return '\n'.join(L) + '\n'


def goals(table):
    """The 1.3x goal at the largest size, where each accelerator boot's
    extra time goes, and the slopes (Markdown lines)."""
    if not table:
        return ['No boot was measured.']
    top = max(r['hosts'] for r in table)
    at = {r['flavor']: r for r in table if r['hosts'] == top}
    out = []
    plain = at.get('plain')
    for flavor in ('gpu1', 'gpu8'):
        r = at.get(flavor)
        if not r or not plain:
            continue
        extra = {p: r['phases_ms'][p] - plain['phases_ms'][p]
                 for p in PHASES}
        out.append(
            '* %s at %d hosts: %.2fx a plain boot, ratio of p50s (95%% CI '
            '%.2f-%.2f; goal <= %.1fx: %s). Its extra %.0f ms (means) by '
            'phase: %s.' % (
                flavor, top, r['ratio'], r['ci95'][0], r['ci95'][1], GOAL,
                ('met' if r['ci95'][1] <= GOAL else
                 'met by the p50s, the interval reaching above')
                if r['ratio'] <= GOAL else 'NOT met',
                r['mean_ms'] - plain['mean_ms'], ', '.join(
                    '%s %+.0f' % kv for kv in sorted(
                        extra.items(), key=lambda kv: -abs(kv[1])))))
    for flavor in FLAVORS:
        p50 = slope(table, flavor, 'p50_ms')
        mean = slope(table, flavor, 'mean_ms')
        if p50 and mean:
            out.append(
                '* %s: p50 %+.2f ms per host, %.0f ms at %d hosts on this '
                'line; mean %+.2f ms per host, %.0f ms, so %.2f boots/s one '
                'at a time at %d hosts.' % (
                    flavor, p50[0], p50[1], EXTRAPOLATE_TO, mean[0], mean[1],
                    1000.0 / mean[1], EXTRAPOLATE_TO))
    bursts = [r for r in table if r['hosts'] == top and r['burst_per_s']]
    if bursts:
        out.append('* In bursts at %d hosts: %s boots/s; %s.' % (
            top, ', '.join('%s %.2f' % (r['flavor'], r['burst_per_s'])
                           for r in bursts), DRA))
    return out


def plot(results, path):
    """p50/p99 against hosts with the line to 1,000 hosts, and the phase
    means per size and flavor, to ``path`` (PNG); False without
    matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    table = rows(results)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    for flavor in FLAVORS:
        pts = [r for r in table if r['flavor'] == flavor]
        if not pts:
            continue
        x = [r['hosts'] for r in pts]
        line = left.plot(x, [r['p50_ms'] for r in pts], marker='o',
                         label='%s p50' % flavor)[0]
        left.plot(x, [r['p99_ms'] for r in pts], marker='x', ls=':',
                  color=line.get_color(), label='%s p99' % flavor)
        fit = slope(table, flavor, 'p50_ms')
        if fit:
            left.plot([x[-1], EXTRAPOLATE_TO], [pts[-1]['p50_ms'], fit[1]],
                      ls='--', color=line.get_color(), alpha=0.5)
    left.set_xlabel('hosts (8 GPUs each); dashed: p50 line to %d' %
                    EXTRAPOLATE_TO)
    left.set_ylabel('POST to ACTIVE, ms')
    left.legend(fontsize=8)
    labels, bottom = [], [0.0] * len(table)
    for phase in PHASES:
        vals = [r['phases_ms'][phase] for r in table]
        right.bar(range(len(table)), vals, bottom=bottom, label=phase)
        bottom = [b + v for b, v in zip(bottom, vals)]
    labels = ['%d\n%s' % (r['hosts'], r['flavor']) for r in table]
    right.set_xticks(range(len(table)), labels, fontsize=7)
    right.set_ylabel('mean ms')
    right.set_title('phases')
    right.legend(fontsize=8)
    fig.suptitle('Boots through Nova 34, accel_backend, our weigher')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write(results, name, seconds, argv, plots=True):
    """Write ``<date>-<machine>-<name>.json/.md/.png`` under
    ``benchmarks/results``; returns the Markdown's path."""
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {'date': now.strftime('%Y-%m-%d %H:%M UTC'),
            'machine': machine.machine_info(), 'versions': machine.versions(),
            'total_seconds': seconds,
            'command': ' '.join(['python -m benchmarks.nova_boot'] +
                                list(argv))}
    base = os.path.join(common.REPO, 'benchmarks', 'results', '%s-%s-%s' % (
        now.strftime('%Y-%m-%d'), report._slug(meta), name))
    with open(base + '.json', 'w') as f:
        json.dump({'meta': meta, 'results': results}, f, indent=1)
    return render(base + '.json', plots=plots)


def render(json_path, plots=True):
    """(Re)write the Markdown, and the PNG when ``plots``, beside
    ``json_path``; returns the Markdown's path."""
    with open(json_path) as f:
        data = json.load(f)
    base = json_path[:-len('.json')]
    text = markdown(data['results'], data['meta'])
    if plots and plot(data['results'], base + '.png'):
        text += '\n![boots](%s.png)\n' % os.path.basename(base)
    elif os.path.exists(base + '.png'):
        text += '\n![boots](%s.png)\n' % os.path.basename(base)
    with open(base + '.md', 'w') as f:
        f.write(text)
    return base + '.md'


if __name__ == '__main__':
    print(render(sys.argv[1]))
