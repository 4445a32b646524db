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

"""The results of ``benchmarks.growth``: a Markdown file, its JSON and a
PNG of the curves (matplotlib, when installed), in
``benchmarks/results/<date>-<machine>-<name>.*``.

    python -m benchmarks.growth_report <results .json>

writes the Markdown and the plot again from a JSON file (on a Python
with matplotlib, when the run had none)."""

import datetime
import json
import os
import statistics
import sys

from benchmarks import common
from benchmarks import report
from tools import machine

#: Kubernetes DRA's published scheduler_perf figures (external reference,
#: a different system): 500 nodes x 10 devices, 5,000 claims.
DRA = ('Kubernetes DRA scheduler_perf (500 nodes x 10 devices, 5,000 '
       'claims): at least 40 pods/s, typically above 51')
GOAL_CALLS_PER_DEVICE = 3
#: Why a restart with nothing changed makes more than one call per host.
RESTART_GAP = (
    'Restart gap: a new agent process has no view of Placement. Its pass '
    'looks the compute node up by name, reads the tree (`?in_tree=`), then '
    'the inventories and traits of each of its providers, and PUTs each '
    'custom name it needs (204: it exists): 2 + 2 x providers + custom '
    'names calls (see the calls by method below). One call per host '
    'would take that view kept across restarts and checked against the '
    'generations one `?in_tree=` read returns; not done.')


def _p(values, pct):
    return common.percentile(list(values), pct)


def rows(results):
    """One dict of headline figures per size (seconds, MiB, counts)."""
    out = []
    for r in results:
        n, per = r['hosts'], r['devices_per_host']
        st, rs, sm, mem = (r['startup'], r['restart'], r['storm'],
                           r['memory_mib'])
        calls = list(st['placement_calls'].values())
        again = list(rs['placement_calls'].values())
        out.append({
            'hosts': n, 'layout': r.get('layout', 'pooled'),
            'ready_all_s': st['all_s'],
            'ready_p50_s': _p(st['ready_s'].values(), 50),
            'agent_cpu_p50_s': _p(st['cpu_s'].values(), 50),
            'calls_per_device_max': max(calls) / per,
            'calls_per_host_p50': _p(calls, 50),
            'restart_all_s': rs['all_s'],
            'restart_calls_per_host_max': max(again),
            'arqs': sm['arqs'], 'binds_per_s': sm['binds_per_s'],
            'event_p50_ms': _p(sm['latency_s'], 50) * 1000,
            'event_p99_ms': _p(sm['latency_s'], 99) * 1000,
            'bound_twice': sm['bound_twice'],
            'shared_handles': sm['shared_handles'],
            'not_bound': len(sm['not_bound']),
            'patch_errors': len(sm['patch_errors']),
            'deadlocks': sum(sm['deadlocks'].values()),
            'agent_rss_p50_mib': _p(mem['agents'], 50),
            'agent_rss_max_mib': max(mem['agents']),
            'api_rss_max_mib': max(mem['apis']),
            'conductor_rss_mib': mem['conductor'],
            'db_conns_peak': sm['connections_peak'][0],
            'db_conns_active_peak': sm['connections_peak'][1],
            'db_conns_idle': sm['connections_idle'][0],
            'load': r['load'], 'seconds': r['seconds']})
        probe = r.get('probe_s')
        cpu = sm.get('cpu_ms_per_bind')
        if probe and cpu:
            out[-1].update({
                'probe_p50_ms': _p(probe, 50) * 1000,
                'probe_p99_ms': _p(probe, 99) * 1000,
                'probe_samples': len(probe),
                'cpu_ms_per_bind': sum(cpu.values()),
                'cpu_ms_per_bind_by': cpu,
                'idle_cpu_by': sm.get('idle_cpu_ms_per_s', {}),
                'startup_cpu_s_by': st.get('component_cpu_s', {}),
                'startup_calls': sum(calls)})
            for name, ms in cpu.items():
                out[-1]['cpu_%s_ms' % name] = ms
            if 'idle_cpu_ms_per_s' in sm:  # runs before it: gross only
                out[-1]['cpu_gross_ms_per_bind'] = sum(
                    sm['cpu_gross_ms_per_bind'].values())
                out[-1]['idle_cpu_ms_per_s'] = sum(
                    sm['idle_cpu_ms_per_s'].values())
    return out


COLUMNS = (
    ('hosts', 'hosts', '%d'),
    ('ready_all_s', 'all providers in Placement, s', '%.1f'),
    ('ready_p50_s', 'p50 host ready, s', '%.1f'),
    ('agent_cpu_p50_s', 'agent CPU by then, s (p50)', '%.2f'),
    ('calls_per_host_p50', 'Placement calls/host (p50)', '%d'),
    ('calls_per_device_max', 'calls/device (max host)', '%.2f'),
    ('restart_all_s', 'restart: all reported, s', '%.1f'),
    ('restart_calls_per_host_max', 'restart calls/host (max)', '%d'),
    ('arqs', 'ARQs bound', '%d'),
    ('binds_per_s', 'binds/s', '%.1f'),
    ('event_p50_ms', 'PATCH->event p50, ms', '%.0f'),
    ('event_p99_ms', 'PATCH->event p99, ms', '%.0f'),
    ('bound_twice', 'bound twice', '%d'),
    ('shared_handles', 'handles held twice', '%d'),
    ('not_bound', 'not Bound', '%d'),
    ('deadlocks', 'deadlocks', '%d'),
    ('agent_rss_p50_mib', 'agent RSS p50, MiB', '%.0f'),
    ('api_rss_max_mib', 'API RSS max, MiB', '%.0f'),
    ('conductor_rss_mib', 'conductor RSS, MiB', '%.0f'),
    ('db_conns_peak', 'DB connections during storm, max', '%d'),
    ('db_conns_active_peak', '... of them active (not idle), max', '%d'),
    ('db_conns_idle', 'DB connections after the storm', '%d'),
)
#: Rows of runs that measured the probe and CPU per bind
#: (``benchmarks.growth_binds``).
BIND_COLUMNS = (
    ('probe_p50_ms', 'one bind at a time: PATCH->event p50, ms', '%.1f'),
    ('probe_p99_ms', 'one bind at a time: PATCH->event p99, ms', '%.1f'),
    ('cpu_gross_ms_per_bind', 'storm: CPU ms per bind, gross', '%.2f'),
    ('idle_cpu_ms_per_s', 'idle: CPU ms per second, all components',
     '%.1f'),
    ('cpu_ms_per_bind', 'storm: CPU ms per bind less idle (where '
     'measured), all components', '%.2f'),
    ('cpu_apis_ms', '... API processes', '%.2f'),
    ('cpu_conductor_ms', '... conductor', '%.2f'),
    ('cpu_postgresql_ms', '... PostgreSQL', '%.2f'),
    ('cpu_rabbitmq_ms', '... RabbitMQ', '%.2f'),
    ('cpu_placement_ms', '... Placement', '%.2f'),
)
#: The growth goal of a bind's cost and p99 from the smallest to the
#: largest size.
GOAL_GROWTH = 1.3


def markdown(results, meta):
    """The results file's text (str)."""
    table = rows(results)
    m, v = meta['machine'], meta['versions']
    L = ['# nova-accel growth curves, %s' % meta['date'], '',
         'Command: `%s` (%.0f s in all).' % (meta['command'],
                                             meta['total_seconds']), '',
         'Machine: %s, %s cores, %s, %s. Versions: python %s, '
         'openstack-placement %s, nova-accel %s (git %s), SQLAlchemy %s.'
         % (m['cpu'], m['cores'], m['memory'], m['os'], v['python'],
            v['openstack-placement'], v['nova-accel'], v.get('git'),
            v['SQLAlchemy']), '',
         'One fresh cloud per size (PostgreSQL, RabbitMQ, Placement under '
         'gunicorn, the conductor, two API processes, one agent per host, '
         'every one a real process on this machine; the Nova stub and the '
         'threads sending the requests run in the harness). Layout: `%s` '
         '(see `benchmarks/growth.py`). Every process shares the %s cores: '
         'start-up and restart times at many hosts are mostly the agents '
         'waiting for the CPU, which the agent CPU seconds show apart; '
         'latencies are measured under the load of the harness itself.'
         % (table[0]['layout'] if table else '-', m['cores']), '']
    L += ['| hosts | %s |' % ' | '.join(str(r['hosts']) for r in table),
          '|---|' + '---|' * len(table)]
    columns = [c for c in COLUMNS[1:] + BIND_COLUMNS
               if all(c[0] in r for r in table)]
    for key, label, fmt in columns:
        cells = ' | '.join(fmt % r[key] for r in table)
        L.append('| %s | %s |' % (label, cells))
    L += ['', 'Samples: a host is one sample of the start-up and restart '
          'figures; an ARQ one sample of PATCH->event (8 per host). '
          '1-minute load average at start and end of each size: %s.' % (
              ', '.join('%d hosts %.1f -> %.1f' % (r['hosts'], *r['load'])
                        for r in table)), '',
          '## Goals', '']
    L += goals(table)
    L += growth_goals(table)
    if any(r['restart_calls_per_host_max'] > 1 for r in table):
        L += ['', RESTART_GAP]
    L += ['', 'External reference for bind throughput, a different system '
          'and question (whole-scheduler pod throughput, not ARQ binds): '
          '%s.' % DRA, '']
    for r in results:
        by = r['startup']['placement_by_call']
        again = r['restart']['placement_by_call']
        L.append('Placement calls by method and status, %d hosts: start-up '
                 '%s; restart %s.' % (r['hosts'], _calls(by), _calls(again)))
    return '\n'.join(L) + '\n'


def _calls(by):
    return ', '.join('%s x%d' % (k, n) for k, n in sorted(by.items()))


def goals(table):
    """The goals, met or not, with the numbers (Markdown lines)."""
    out = []
    for row in table:
        out.append(
            '* %d hosts: %.2f Placement calls per device at start-up '
            '(goal <= %d: %s); restart with no change %d calls per host '
            '(goal 1: %s); bound twice %d, deadlocks %d (goal 0: %s).' % (
                row['hosts'], row['calls_per_device_max'],
                GOAL_CALLS_PER_DEVICE,
                'met' if row['calls_per_device_max'] <=
                GOAL_CALLS_PER_DEVICE else 'NOT met',
                row['restart_calls_per_host_max'],
                'met' if row['restart_calls_per_host_max'] <= 1
                else 'NOT met', row['bound_twice'], row['deadlocks'],
                'met' if not (row['bound_twice'] or row['deadlocks'] or
                              row['shared_handles']) else 'NOT met'))
    return out


def growth_goals(table):
    """A bind's cost and p99 from the smallest to the largest size,
    against ``GOAL_GROWTH``, and their slope and extrapolation to 1,000
    hosts (Markdown lines; none for runs without the probe)."""
    if len(table) < 2 or not all('cpu_ms_per_bind' in r for r in table):
        return []
    first, last = table[0], table[-1]
    out = ['']
    for key, what in (('cpu_ms_per_bind', 'CPU per bind (storm, all '
                       'components, less idle where measured)'),
                      ('probe_p99_ms', 'p99 PATCH->event, one bind at a '
                       'time'),
                      ('probe_p50_ms', 'p50 PATCH->event, one bind at a '
                       'time')):
        ratio = last[key] / first[key]
        slope = statistics.linear_regression(
            [r['hosts'] for r in table], [r[key] for r in table]).slope
        out.append(
            '* %s: %.2f at %d hosts, %.2f at %d: %.2fx (goal <= %.1fx: %s); '
            'slope %+.4f ms per host, so %.1f at 1,000 hosts on this line.'
            % (what, first[key], first['hosts'], last[key], last['hosts'],
               ratio, GOAL_GROWTH,
               'met' if ratio <= GOAL_GROWTH else 'NOT met', slope,
               first[key] + slope * (1000 - first['hosts'])))
    out += _idle_line(table)
    by = last['cpu_ms_per_bind_by']
    top = max(by, key=by.get)
    out.append(
        '* What bounds binds first: per bind, %s. The largest, %s at %.2f '
        'CPU ms, caps one core of it at about %.0f binds/s; a storm of '
        '8,000 ARQs (1,000 hosts x 8) then takes at least %.0f s of its '
        'CPU.' % (', '.join('%s %.2f ms' % kv for kv in sorted(
            by.items(), key=lambda kv: -kv[1])), top, by[top],
            1000.0 / by[top], 8000 * by[top] / 1000.0))
    startup = last['startup_cpu_s_by']
    if startup and last['startup_calls']:
        per_call = {k: 1000.0 * v / last['startup_calls']
                    for k, v in startup.items()}
        out.append(
            '* Start-up at %d hosts: %d Placement calls; per call, CPU ms '
            '%s. At 1,000 hosts (%.0f calls at this rate per host) '
            'Placement would need about %.0f CPU seconds and PostgreSQL '
            '%.0f, spread over the minutes the agents start in.' % (
                last['hosts'], last['startup_calls'], ', '.join(
                    '%s %.2f' % kv for kv in sorted(per_call.items())),
                1000.0 * last['startup_calls'] / last['hosts'],
                per_call['placement'] * 1000 * last['startup_calls'] /
                last['hosts'] / 1000.0,
                per_call['postgresql'] * 1000 * last['startup_calls'] /
                last['hosts'] / 1000.0))
    return out


def _idle_line(table):
    """The background with every agent connected and nothing asked,
    per host and at 1,000 hosts on its line (Markdown lines; none for
    runs without it)."""
    first, last = table[0], table[-1]
    if not last.get('idle_cpu_by'):
        return []
    slope = statistics.linear_regression(
        [r['hosts'] for r in table],
        [r['idle_cpu_ms_per_s'] for r in table]).slope
    return [
        '* Idle, every agent connected, nothing asked: %.1f CPU ms per '
        'second at %d hosts, %.1f at %d (%s), %+.2f ms/s per host: about '
        '%.2f of a core at 1,000 hosts on this line. Taken out of the CPU '
        'per bind above (gross: %.2f and %.2f ms).' % (
            first['idle_cpu_ms_per_s'], first['hosts'],
            last['idle_cpu_ms_per_s'], last['hosts'], ', '.join(
                '%s %.1f' % kv for kv in sorted(
                    last['idle_cpu_by'].items(), key=lambda kv: -kv[1])),
            slope, (first['idle_cpu_ms_per_s'] + slope * (
                1000 - first['hosts'])) / 1000.0,
            first['cpu_gross_ms_per_bind'], last['cpu_gross_ms_per_bind'])]


def plot(results, path):
    """The curves against the number of hosts, to ``path`` (PNG); False
    when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    table = rows(results)
    x = [r['hosts'] for r in table]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    panels = (
        (axes[0][0], 'start-up, s', (('ready_all_s', 'all providers'),
                                     ('restart_all_s', 'restart'))),
        (axes[0][1], 'binds', (('binds_per_s', 'storm binds/s'),
                               ('event_p50_ms', 'storm PATCH->event p50 ms'),
                               ('event_p99_ms', 'storm PATCH->event p99 ms'),
                               ('probe_p99_ms', 'one at a time p99 ms'),
                               ('cpu_ms_per_bind', 'CPU ms per bind'))),
        (axes[1][0], 'memory, MiB', (('agent_rss_p50_mib', 'agent p50'),
                                     ('api_rss_max_mib', 'API max'),
                                     ('conductor_rss_mib', 'conductor'))),
        (axes[1][1], 'counts', (('calls_per_device_max',
                                 'Placement calls/device'),
                                ('restart_calls_per_host_max',
                                 'restart calls/host'),
                                ('db_conns_peak', 'DB connections peak'))))
    for ax, title, series in panels:
        for key, label in series:
            if not all(key in r for r in table):
                continue
            ax.plot(x, [r[key] for r in table], marker='o', label=label)
        ax.set_xscale('log')
        ax.set_xticks(x, [str(n) for n in x])
        ax.minorticks_off()
        ax.set_xlabel('hosts (8 devices each)')
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle('accel_backend growth, %s layout' % table[0]['layout'])
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write(results, name, seconds, argv):
    """Write ``<date>-<machine>-<name>.md/.json/.png``; returns the
    Markdown's path."""
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {'date': now.strftime('%Y-%m-%d %H:%M UTC'),
            'machine': machine.machine_info(), 'versions': machine.versions(),
            'total_seconds': seconds,
            'command': ' '.join(['python -m benchmarks.growth'] +
                                list(argv if argv is not None
                                     else sys.argv[1:]))}
    base = os.path.join(common.REPO, 'benchmarks', 'results', '%s-%s-%s' % (
        now.strftime('%Y-%m-%d'), report._slug(meta), name))
    with open(base + '.json', 'w') as f:
        json.dump({'meta': meta, 'results': results}, f, indent=1)
    return render(base + '.json')


def render(json_path):
    """(Re)write the Markdown and PNG beside ``json_path``; returns the
    Markdown's path."""
    with open(json_path) as f:
        data = json.load(f)
    base = json_path[:-len('.json')]
    text = markdown(data['results'], data['meta'])
    if plot(data['results'], base + '.png'):
        text += '\n![growth](%s.png)\n' % os.path.basename(base)
    with open(base + '.md', 'w') as f:
        f.write(text)
    return base + '.md'


if __name__ == '__main__':
    print(render(sys.argv[1]))
