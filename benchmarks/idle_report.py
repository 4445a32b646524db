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

"""The results of ``benchmarks.idle``: one JSON holding every run of a
session (``before``, ``after``...), its Markdown and a PNG of the curves,
``benchmarks/results/<date>-<machine>-<name>.*``.  The JSON's ``notes``
(list of Markdown paragraphs, written by hand) end the Markdown under
"Reading".

    python -m benchmarks.idle_report <results .json>

writes the Markdown and the plot again from the JSON."""

import datetime
import json
import os
import statistics
import sys

from benchmarks import common
from benchmarks import report
from tools import machine

#: The issue's goal: CPU milliseconds per second per idle host, every
#: component together.
GOAL_MS_PER_HOST = 0.1
#: Where the line is read.
FAR = 1000


def line(results):
    """``(slope, value at FAR hosts)`` of the total idle CPU ms per
    second against the hosts of ``results`` (one run's list)."""
    x = [r['hosts'] for r in results]
    y = [total(r) for r in results]
    if len(x) < 2:
        return 0.0, y[0]
    fit = statistics.linear_regression(x, y)
    return fit.slope, fit.intercept + fit.slope * FAR


def total(result):
    """Idle CPU ms per second of the control plane (every component but
    the agents, which run on the compute nodes) of one size."""
    return sum(result['idle']['cpu_ms_per_s'].values())


def markdown(data):
    """The results file's text (str) for ``data`` (the JSON)."""
    out = ['# Idle cloud: CPU per idle host', '',
           'Command(s), machine and load of each run below; every size a '
           'fresh cloud, agents of 8 fake devices, the defaults an '
           'operator gets (`[discovery] report_interval` and `[cleaning] '
           'poll_interval` included). CPU is per second of wall time, '
           'each component its processes and their children (psutil); '
           '`agents` is every agent together, on the compute nodes, not '
           'counted in the control plane total.', '']
    for label, run in data['runs'].items():
        meta, results = run['meta'], run['results']
        slope, far = line(results)
        names = sorted(results[0]['idle']['cpu_ms_per_s'])
        out += ['## %s' % label, '',
                '`%s` at %s, %s; %.0f s; commit %s.' % (
                    meta['command'], meta['date'],
                    meta['machine'].get('cpu', '?'), meta['total_seconds'],
                    meta.get('commit', '?')), '',
                '| hosts | ' + ' | '.join(names) + ' | control plane | '
                'agents | AMQP frames in/out per s | connections | queues '
                '| load 1 min |',
                '|' + '---|' * (len(names) + 7)]
        for r in results:
            i = r['idle']
            out.append('| %d | %s | **%.1f** | %.1f | %.1f / %.1f | %d | %d '
                       '| %.1f-%.1f |' % (
                           r['hosts'], ' | '.join(
                               '%.1f' % i['cpu_ms_per_s'][n] for n in names),
                           total(r), i['agents_cpu_ms_per_s'],
                           i['amqp_frames_in_per_s'],
                           i['amqp_frames_out_per_s'], i['amqp_connections'],
                           i['amqp_queues'], i['load'][0], i['load'][1]))
        out += ['', 'Slope **%+.3f** CPU ms/s per host (goal at most %.1f: '
                '%s); on this line %d hosts cost %.0f CPU ms/s, %.2f of a '
                'core.' % (slope, GOAL_MS_PER_HOST,
                           'met' if slope <= GOAL_MS_PER_HOST else 'not met',
                           FAR, far, far / 1000.0), '']
        out += _calls(results[0])
        live = run.get('liveness')
        if live:
            out += ['Liveness (`--liveness`, one host, 8 GPUs one provider '
                    'each, `report_interval` %(report_interval_s)d s): a '
                    'GPU removed from sysfs left Placement after **%('
                    'device_removed_s).1f s**; a SIGKILLed agent left no '
                    'consumer at the broker after **%(broker_s).1f s**, '
                    'its last status beat being %(beat_age_at_kill_s).1f s '
                    'old at the kill (a monitor alerting at twice the '
                    'interval notices within %(beat_notice_bound_s)d s).'
                    % live, '']
    if data.get('notes'):
        out += ['## Reading', ''] + list(data['notes']) + ['']
    return '\n'.join(out) + '\n'


def _calls(result):
    """Lines of the per-call table (``idle_calls``) of ``result``; none
    when the run had no ``--calls``."""
    calls = result.get('calls_ms')
    if not calls:
        return []
    from benchmarks import idle_calls
    names = sorted(next(iter(calls.values())))
    out = ['What each periodic call of an idle agent costs (`--calls`, '
           'CPU ms per call, at %d host(s)):' % result['hosts'], '',
           '| call | ' + ' | '.join(names) + ' | total |',
           '|' + '---|' * (len(names) + 2)]
    for call, by in sorted(calls.items()):
        out.append('| %s | %s | **%.2f** |' % (call, ' | '.join(
            '%.2f' % by[n] for n in names), sum(by.values())))
    interval = result.get('report_interval_s', 60)
    for poll in (10.0, 60.0):
        out.append('')
        out.append('Predicted per idle host with a pass every %d s and a '
                   'cleaner look every %d s: %.3f CPU ms/s.' % (
                       interval, poll, idle_calls.per_host_ms_per_s(
                           calls, interval, poll)))
    return out + ['']


def plot(data, path):
    """Total idle CPU against hosts, one curve per run, to ``path``;
    False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, run in data['runs'].items():
        x = [r['hosts'] for r in run['results']]
        ax.plot(x, [total(r) for r in run['results']], marker='o',
                label='%s, control plane' % label)
        ax.plot(x, [r['idle']['agents_cpu_ms_per_s']
                    for r in run['results']], marker='x', linestyle=':',
                label='%s, agents' % label)
    ax.set_xlabel('idle hosts (agents)')
    ax.set_ylabel('CPU ms per second')
    ax.set_title('accel_backend idle background')
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write(results, label, name, seconds, argv, json_path=None,
          liveness=None):
    """Add run ``label`` (its ``results``, its ``liveness``: what
    ``idle_liveness.measure`` returned, or None) to ``json_path`` (None: a
    new ``<date>-<machine>-<name>.json``; replaces a run of that label)
    and render it; returns the JSON's path."""
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {'date': now.strftime('%Y-%m-%d %H:%M UTC'),
            'machine': machine.machine_info(), 'versions': machine.versions(),
            'total_seconds': seconds, 'commit': os.environ.get(
                'IDLE_COMMIT', '?'),
            'command': ' '.join(['python -m benchmarks.idle'] + list(
                argv if argv is not None else sys.argv[1:]))}
    if json_path is None:
        json_path = os.path.join(
            common.REPO, 'benchmarks', 'results', '%s-%s-%s.json' % (
                now.strftime('%Y-%m-%d'), report._slug(meta), name))
    data = {'runs': {}}
    if os.path.exists(json_path):
        with open(json_path) as f:
            data = json.load(f)
    data['runs'][label] = {'meta': meta, 'results': results,
                           'liveness': liveness}
    with open(json_path, 'w') as f:
        json.dump(data, f, indent=1)
    render(json_path)
    return json_path


def render(json_path):
    """(Re)write the Markdown and PNG beside ``json_path``; returns the
    Markdown's path."""
    with open(json_path) as f:
        data = json.load(f)
    base = json_path[:-len('.json')]
    text = markdown(data)
    if plot(data, base + '.png'):
        text += '\n![idle](%s.png)\n' % os.path.basename(base)
    with open(base + '.md', 'w') as f:
        f.write(text)
    return base + '.md'


if __name__ == '__main__':
    print(render(sys.argv[1]))
