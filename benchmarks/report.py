"""The results file of a benchmark run (Markdown and JSON); the summary
rows come from ``benchmarks.summary``, the plots from ``benchmarks.plots``
(imported only when plots are asked for: it needs matplotlib)."""

import json
import os
import re

from benchmarks import common
from benchmarks import summary
from benchmarks import upstream

_f, _x = summary.f, summary.x


def _slug(meta):
    cpu = re.sub(r'\(.*?\)|processor|cpu|@.*', '', meta['machine']['cpu'],
                 flags=re.I)
    cpu = re.sub(r'[^a-z0-9]+', '-', cpu.lower()).strip('-') or 'machine'
    return '%s-%dc' % (cpu, meta['machine']['cores'] or 0)


# -- Markdown ----------------------------------------------------------------

def _stats_row(label, s):
    return '| %s | %d | %s | %s | %s | %s | %s |' % (
        label, s['n'], _f(s['p50']), _f(s['p95']), _f(s['p99']),
        _f(s['min']), _f(s['max']))


STATS_HEAD = ('| | n | p50 ms | p95 ms | p99 ms | min ms | max ms |\n'
              '|---|---|---|---|---|---|---|')


def _not_measured(res):
    return ['Not measured: %s' % res['not_measured']]


def _boot_md(b):
    """The boot section's table and ratios (list of lines)."""
    if not b:
        return []
    if common.not_measured(b):
        return _not_measured(b)
    L = [STATS_HEAD]
    for k in ('accel_backend', 'nova_fake', 'no_accelerator',
              'no_accelerator_fake_harness'):
        if k in b:
            L.append(_stats_row(k, b[k]))
    L += ['', 'Ratios of medians [bootstrap 95%% CI]: a/b = %s, a/c = %s.'
          % (summary.ci(b, 'a_b'), summary.ci(b, 'a_c'))]
    if b.get('errors'):
        L += ['', 'Errors: %s' % '; '.join(e[-300:] for e in b['errors'])]
    return L


def _roundtrip_md(rt):
    """The round trip section (list of lines)."""
    L = ['', '## 2. ARQ round trip over HTTP (accel-backend process)', '',
         '`accel-backend` (cheroot, 8 threads, 4 binding workers) over a '
         'recorded sysfs tree of %s GPUs, reporting to a real Placement '
         '(gunicorn, SQLite, noauth2); events go to a Nova stub in a '
         'process of its own (cheroot, keep-alive) that timestamps their '
         'arrival (CLOCK_MONOTONIC, the clock of the timing client). Trial: POST ARQs for a profile '
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
        return L + _not_measured(rt)
    for db in common.DATABASES:
        r = rt.get(db)
        if not r:
            continue
        L += ['### %s' % db, '']
        if common.not_measured(r):
            L += _not_measured(r) + ['']
            continue
        L += ['| path | its floor |', '|---|---|']
        for fl in r['floors'].values():
            L.append('| %s | %s (%s) |' % (fl['path'], fl['formula'],
                                           fl['what']))
        L += ['', STATS_HEAD]
        for path, by_n in (('create+bind+event', r['sizes']),
                           ('PATCH->event', r['patch_to_event'])):
            for n, s in sorted(by_n.items(), key=lambda kv: int(kv[0])):
                L.append(_stats_row('%s, %s ARQs (%s floor)' % (
                    path, n, _x(s.get('ratio_p50_to_floor'))), s))
        L.append(_stats_row('primitive: GET /v2', r['floor_http']))
        L.append(_stats_row('primitive: commit', r['floor_commit']))
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


def _upstream_md(up):
    """The Cyborg 17 section: headline, other calls, the bare PATCH apart
    (list of lines)."""
    L = ['', '## 3. Against upstream openstack-cyborg 17.0.0', '']
    if not up:
        return L
    if common.not_measured(up):
        return L + _not_measured(up)
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


def _weigher_md(w):
    """The weigher section (list of lines)."""
    L = ['', '## 6. Weigher vs the request\'s allocation candidates', '']
    if not w:
        return []
    if common.not_measured(w):
        return L + _not_measured(w)
    from benchmarks import weigher
    return L + [weigher.table(w)]


def _flow_md(fl):
    """The Nova-like flow section (list of lines)."""
    if not fl:
        return []
    L = ['', '## 7. Nova-like flow against its Placement calls', '']
    if common.not_measured(fl):
        return L + _not_measured(fl)
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
            _stats_row('total', c['total']),
            _stats_row('Placement part (a_c + PUT)', c['placement']),
            _stats_row('  of which a_c', c['a_c']),
            _stats_row('  of which PUT', c['put']),
            _stats_row('accelerator part (total - Placement)',
                       c['accel_part']), '',
            'total / Placement part: %s of p50s; per trial p50 %.2f, p95 '
            '%.2f (n=%d); goal <= %.2f.' % (
                _x(c['ratio_p50']), r['p50'], r['p95'], r['n'],
                fl['goal'])]
    return L


def _alternating_md(title, intro, sides, ratio_label):
    """The section renderer of a measure that alternates two sides:
    ``intro`` a ``%d``-format for the sample count, ``sides`` ``((result
    key, row label), ...)`` baseline first."""
    def md(res):
        if not res:
            return []
        L = ['', title, '']
        if common.not_measured(res):
            return L + _not_measured(res)
        return L + [intro % res['samples'], '', STATS_HEAD] + [
            _stats_row(label, res[key]) for key, label in sides] + [
            '', '%s: %s of p50s.' % (ratio_label, _x(res['ratio_p50']))]
    return md


_transport_md = _alternating_md(
    '## 8. The event POST to Nova: requests vs ServiceSession',
    'One `accelerator-request-bound` POST (microversion 2.82) through '
    'keystoneauth1, to the Nova stub process, on requests\' transport '
    '(`EnvironmentOnceSession`) and on accel_backend\'s '
    '(`ServiceSession`); %d samples each, alternating one by one, '
    'after a warm-up.',
    (('requests', 'requests + urllib3'),
     ('service_session', 'ServiceSession (http.client)')),
    'requests / ServiceSession')
_checkout_md = _alternating_md(
    '## 9. A transaction on PostgreSQL: oslo.db\'s pool pre-ping vs '
    'accel_backend\'s checkout',
    'One INSERT + COMMIT taken from the pool of an engine built by '
    'oslo.db (`SELECT 1` at every checkout) and of accel_backend\'s '
    '`Database` (no round trip for a connection in use, '
    '`accel_backend.db.liveness`), on the same PostgreSQL database; '
    '%d samples each, alternating one by one, after a warm-up.',
    (('pre_ping', 'oslo.db engine (pre-ping)'),
     ('accel_backend', 'accel_backend Database')),
    'pre-ping / accel_backend')


def write(results_dir, meta, results, plots=True):
    """Write ``<date>-<machine>[-quick].md``, its ``.json`` (meta and
    results) and, when ``plots``, its PNG plots into ``results_dir``.

    :param meta: the run's ``{'date', 'machine', 'versions', 'quick',
        'command', 'total_seconds', ...}``.
    :param results: ``{measure: result dict}``.
    :returns: the path of the Markdown file.
    :raises OSError: when a file cannot be written.
    """
    day = meta['date'].split()[0]
    base = '%s-%s%s' % (day, _slug(meta), '-quick' if meta['quick'] else '')
    prefix = os.path.join(results_dir, base)
    pngs = {}
    if plots:
        from benchmarks import plots as plots_mod
        pngs = plots_mod.plots(results, prefix)
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
    L += ['', 'All servers listen on 127.0.0.1; every number below was '
          'measured in this one run. 1-minute load average at the start '
          'and end of each measure (%s cores; above half of that, other '
          'work competed for the CPU and the measure ran again, the '
          'quieter run kept): %s.' % (m['cores'], summary.loads(results)),
          '', '## Summary', '',
          '| measure | what | value | ratio |', '|---|---|---|---|']
    for r in summary.summary_rows(results):
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
          'Both harnesses use `accel.LibvirtDriver` on fake libvirt. '
          'Order: within a harness the flavors take turns, one boot each '
          '(abab...); the two harnesses (one Nova per process) take turns '
          'by rounds (boots per flavor per round: %s), each round a fresh '
          'harness with one uncounted warm-up boot per flavor. Ratios of '
          'medians with a percentile bootstrap 95%% confidence interval '
          '(%s resamples).' % ((b or {}).get('rounds'),
                               (b or {}).get('bootstrap_resamples')), '']
    L += _boot_md(b)

    L += _roundtrip_md(results.get('roundtrip'))

    L += _upstream_md(results.get('upstream'))

    cc = results.get('concurrency') or {}
    first = next((cc[d] for d in common.DATABASES
                  if d in cc and not common.not_measured(cc[d])), {})
    L += ['', '## 4. Concurrency: %s binds for %s devices' % (
        first.get('binds', 200), first.get('devices', 50)), '']
    if first:
        L += ['`accel-backend` (embedded: each PATCH binds in its own '
              'transaction) over %d single-GPU resource providers, on a '
              'SQLite file and on PostgreSQL; %d ARQs created first; '
              '%d threads released by one barrier each PATCH one ARQ '
              '(four per device, each for its own instance; a request whose '
              'connection is reset is re-sent after 0.1 s, 0.2 s, ... since '
              'the bind PATCH is idempotent). Then the database is read '
              'directly.' % (first['devices'], first['binds'],
                             first['binds']), '']
    for db, c in ((d, cc[d]) for d in common.DATABASES if d in cc):
        L += ['### %s' % db, '']
        if common.not_measured(c):
            L += ['Not measured: %s' % c['not_measured'], '']
            continue
        L += ['| | |', '|---|---|',
              '| all PATCHes answered after | %.2f s (%.0f/s) |' % (
                  c['all_patches_s'], c['patch_throughput_per_s']),
              '| all events received after | %.2f s (%.0f/s) |' % (
                  c['all_events_s'], c['bind_throughput_per_s']),
              '| PATCH latency p50 / p95 / p99 | %s / %s / %s ms |' % (
                  _f(c['patch_latency']['p50']),
                  _f(c['patch_latency']['p95']),
                  _f(c['patch_latency']['p99'])),
              '| PATCH errors | %d %s |' % (
                  c['patch_error_count'], c['patch_errors'] or ''),
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
              '| deadlocks counted by the database | %s |' % (
                  c.get('deadlocks', 0) if db == 'postgresql'
                  else 'n/a (SQLite: one writer)'),
              '| verdict | %s |' % ('OK: no device bound twice, every loser '
                                    'BindFailed with a failed event, no '
                                    'deadlock' if c['ok'] else 'NOT OK'),
              '']

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

    L += _weigher_md(results.get('weigher'))
    L += _flow_md(results.get('flow'))
    L += _transport_md(results.get('transport'))
    L += _checkout_md(results.get('checkout'))

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
