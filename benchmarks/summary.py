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

"""The summary of a benchmark run: its rows (in the Markdown file and on
stdout) and the plain-text table ``benchmarks.run`` prints."""

from benchmarks import common
from benchmarks import upstream


def f(v, fmt='%.1f'):
    """``fmt % v``, or ``-`` for None."""
    return '-' if v is None else fmt % v


def x(v):
    """A ratio as ``1.23x``, or ``-`` for None."""
    return '-' if v is None else '%.2fx' % v


def x_ci(ratio, lo_hi=None):
    """``1.10x [1.02x, 1.19x]``: a ratio with its bootstrap interval
    ``(low, high)`` when there is one, else ``1.10x``."""
    if not lo_hi:
        return x(ratio)
    return '%s [%s, %s]' % (x(ratio), x(lo_hi[0]), x(lo_hi[1]))


def ci(res, name):
    """``x_ci`` of the ratio ``ratio_<name>`` of a boot result and its
    interval ``ci95_<name>``."""
    return x_ci(res.get('ratio_' + name), res.get('ci95_' + name))


def loads(results):
    """``boot 0.9 -> 2.0, roundtrip ...``: each measure's 1-minute load
    average at its start and end (``_load``), ``(rerun)`` where it ran
    twice."""
    out = []
    for k, r in results.items():
        if isinstance(r, dict) and r.get('_load'):
            out.append('%s %.2f -> %.2f%s' % (
                k, r['_load'][0], r['_load'][1],
                ' (rerun; other run %.2f -> %.2f)' % tuple(
                    r['_load_other_run']) if r.get('_reruns') else ''))
    return ', '.join(out)


def _boot(b, rows):
    for key, label in (('accel_backend', 'a: accel flavor, accel_backend'),
                       ('nova_fake', 'b: accel flavor, Nova fake'),
                       ('no_accelerator', 'c: no accelerator')):
        if key in b:
            rows.append(('1 boot', label + ' (median of %d)' % b[key]['n'],
                         '%s ms' % f(b[key]['p50'], '%.0f'), ''))
    rows.append(('1 boot', 'ratio of medians a/b, a/c [bootstrap 95% CI]',
                 '', '%s, %s' % (ci(b, 'a_b'), ci(b, 'a_c'))))


def _roundtrip(rt, rows):
    for db in common.DATABASES:
        r = rt.get(db)
        if not r:
            continue
        if common.not_measured(r):
            rows.append(('2 ARQ round trip', db, 'not measured: ' +
                         r['not_measured'], ''))
            continue
        for path, label, by_n in (
                ('create_bind_event', 'create+bind+event', r['sizes']),
                ('patch_to_event', 'PATCH->event',
                 r.get('patch_to_event', {}))):
            fl = r.get('floors', {}).get(path)
            if fl:
                rows.append(('2 ARQ round trip', '%s %s floor' % (db, label),
                             fl['formula'], ''))
            for n, s in sorted(by_n.items(), key=lambda kv: int(kv[0])):
                rows.append(('2 ARQ round trip', '%s, %s, %s ARQs '
                             '(p50/p95/p99)' % (db, label, n),
                             '%s / %s / %s ms' % (
                                 f(s['p50']), f(s['p95']), f(s['p99'])),
                             '%s floor' % x(s.get('ratio_p50_to_floor'))))


def _upstream(up, rows):
    def row(op, label):
        a, c = up['accel_backend'].get(op), up['cyborg'].get(op)
        if a and c:
            rows.append(('3 vs Cyborg 17', label + ' p50 (p95)',
                         'accel %s (%s) / cyborg %s (%s) ms' % (
                             f(a['p50']), f(a['p95']), f(c['p50']),
                             f(c['p95'])),
                         'cyborg/accel %s' % x_ci(
                             up['ratios_p50'].get(op),
                             up.get('ci95', {}).get(op))))
    for op in upstream.HEADLINE:
        row(op, 'HEADLINE ' + op)
        fl = up.get('floors', {}).get(op)
        if fl:
            rows.append(('3 vs Cyborg 17', '  %s floor (accel side)' % op,
                         fl['formula'], 'accel/floor %s' % x(
                             up.get('ratios_to_floor_p50', {}).get(op))))
    fb = up.get('first_of_block') or {}
    if fb.get('accel_backend') and fb.get('cyborg'):
        rows.append(('3 vs Cyborg 17', '  patch_to_event p50, first trial '
                     'of each block of %s' % up.get('block'),
                     'accel %s / cyborg %s ms' % (
                         f(fb['accel_backend']['p50']),
                         f(fb['cyborg']['p50'])), ''))
    for op in upstream.OTHER:
        row(op, op)
    for op in upstream.BARE:
        row(op, upstream.BARE_LABEL)


def _flow(fl, rows):
    for c in fl['clouds']:
        cloud = '%d other hosts, %d candidates' % (c['other_hosts'],
                                                   c['candidates'])
        rows.append(('7 Nova-like flow', '%s: total (create, a_c, PUT, '
                     'PATCH, event) p50 (p95), n=%d' % (
                         cloud, c['total']['n']),
                     '%s (%s) ms' % (f(c['total']['p50']),
                                     f(c['total']['p95'])), ''))
        rows.append(('7 Nova-like flow', '%s: its Placement calls (a_c + '
                     'PUT) p50 (p95)' % cloud, '%s (%s) ms' % (
                         f(c['placement']['p50']),
                         f(c['placement']['p95'])),
                     'total/Placement %s (per-trial p50 %s; goal <= %.2f)'
                     % (x(c['ratio_p50']),
                        x(c['ratio_total_to_placement']['p50']),
                        fl['goal'])))


def _concurrency(results, rows):
    for db, c in ((d, results[d]) for d in common.DATABASES if d in results):
        if common.not_measured(c):
            rows.append(('4 concurrency', db, c['not_measured'], ''))
            continue
        rows.append(('4 concurrency', '%s, %d binds / %d devices: '
                     'throughput' % (db, c['binds'], c['devices']),
                     '%.0f PATCH/s, %.0f binds+events/s' % (
                         c['patch_throughput_per_s'],
                         c['bind_throughput_per_s']), ''))
        rows.append(('4 concurrency', '%s, bound twice / losers '
                     'BindFailed+failed event / deadlocks' % db,
                     '%d / %d of %d / %d' % (
                         c['handles_bound_twice'] + c['rps_bound_twice'],
                         c['losers_bindfailed_with_failed_event'],
                         c['losers'], c.get('deadlocks', 0)),
                     'OK' if c['ok'] else 'NOT OK'))


def _scale(s, rows):
    db = s['db']
    if not common.not_measured(db):
        for n, step in sorted(db['steps'].items(),
                              key=lambda kv: int(kv[0])):
            rows.append(('5 scale', '%d nodes x 8, %s ARQs: by instance /'
                         ' devices by host / profile by name (p50)'
                         % (db['hosts'], n), '%s / %s / %s ms' % (
                             f(step['arq_list_by_instance']['p50']),
                             f(step['device_list_by_host']['p50']),
                             f(step['device_profile_by_name']['p50'])),
                         ''))
    ag = s['agent']
    if not common.not_measured(ag):
        for k, label in (('initial', 'initial report'),
                         ('resync_no_change', 'no-change resync')):
            rows.append(('5 scale', 'agent, %d devices: %s'
                         % (ag['devices'], label), '%d calls, %.2f s' % (
                             ag[k]['placement_calls'], ag[k]['seconds']),
                         ''))


def _weigher(w, rows):
    for r in w['sizes']:
        rows.append(('6 weigher', '%d hosts: weigh / a_c p50' % r['hosts'],
                     '%s / %s ms' % (f(r['weigh']['p50'], '%.3f'),
                                     f(r['a_c']['p50'])),
                     x(common.ratio(r['weigh']['p50'], r['a_c']['p50']))))


def _sched(s, rows):
    for size in s['sizes']:
        for lay, r in size['ratio_8_to_1'].items():
            one = size['layouts'][lay].get(1) or size['layouts'][lay].get(
                '1') or {}
            rows.append(('8 sched', '%d hosts x 8 GPUs, %s: a_c for 1 GPU '
                         'p50; 8 GPUs / 1 GPU' % (size['hosts'], lay),
                         '%s ms' % f(one.get('p50')),
                         r if isinstance(r, str) else x(r)))


def _flow_gpus(fg, rows):
    for c in fg['clouds']:
        for lay, r in c['ratio_8_to_1'].items():
            one = c['layouts'][lay].get(1) or c['layouts'][lay].get(
                '1') or {}
            rows.append(('9 flow, GPUs', '%d other hosts, %s: flow for 1 '
                         'GPU p50; 8 GPUs / 1 GPU' % (c['other_hosts'], lay),
                         '%s ms' % f((one.get('total') or {}).get('p50')),
                         r if isinstance(r, str) else x(r)))


SECTIONS = (('boot', '1 boot', _boot), ('roundtrip', '2 ARQ round trip',
                                        _roundtrip),
            ('upstream', '3 vs Cyborg 17', _upstream),
            ('concurrency', '4 concurrency', _concurrency),
            ('scale', '5 scale', _scale), ('weigher', '6 weigher', _weigher),
            ('flow', '7 Nova-like flow', _flow),
            ('sched', '8 sched', _sched),
            ('flow_gpus', '9 flow, GPUs', _flow_gpus))


def summary_rows(results):
    """``[(measure, what, value, ratio)]`` for the summary table.

    :param results: ``{measure: result dict}`` as ``benchmarks.run``
        collects them.
    """
    rows = []
    for key, label, fn in SECTIONS:
        r = results.get(key)
        if not r:
            continue
        if common.not_measured(r):
            rows.append((label, 'not measured', r['not_measured'], ''))
        else:
            fn(r, rows)
    return rows


def summary_table(meta, results):
    """The summary as a plain-text table for stdout, then the 1-minute
    load average at each measure's start and end.

    :param meta: the run's ``{'date', 'machine', 'quick', ...}``.
    :param results: ``{measure: result dict}``.
    """
    rows = [('measure', 'what', 'value', 'ratio')] + summary_rows(results)
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = ['', 'nova-accel benchmarks, %s, %s (%s cores)%s' % (
        meta['date'], meta['machine']['cpu'], meta['machine']['cores'],
        ', QUICK mode' if meta['quick'] else '')]
    for i, r in enumerate(rows):
        lines.append('  '.join(str(v).ljust(w) for v, w in zip(r, widths)))
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    lines += ['', '1-minute load average at start -> end of each measure '
              '(%s cores): %s' % (meta['machine']['cores'], loads(results))]
    return '\n'.join(lines)
