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

"""The results file of a benchmark run (Markdown and JSON); the summary
rows come from ``benchmarks.summary``, most sections from
``benchmarks.sections``, the plots from ``benchmarks.plots``
(imported only when plots are asked for: it needs matplotlib)."""

import json
import os
import re

from benchmarks import common
from benchmarks import sections
from benchmarks import summary

_f = summary.f


def _slug(meta):
    cpu = re.sub(r'\(.*?\)|processor|cpu|@.*', '', meta['machine']['cpu'],
                 flags=re.I)
    cpu = re.sub(r'[^a-z0-9]+', '-', cpu.lower()).strip('-') or 'machine'
    return '%s-%dc' % (cpu, meta['machine']['cores'] or 0)


def _header_md(meta, results):
    """The title, the machine, the versions and the summary table (lines)."""
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
    return L


def _boot_md(results):
    """Section 1, the boot overhead in Nova 34's functional harness (lines)."""
    b = results.get('boot')
    L = ['', '## 1. Boot overhead in Nova 34\'s functional harness', '',
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
    L += sections.boot_md(b)
    return L


def _concurrency_md(results):
    """Section 4, concurrent binds on each database (lines)."""
    cc = results.get('concurrency') or {}
    first = next((cc[d] for d in common.DATABASES
                  if d in cc and not common.not_measured(cc[d])), {})
    L = ['', '## 4. Concurrency: %s binds for %s devices' % (
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
    return L


def _scale_md(results):
    """Section 5, the database at scale and the agent's report (lines)."""
    s = results.get('scale')
    L = ['', '## 5. Scale', '']
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
                  sections.STATS_HEAD]
            for n, step in sorted(db['steps'].items(),
                                  key=lambda kv: int(kv[0])):
                for op in ('arq_list_by_instance', 'device_list_by_host',
                           'device_profile_by_name', 'device_profile_by_uuid',
                           'arq_list_all'):
                    L.append(sections.stats_row('%s ARQs: %s' % (n, op),
                                                step[op]))
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
    return L


def _tail_md(results, pngs):
    """The plots, then the traceback of each measure that failed (lines)."""
    L = []
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
    return L


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
    L = _header_md(meta, results)
    L += _boot_md(results)
    L += sections.roundtrip_md(results.get('roundtrip'))
    L += sections.upstream_md(results.get('upstream'))
    L += _concurrency_md(results)
    L += _scale_md(results)
    L += sections.weigher_md(results.get('weigher'))
    L += sections.flow_md(results.get('flow'))
    L += sections.sched_md(results.get('sched'))
    L += sections.flow_gpus_md(results.get('flow_gpus'))
    L += _tail_md(results, pngs)
    with open(prefix + '.json', 'w') as f:
        json.dump({'meta': meta, 'results': results}, f, indent=1,
                  default=str)
    path = prefix + '.md'
    with open(path, 'w') as f:
        f.write('\n'.join(L) + '\n')
    return path
