"""The results file of a benchmark run (Markdown and JSON) and the summary
table printed on stdout; the plots are drawn by ``benchmarks.plots``."""

import json
import os
import re

from benchmarks import common
from benchmarks import plots
from benchmarks import upstream


def _f(v, fmt='%.1f'):
    return '-' if v is None else fmt % v


def _x(v):
    return '-' if v is None else '%.2fx' % v


def _slug(meta):
    cpu = re.sub(r'\(.*?\)|processor|cpu|@.*', '', meta['machine']['cpu'],
                 flags=re.I)
    cpu = re.sub(r'[^a-z0-9]+', '-', cpu.lower()).strip('-') or 'machine'
    return '%s-%dc' % (cpu, meta['machine']['cores'] or 0)


def summary_rows(results):
    """``[(measure, what, value, ratio)]`` for the summary table."""
    rows = []
    b = results.get('boot')
    if b and not common.not_measured(b):
        for key, label in (('accel_backend', 'a: accel flavor, accel_backend'),
                           ('nova_fake', 'b: accel flavor, Nova fake'),
                           ('no_accelerator', 'c: no accelerator')):
            if key in b:
                rows.append(('1 boot', label + ' (median of %d)'
                             % b[key]['n'], '%s ms' % _f(b[key]['p50'], '%.0f'),
                             ''))
        rows.append(('1 boot', 'ratio a/b, a/c', '',
                     '%s, %s' % (_x(b.get('ratio_a_b')),
                                 _x(b.get('ratio_a_c')))))
    elif b:
        rows.append(('1 boot', 'not measured', b['not_measured'], ''))
    rt = results.get('roundtrip')
    if rt and not common.not_measured(rt):
        for db in ('sqlite', 'postgresql'):
            r = rt.get(db)
            if not r:
                continue
            if common.not_measured(r):
                rows.append(('2 ARQ round trip', db, 'not measured: ' +
                             r['not_measured'], ''))
                continue
            rows.append(('2 ARQ round trip', '%s floor (GET /v2 + commit)'
                         % db, '%s ms p50' % _f(r['floor']['p50'], '%.2f'),
                         ''))
            for n, s in sorted(r['sizes'].items(), key=lambda kv: int(kv[0])):
                rows.append(('2 ARQ round trip', '%s, %s ARQs (p50/p95/p99)'
                             % (db, n), '%s / %s / %s ms' % (
                                 _f(s['p50']), _f(s['p95']), _f(s['p99'])),
                             '%s floor' % _x(s.get('ratio_p50_to_floor'))))
    elif rt:
        rows.append(('2 ARQ round trip', 'not measured', rt['not_measured'],
                     ''))
    up = results.get('upstream')
    if up and not common.not_measured(up):
        for op in upstream.OPS:
            a = up['accel_backend'].get(op)
            c = up['cyborg'].get(op)
            if a and c:
                rows.append(('3 vs Cyborg 17', op + ' p50 (p95)',
                             'accel %s (%s) / cyborg %s (%s) ms' % (
                                 _f(a['p50']), _f(a['p95']), _f(c['p50']),
                                 _f(c['p95'])),
                             'cyborg/accel %s' % _x(
                                 up['ratios_p50'].get(op))))
    elif up:
        rows.append(('3 vs Cyborg 17', 'not measured', up['not_measured'],
                     ''))
    c = results.get('concurrency')
    if c and not common.not_measured(c):
        rows.append(('4 concurrency', '%d binds / %d devices: throughput'
                     % (c['binds'], c['devices']),
                     '%.0f PATCH/s, %.0f binds+events/s' % (
                         c['patch_throughput_per_s'],
                         c['bind_throughput_per_s']), ''))
        rows.append(('4 concurrency', 'bound twice / losers BindFailed+failed'
                     ' event', '%d / %d of %d' % (
                         c['handles_bound_twice'] + c['rps_bound_twice'],
                         c['losers_bindfailed_with_failed_event'],
                         c['losers']), 'OK' if c['ok'] else 'NOT OK'))
    elif c:
        rows.append(('4 concurrency', 'not measured', c['not_measured'], ''))
    s = results.get('scale')
    if s and not common.not_measured(s):
        db = s['db']
        if not common.not_measured(db):
            for n, step in sorted(db['steps'].items(),
                                  key=lambda kv: int(kv[0])):
                rows.append(('5 scale', '%d nodes x 8, %s ARQs: by instance /'
                             ' devices by host / profile by name (p50)'
                             % (db['hosts'], n), '%s / %s / %s ms' % (
                                 _f(step['arq_list_by_instance']['p50']),
                                 _f(step['device_list_by_host']['p50']),
                                 _f(step['device_profile_by_name']['p50'])),
                             ''))
        ag = s['agent']
        if not common.not_measured(ag):
            rows.append(('5 scale', 'agent, %d devices: initial report'
                         % ag['devices'], '%d calls, %.2f s' % (
                             ag['initial']['placement_calls'],
                             ag['initial']['seconds']), ''))
            rows.append(('5 scale', 'agent, %d devices: no-change resync'
                         % ag['devices'], '%d calls, %.2f s' % (
                             ag['resync_no_change']['placement_calls'],
                             ag['resync_no_change']['seconds']), ''))
    elif s:
        rows.append(('5 scale', 'not measured', s['not_measured'], ''))
    return rows


def summary_table(meta, results):
    """The summary as a plain-text table for stdout.

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
    return '\n'.join(lines)


# -- Markdown ----------------------------------------------------------------

def _stats_row(label, s):
    return '| %s | %d | %s | %s | %s | %s | %s |' % (
        label, s['n'], _f(s['p50']), _f(s['p95']), _f(s['p99']),
        _f(s['min']), _f(s['max']))


STATS_HEAD = ('| | n | p50 ms | p95 ms | p99 ms | min ms | max ms |\n'
              '|---|---|---|---|---|---|---|')


def write(results_dir, meta, results):
    """Write ``<date>-<machine>[-quick].md``, its ``.json`` (meta and
    results) and its PNG plots into ``results_dir``.

    :param meta: the run's ``{'date', 'machine', 'versions', 'quick',
        'command', 'total_seconds', ...}``.
    :param results: ``{measure: result dict}``.
    :returns: the path of the Markdown file.
    :raises OSError: when a file cannot be written.
    """
    day = meta['date'].split()[0]
    base = '%s-%s%s' % (day, _slug(meta), '-quick' if meta['quick'] else '')
    prefix = os.path.join(results_dir, base)
    pngs = plots.plots(results, prefix)
    m, v = meta['machine'], meta['versions']
    L = ['# nova-accel benchmarks, %s' % meta['date'], '',
         'Command: `%s` (%.0f s in all)%s.' % (
             meta['command'], meta['total_seconds'],
             '; QUICK mode: fewer samples, smaller scale, upstream Cyborg '
             'skipped' if meta['quick'] else ''), '',
         '| machine | |', '|---|---|',
         '| CPU | %s |' % m['cpu'], '| cores | %s |' % m['cores'],
         '| memory | %s |' % m['memory'], '| OS / kernel | %s / %s |'
         % (m['os'], m['kernel']), '| date | %s |' % meta['date'], '',
         '| versions | |', '|---|---|']
    for k in ('python', 'nova', 'openstack-placement', 'cyborg',
              'nova-accel', 'git', 'sqlite', 'postgresql', 'rabbitmq',
              'SQLAlchemy', 'cheroot', 'gunicorn'):
        L.append('| %s | %s |' % (k, v.get(k, 'not used')))
    loads = ['%s %.1f -> %.1f' % (k, r['_load'][0], r['_load'][1])
             for k, r in results.items()
             if isinstance(r, dict) and r.get('_load')]
    L += ['', 'All servers listen on 127.0.0.1; every number below was '
          'measured in this one run. 1-minute load average at the start '
          'and end of each measure (%s cores; above that, other work '
          'competed for the CPU): %s.' % (m['cores'], ', '.join(loads)),
          '', '## Summary', '',
          '| measure | what | value | ratio |', '|---|---|---|---|']
    for r in summary_rows(results):
        L.append('| %s |' % ' | '.join(str(x) for x in r))

    b = results.get('boot')
    L += ['', '## 1. Boot overhead in Nova 34\'s functional harness', '',
          'POST /servers to ACTIVE (polled every 5 ms), then the server is '
          'deleted; one warm-up boot per flavor is not counted; flavors '
          'are interleaved. a: accel flavor served by accel_backend '
          '(`tests.functional.base.AccelServersTestBase`: HTTP via '
          'wsgi-intercept, binder thread, event to Nova\'s API). b: the '
          'same kind of flavor (one accelerator) served by Nova\'s '
          '`CyborgFixture` (in-memory fake of the accelerator client; device '
          'RP created by hand as in Nova\'s `AcceleratorServerBase`). '
          'c: no accelerator (harness a); c\': no accelerator in harness b. '
          'Both harnesses use `accel.LibvirtDriver` on fake libvirt.', '']
    if b and not common.not_measured(b):
        L += [STATS_HEAD]
        for k in ('accel_backend', 'nova_fake', 'no_accelerator',
                  'no_accelerator_fake_harness'):
            if k in b:
                L.append(_stats_row(k, b[k]))
        L += ['', 'Ratios of medians: a/b = %s, a/c = %s.' % (
            _x(b.get('ratio_a_b')), _x(b.get('ratio_a_c')))]
        if b.get('errors'):
            L += ['', 'Errors: %s' % '; '.join(e[-300:] for e in b['errors'])]
    elif b:
        L.append('Not measured: %s' % b['not_measured'])

    rt = results.get('roundtrip')
    L += ['', '## 2. ARQ round trip over HTTP (accel-backend process)', '',
          '`accel-backend` (cheroot, 8 threads, 4 binding workers) over a '
          'recorded sysfs tree of %s GPUs, reporting to a real Placement '
          '(gunicorn, SQLite, noauth2); events go to a threaded Nova stub '
          'that timestamps their arrival. Trial: POST ARQs for a profile '
          'asking for N GPUs, one PATCH binding all N to distinct devices, '
          'clock stops when the last event arrives. Floor: one `GET /v2` '
          'on the same server plus one INSERT+COMMIT on the same kind of '
          'database (WAL SQLite file with accel_backend\'s pragmas, or the '
          'same PostgreSQL server), measured in the same run.' % (
              (rt or {}).get('sqlite', {}).get('devices', 128)), '']
    if rt and not common.not_measured(rt):
        for db in ('sqlite', 'postgresql'):
            r = rt.get(db)
            if not r:
                continue
            L += ['### %s' % db, '']
            if common.not_measured(r):
                L += ['Not measured: %s' % r['not_measured'], '']
                continue
            L += [STATS_HEAD]
            for n, s in sorted(r['sizes'].items(), key=lambda kv: int(kv[0])):
                L.append(_stats_row('%s ARQs (%s floor)' % (
                    n, _x(s.get('ratio_p50_to_floor'))), s))
            L.append(_stats_row('floor: GET /v2 + commit', r['floor']))
            L.append(_stats_row('  of which GET /v2', r['floor_http']))
            L.append(_stats_row('  of which commit', r['floor_commit']))
            L.append('')
        L.append('p99 of small samples is close to the maximum.')
    elif rt:
        L.append('Not measured: %s' % rt['not_measured'])

    up = results.get('upstream')
    L += ['', '## 3. Against upstream openstack-cyborg 17.0.0', '']
    if up and not common.not_measured(up):
        L += [up.get('setup', ''), '',
              '| operation | accel_backend p50 | p95 | Cyborg 17 p50 | p95 | '
              'Cyborg/accel (p50) |', '|---|---|---|---|---|---|']
        for op in upstream.OPS:
            a, c = up['accel_backend'].get(op), up['cyborg'].get(op)
            if a and c:
                L.append('| %s | %s | %s | %s | %s | %s |' % (
                    op, _f(a['p50']), _f(a['p95']), _f(c['p50']),
                    _f(c['p95']), _x(up['ratios_p50'].get(op))))
        L += ['', 'Samples per operation: %s.' % up.get('trials')]
        if up.get('notes'):
            L += [''] + ['- %s' % n for n in up['notes']]
    elif up:
        L.append('Not measured: %s' % up['not_measured'])

    c = results.get('concurrency')
    L += ['', '## 4. Concurrency: %s binds for %s devices' % (
        (c or {}).get('binds', 200), (c or {}).get('devices', 50)), '']
    if c and not common.not_measured(c):
        L += ['%d single-GPU resource providers; %d ARQs created first; '
              '%d threads released by one barrier each PATCH one ARQ '
              '(four per device, each for its own instance; a request whose '
              'connection is reset is re-sent after 0.1 s, 0.2 s, ... since '
              'the bind PATCH is idempotent). Then the database is read '
              'directly.' % (c['devices'], c['binds'], c['binds']), '',
              '| | |', '|---|---|',
              '| all PATCHes answered after | %.2f s (%.0f/s) |' % (
                  c['all_patches_s'], c['patch_throughput_per_s']),
              '| all events received after | %.2f s (%.0f/s) |' % (
                  c['all_events_s'], c['bind_throughput_per_s']),
              '| PATCH latency p50 / p95 / p99 | %s / %s / %s ms |' % (
                  _f(c['patch_latency']['p50']),
                  _f(c['patch_latency']['p95']),
                  _f(c['patch_latency']['p99'])),
              '| PATCH errors | %d %s |' % (c['patch_error_count'],
                                           c['patch_errors'] or ''),
              '| connections reset (then re-sent) | %d %s |' % (
                  c['connection_resets'], c['reset_examples'] or ''),
              '| ARQs without an event | %d |' % c['arqs_without_event'],
              '| ARQ states | %s |' % c['states'],
              '| attach handles held by two ARQs | %d |'
              % c['handles_bound_twice'],
              '| device RPs with two Bound ARQs | %d |' % c['rps_bound_twice'],
              '| attach handles in use | %d |' % c['handles_in_use'],
              '| winners Bound with a `completed` event | %d |'
              % c['winners_bound_with_completed_event'],
              '| losers BindFailed with a `failed` event | %d of %d |' % (
                  c['losers_bindfailed_with_failed_event'], c['losers']),
              '| verdict | %s |' % ('OK: no device bound twice, every loser '
                                    'BindFailed with a failed event'
                                    if c['ok'] else 'NOT OK'), '']
    elif c:
        L.append('Not measured: %s' % c['not_measured'])

    s = results.get('scale')
    L += ['', '## 5. Scale', '']
    if s and not common.not_measured(s):
        db = s['db']
        if common.not_measured(db):
            L.append('Database scale not measured: %s' % db['not_measured'])
        else:
            L += ['%d compute nodes x 8 GPUs (%d devices, deployables, attach '
                  'handles; inserted in %.1f s through '
                  '`accel_backend.db.models`), ARQs added in steps (the '
                  'first 8,000 Bound, the rest Initial), served by an '
                  '`accel-backend` process over HTTP.' % (
                      db['hosts'], db['devices'], db['insert_devices_s']), '',
                  STATS_HEAD]
            for n, step in sorted(db['steps'].items(),
                                  key=lambda kv: int(kv[0])):
                for op in ('arq_list_by_instance', 'device_list_by_host',
                           'device_profile_by_name', 'device_profile_by_uuid',
                           'arq_list_all'):
                    L.append(_stats_row('%s ARQs: %s' % (n, op), step[op]))
        ag = s['agent']
        L += ['', '### Agent: report of %s GPUs to Placement'
              % ag.get('devices', 64), '']
        if common.not_measured(ag):
            L.append('Not measured: %s' % ag['not_measured'])
        else:
            L += ['| run | Placement calls | seconds |', '|---|---|---|']
            for k in ('initial', 'resync_no_change', 'resync_no_change_2'):
                L.append('| %s | %d | %.3f |' % (
                    k, ag[k]['placement_calls'], ag[k]['seconds']))
            L += ['', 'Device RPs in Placement afterwards: %d.'
                  % ag['providers_in_placement']]
    elif s:
        L.append('Not measured: %s' % s['not_measured'])

    if pngs:
        L += ['', '## Plots', '']
        for name, fn in pngs.items():
            L.append('![%s](%s)' % (name, fn))
    failed = [(k, r) for k, r in results.items()
              if isinstance(r, dict) and r.get('traceback')]
    if failed:
        L += ['', '## Failures', '']
        for k, r in failed:
            L += ['%s:' % k, '```', r['traceback'][-2000:], '```']
    with open(prefix + '.json', 'w') as f:
        json.dump({'meta': meta, 'results': results}, f, indent=1,
                  default=str)
    path = prefix + '.md'
    with open(path, 'w') as f:
        f.write('\n'.join(L) + '\n')
    return path
