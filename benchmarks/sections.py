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

"""The Markdown sections of the results file, one renderer per measure
(``benchmarks.report.write`` puts them together)."""

from benchmarks import common
from benchmarks import summary
from benchmarks import upstream

_f, _x = summary.f, summary.x


def stats_row(label, s):
    return '| %s | %d | %s | %s | %s | %s | %s |' % (
        label, s['n'], _f(s['p50']), _f(s['p95']), _f(s['p99']),
        _f(s['min']), _f(s['max']))


STATS_HEAD = ('| | n | p50 ms | p95 ms | p99 ms | min ms | max ms |\n'
              '|---|---|---|---|---|---|---|')


def not_measured(res):
    return ['Not measured: %s' % res['not_measured']]


def boot_md(b):
    """The boot section's table and ratios (list of lines)."""
    if not b:
        return []
    if common.not_measured(b):
        return not_measured(b)
    L = [STATS_HEAD]
    for k in ('accel_backend', 'nova_fake', 'no_accelerator',
              'no_accelerator_fake_harness'):
        if k in b:
            L.append(stats_row(k, b[k]))
    L += ['', 'Ratios of medians [bootstrap 95%% CI]: a/b = %s, a/c = %s.'
          % (summary.ci(b, 'a_b'), summary.ci(b, 'a_c'))]
    if b.get('errors'):
        L += ['', 'Errors: %s' % '; '.join(e[-300:] for e in b['errors'])]
    return L


def roundtrip_md(rt):
    """The round trip section (list of lines)."""
    L = ['', '## 2. ARQ round trip over HTTP (accel-backend process)', '',
         '`accel-backend` (cheroot, 8 threads, 4 binding workers) over a '
         'recorded sysfs tree of %s GPUs, reporting to a real Placement '
         '(gunicorn, SQLite, noauth2); events go to a Nova stub in a '
         'process of its own (cheroot, keep-alive) that timestamps their '
         'arrival (CLOCK_MONOTONIC, the clock of the timing client). '
         'Trial: POST ARQs for a profile '
         'asking for N GPUs, one PATCH binding all N to distinct devices, '
         'clock stops when the last event arrives; create+bind+event is '
         'timed from the POST, PATCH->event from the PATCH. Floor of each '
         'path: its HTTP exchanges x p50 of a `GET /v2` on the same server '
         '+ its commits x p50 of an INSERT+COMMIT on the same kind of '
         'database (WAL SQLite file with accel_backend\'s pragmas, or the '
         'same PostgreSQL server), measured in the same run.' % (
             (rt or {}).get('sqlite', {}).get('devices', 128)), '']
    if not rt:
        return L
    if common.not_measured(rt):
        return L + not_measured(rt)
    for db in common.DATABASES:
        r = rt.get(db)
        if not r:
            continue
        L += ['### %s' % db, '']
        if common.not_measured(r):
            L += not_measured(r) + ['']
            continue
        L += ['| path | its floor |', '|---|---|']
        for fl in r['floors'].values():
            L.append('| %s | %s (%s) |' % (fl['path'], fl['formula'],
                                           fl['what']))
        L += ['', STATS_HEAD]
        for path, by_n in (('create+bind+event', r['sizes']),
                           ('PATCH->event', r['patch_to_event'])):
            for n, s in sorted(by_n.items(), key=lambda kv: int(kv[0])):
                L.append(stats_row('%s, %s ARQs (%s floor)' % (
                    path, n, _x(s.get('ratio_p50_to_floor'))), s))
        L.append(stats_row('primitive: GET /v2', r['floor_http']))
        L.append(stats_row('primitive: commit', r['floor_commit']))
        L.append('')
    L.append('p99 of small samples is close to the maximum.')
    return L


def _upstream_rows(up, ops, label=None):
    L = []
    for op in ops:
        a, c = up['accel_backend'].get(op), up['cyborg'].get(op)
        if a and c:
            L.append('| %s | %s | %s | %s | %s | %s |' % (
                label or op, _f(a['p50']), _f(a['p95']), _f(c['p50']),
                _f(c['p95']), summary.x_ci(up['ratios_p50'].get(op),
                                           up.get('ci95', {}).get(op))))
    return L


def _first_of_block(up):
    """The line on the first trial of each block (lines)."""
    fb = up.get('first_of_block')
    if not fb or not all(fb.get(k) for k in ('accel_backend', 'cyborg')):
        return []
    a, c = fb['accel_backend'], fb['cyborg']
    return ['', 'First trial of each block of %s (the other service\'s '
            'block ran just before), patch_to_event p50: accel_backend %s '
            'ms, Cyborg 17 %s ms (n=%d, %d); counted in the rows above.'
            % (up.get('block'), _f(a['p50']), _f(c['p50']), a['n'],
               c['n'])]


def upstream_md(up):
    """The Cyborg 17 section: headline, other calls, the bare PATCH apart
    (list of lines)."""
    L = ['', '## 3. Against upstream openstack-cyborg 17.0.0', '']
    if not up:
        return L
    if common.not_measured(up):
        return L + not_measured(up)
    head = ('| %s | accel_backend p50 | p95 | Cyborg 17 p50 | p95 | '
            'Cyborg/accel (p50) [95%% CI] |')
    L += [up.get('setup', ''), '', '### Headline: until the ARQ is bound',
          '', 'PATCH sent -> its event at the Nova stub, and -> the first '
          'GET showing Bound: both services have bound the ARQ when the '
          'clock stops.', '', head % 'path', '|---|---|---|---|---|---|']
    L += _upstream_rows(up, upstream.HEADLINE)
    if up.get('floors'):
        L += ['', 'Floors (accel side, same run): %s.' % '; '.join(
            '%s: %s, accel/floor %s' % (
                op, fl['formula'],
                _x(up['ratios_to_floor_p50'].get(op)))
            for op, fl in up['floors'].items())]
    L += _first_of_block(up)
    L += ['', '### Other calls', '', head % 'operation',
          '|---|---|---|---|---|---|']
    L += _upstream_rows(up, upstream.OTHER)
    L += ['', '### Not quite like with like: the bare PATCH', '',
          'Both answer once the binding is committed (accel_backend binds '
          'in the PATCH\'s transaction; the fake driver\'s binds are '
          'instant in Cyborg 17), but accel_backend sends the event after '
          'its answer and Cyborg 17 before. Not a comparison of binding: '
          'see the headline.', '', head % 'request',
          '|---|---|---|---|---|---|']
    L += _upstream_rows(up, upstream.BARE, upstream.BARE_LABEL)
    counts = sorted({op: s.get('n') for op, s in up.get(
        'accel_backend', {}).items() if isinstance(s, dict)}.items())
    L += ['', 'Samples per side: %s.' % ', '.join(
        '%s %s' % (op, n) for op, n in counts if n is not None)]
    if up.get('notes'):
        L += [''] + ['- %s' % n for n in up['notes']]
    return L


def weigher_md(w):
    """The weigher section (list of lines)."""
    L = ['', '## 6. Weigher vs the request\'s allocation candidates', '']
    if not w:
        return []
    if common.not_measured(w):
        return L + not_measured(w)
    from benchmarks import weigher
    return L + [weigher.table(w)]


def flow_md(fl):
    """The Nova-like flow section (list of lines)."""
    if not fl:
        return []
    L = ['', '## 7. Nova-like flow against its Placement calls', '']
    if common.not_measured(fl):
        return L + not_measured(fl)
    L.append(
        'Per trial, one clock: POST ARQ -> GET /allocation_candidates '
        '(Placement 1.36, VCPU, MEMORY_MB and a PGPU group) -> PUT '
        '/allocations of the first candidate on accel-backend\'s host -> '
        'PATCH bind -> the event at the Nova stub; accel-backend over %d '
        'GPUs; per cloud, a real Placement of its own (gunicorn, SQLite) '
        'holding accel-backend\'s compute node and N others with 8 GPUs '
        'of the same kind each (3 allocated); %d trials after a warm-up.'
        % (fl['devices'], fl['trials']))
    for c in fl['clouds']:
        r = c['ratio_total_to_placement']
        L += ['', '### %d other hosts (%d allocation candidates)' % (
            c['other_hosts'], c['candidates']), '', STATS_HEAD,
            stats_row('total', c['total']),
            stats_row('Placement part (a_c + PUT)', c['placement']),
            stats_row('  of which a_c', c['a_c']),
            stats_row('  of which PUT', c['put']),
            stats_row('accelerator part (total - Placement)',
                      c['accel_part']), '',
            'total / Placement part: %s of p50s; per trial p50 %.2f, p95 '
            '%.2f (n=%d); goal <= %.2f.' % (
                _x(c['ratio_p50']), r['p50'], r['p95'], r['n'],
                fl['goal'])]
    return L


def _sched_cell(cell):
    """One (layout, N) cell: ``p50 (p95) ms, n, candidates`` or why not."""
    if not cell:
        return '-'
    if cell.get('status') != 'ok' or not cell.get('n'):
        return cell.get('status', '-')
    return '%s (%s) ms, n=%d, %d cand.%s' % (
        _f(cell['p50']), _f(cell['p95']), cell['n'], cell['candidates'],
        ' +1 timeout' if cell.get('late_timeouts') else '')


def sched_ratio(r):
    """An 8/1 ratio of ``benchmarks.sched.ratios`` as text."""
    return r if isinstance(r, str) else _x(r)


def sched_md(s):
    """The scheduling cost section: per cloud size and layout, p50 (p95)
    of ``GET /allocation_candidates`` for 1, 2, 4 and 8 GPUs, and the
    8-GPU / 1-GPU ratio (list of lines)."""
    if not s:
        return []
    L = ['', '## 8. Scheduling cost against GPUs per request', '']
    if common.not_measured(s):
        return L + not_measured(s)
    ns = sorted({int(n) for size in s['sizes']
                 for by_n in size['layouts'].values() for n in by_n})
    L += ['Nova 34\'s `GET /allocation_candidates` (Placement 1.36, '
          '`limit=%d`, a flavor of VCPU:1, MEMORY_MB:512 and a device '
          'profile of N GPUs: one request group per device profile group, '
          '`group_policy=isolate` with two or more) on hosts of 8 GPUs, '
          'each layout on a real Placement of its own (gunicorn, SQLite); '
          'per_device: 8 providers of PGPU 1 (N groups of 1); pooled: one '
          'provider of PGPU 8 (one group of N); pooled_numa: two of PGPU 4, '
          'one per NUMA node (one group, two of 4 for 8). Cells take turns '
          'sample by sample after a warm-up; a request has %.0f s '
          '(`timeout`: the larger N of that layout are then `skipped`); a '
          'cell stops after %.0f s of samples. p50 (p95), samples, '
          'candidates answered. Goal for pooled: 8 GPUs <= %.1fx 1 GPU.'
          % (s['limit'], s['timeout_s'], s['cell_budget_s'], s['goal']), '',
          '| hosts | layout | %s | 8 / 1 (p50) |' % ' | '.join(
              'N=%d' % n for n in ns),
          '|---|---|%s---|' % ('---|' * len(ns))]
    for size in s['sizes']:
        for lay, by_n in size['layouts'].items():
            L.append('| %d | %s | %s | %s |' % (
                size['hosts'], lay, ' | '.join(
                    _sched_cell(by_n.get(n, by_n.get(str(n))))
                    for n in ns),
                sched_ratio(size['ratio_8_to_1'].get(lay))))
    return L


def _flow_gpus_cell(cell):
    """One (layout, N) cell of measure 9: total and Placement part p50
    (p95) ms, or why not measured."""
    if not cell:
        return '-'
    if cell.get('status') != 'ok':
        return cell.get('status', '-')
    t, p = cell['total'], cell['placement']
    return '%s (%s) ms; Placement %s ms; n=%d, %d cand.' % (
        _f(t['p50']), _f(t['p95']), _f(p['p50']), t['n'],
        cell['candidates'])


def flow_gpus_md(fg):
    """The whole-flow section of 1 against 8 GPUs (list of lines)."""
    if not fg:
        return []
    L = ['', '## 9. The Nova-like flow for 1 and 8 GPUs', '']
    if common.not_measured(fg):
        return L + not_measured(fg)
    L += ['One clock per trial: POST ARQs for a device profile of N GPUs -> '
          'Nova 34\'s `GET /allocation_candidates` -> PUT /allocations '
          'of the candidate on accel-backend\'s host -> PATCH binding each '
          'ARQ to the provider Placement mapped its request group to -> '
          'every ARQ\'s event at the Nova stub. Per layout and cloud a real '
          'Placement and a real accel-backend of their own, 8 GPUs on one '
          'NUMA node (pooled: one provider of 8 and one group of N; '
          'per_device: 8 providers and N groups), the other hosts of the '
          'same layout; 1 and 8 GPUs alternate, %d samples each after a '
          'warm-up; an a_c call has %.0f s. Goal for pooled: 8 GPUs <= '
          '%.1fx 1 GPU.' % (fg['samples'], fg['timeout_s'], fg['goal']),
          '', '| other hosts | layout | %s | 8 / 1 (p50 total) |' % (
              ' | '.join('N=%d' % n for n in fg['gpus'])),
          '|---|---|%s---|' % ('---|' * len(fg['gpus']))]
    for c in fg['clouds']:
        for lay, by_n in c['layouts'].items():
            L.append('| %d | %s | %s | %s |' % (
                c['other_hosts'], lay, ' | '.join(
                    _flow_gpus_cell(by_n.get(n, by_n.get(str(n))))
                    for n in fg['gpus']),
                sched_ratio(c['ratio_8_to_1'].get(lay))))
    return L
