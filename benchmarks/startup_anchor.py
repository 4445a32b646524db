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

"""The start-up anchor of the growth curves: upstream Cyborg 17's report
of a device to Placement beside accel_backend's, for the same device, in
one run.

    python -m benchmarks.startup_anchor [--rounds 3]

Both sides report Cyborg's fake device (one FPGA deployable of 16 units,
trait ``CUSTOM_FAKE_DEVICE``: openstack/cyborg
``cyborg/accelerator/drivers/fake.py``, 17.0.0, which accel_backend's
``fake`` driver reproduces) under a compute node provider created first,
as nova-compute would, to one Placement (``PlacementServer``, SQLite).
Each side's Placement traffic goes through a counting HTTP proxy of its
own (``tests.reliability.fixtures.FaultProxy``, no faults), so the two
counts are of the same thing: HTTP calls that reached Placement.

Cyborg 17 runs as ``benchmarks.upstream`` starts it: cyborg-api
(gunicorn), cyborg-conductor and cyborg-agent with the fake driver,
RabbitMQ, SQLite, ``periodic_interval = PERIOD``.  accel_backend runs as
one ``accel-backend`` process (SQLite, ``enabled_drivers = fake``,
``report_interval = PERIOD``).  The sides take turns, one round each
(Cyborg first), each round on a fresh database and a fresh compute node
provider; the provider tree is deleted after the round.

Per round:

* ``startup_s``: from the side's first process being created (its
  ``create_time``) to the deployable's provider, with its inventory and
  trait, being listed by Placement (polled every ``POLL`` s);
* ``calls_to_reported``: Placement calls until then; ``calls_startup``:
  until ``SETTLE`` s after it (the whole first report);
* ``calls_per_report``: calls per period over the next ``PERIODS``
  periodic reports with nothing changed;
* ``cpu_s``: CPU seconds of the side's processes (with their workers)
  from creation to reported, and (Cyborg) RabbitMQ's over the same span,
  apart; ``rss_mib``: their resident memory at the end.

What is not alike: Cyborg starts three Python services and needs a
broker; accel_backend starts one process.  That is the deployment each
ships by default for one host, and what an operator waits for.
"""

import argparse
import contextlib
import datetime
import json
import math
import os
import statistics
import tempfile
import time

import psutil

from benchmarks import common
from benchmarks import growth_probes as probes
from benchmarks import report
from tests.reliability import fixtures as rel_fixtures
from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import cyborg as cyborg_fx
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import rabbitmq
from tools.launch import cyborg as launch_cyborg
from tools import machine

#: Seconds between the periodic reports of both sides.
PERIOD = 10
#: Periodic reports counted after the start-up report.
PERIODS = 3
#: Seconds after "reported" still counted as the start-up report.
SETTLE = 3.0
#: Seconds between two looks at Placement.
POLL = 0.1
#: Seconds a side may take to report.
TIMEOUT = 180
SIDES = ('cyborg', 'accel_backend')


def reported(placement, root):
    """The deployable's provider under ``root`` once Placement lists it
    with FPGA inventory and ``CUSTOM_FAKE_DEVICE`` (its inventory dict),
    else None."""
    found = placement.request(
        'GET', '/resource_providers?in_tree=%s&resources=FPGA:1'
        % root)['resource_providers']
    if not found:
        return None
    path = '/resource_providers/%s/' % found[0]['uuid']
    if 'CUSTOM_FAKE_DEVICE' not in placement.request(
            'GET', path + 'traits')['traits']:
        return None
    return placement.request('GET', path + 'inventories')['inventories']


def delete_tree(placement, root):
    """Delete every provider of the tree rooted at ``root``, leaves
    first."""
    tree = placement.providers(root)
    while tree:
        parents = {p['parent_provider_uuid'] for p in tree}
        for rp in [p for p in tree if p['uuid'] not in parents]:
            placement.request('DELETE', '/resource_providers/%s'
                              % rp['uuid'])
        tree = [p for p in tree if p['uuid'] in parents]


def _start_cyborg(env, workdir, proxy):
    """Cyborg 17's services on a fresh database; ``(fixture, pids)``."""
    cyborg = cyborg_fx.CyborgServices(
        proxy.endpoint, env['stub'].endpoint, env['rabbit'].url,
        workdir=workdir, venv=env['venv'], periodic_interval=PERIOD)
    tools_fixtures.start(cyborg)
    return cyborg, [p.pid for p in cyborg.procs]


def _start_accel(env, workdir, proxy, host):
    """One ``accel-backend`` with the fake driver; ``(fixture, pids)``."""
    sysfs = os.path.join(workdir, 'empty-sysfs')
    os.makedirs(sysfs, exist_ok=True)
    backend = accel_fx.AccelBackendServer(
        proxy.endpoint, env['stub'].endpoint, sysfs, (), host=host,
        workdir=workdir, options={'discovery': {
            'enabled_drivers': 'fake', 'report_interval': PERIOD}})
    tools_fixtures.start(backend)
    return backend, [backend.proc.pid]


def _calls(proxy, since, until):
    """Calls the proxy answered in ``(since, until]`` (monotonic s; the
    proxy is the round's own, so ``since`` may be ``-inf``)."""
    with proxy.lock:
        return [e for e in proxy.log if since < e[3] <= until]


def one_round(env, side, n):
    """Start ``side``, measure its report, stop it; the round's dict
    (see the module's docstring).

    :raises AssertionError: it does not report in ``TIMEOUT`` s.
    """
    placement = env['placement']
    host = launch_cyborg.HOST if side == 'cyborg' else 'anchor-%d' % n
    root = placement.create_provider(host)
    workdir = os.path.join(env['workdir'], '%s-%d' % (side, n))
    proxy = tools_fixtures.start(rel_fixtures.FaultProxy(
        placement.endpoint))
    rabbit_pid = env['rabbit'].proc.pid if side == 'cyborg' else None
    rabbit0 = rabbit_pid and probes.cpu_seconds(rabbit_pid, tree=True)
    wall0 = time.time()
    start = _start_cyborg if side == 'cyborg' else (
        lambda e, w, p: _start_accel(e, w, p, host))
    fixture, pids = start(env, workdir, proxy)
    try:
        born = min(psutil.Process(p).create_time() for p in pids)
        deadline = time.monotonic() + TIMEOUT
        while not (inventory := reported(placement, root)):
            if time.monotonic() > deadline:
                raise AssertionError('%s did not report in %d s' % (
                    side, TIMEOUT))
            time.sleep(POLL)
        at, at_wall = time.monotonic(), time.time()
        cpu = sum(probes.cpu_seconds(p, tree=True) for p in pids)
        rabbit_cpu = rabbit_pid and (
            probes.cpu_seconds(rabbit_pid, tree=True) - rabbit0)
        time.sleep(SETTLE + PERIODS * PERIOD)
        end = time.monotonic()
        first = _calls(proxy, -math.inf, at + SETTLE)
        steady = _calls(proxy, at + SETTLE, end)
        return {
            'side': side, 'round': n, 'startup_s': at_wall - born,
            'harness_s': born - wall0,
            'inventory': inventory,
            'calls_to_reported': len(_calls(proxy, -math.inf, at)),
            'calls_startup': len(first),
            'calls_per_report': len(steady) / float(PERIODS),
            'startup_by_call': _by_call(first),
            'steady_by_call': _by_call(steady),
            'cpu_s': cpu,
            'rabbitmq_cpu_s': rabbit_cpu,
            'rss_mib': sum(probes.rss_mib(p) for p in pids)}
    finally:
        fixture.cleanUp()
        proxy.cleanUp()
        delete_tree(placement, root)


def _by_call(entries):
    """``{'<method> <path without query> <status>': count}``."""
    out = {}
    for method, path, status, _ in entries:
        key = '%s %s %s' % (method, _shape(path.split('?')[0]), status)
        out[key] = out.get(key, 0) + 1
    return out


def _shape(path):
    """``path`` with UUIDs as ``{uuid}``."""
    return '/'.join('{uuid}' if len(part) == 36 and part.count('-') == 4
                    else part for part in path.split('/'))


FIGURES = (('startup_s', 'start-up to reported, s', '%.2f'),
           ('calls_to_reported', 'Placement calls to reported', '%.1f'),
           ('calls_startup', 'Placement calls, whole start-up report',
            '%.1f'),
           ('calls_per_report', 'Placement calls per unchanged report',
            '%.1f'),
           ('cpu_s', 'CPU s of its processes to reported', '%.2f'),
           ('rss_mib', 'RSS of its processes, MiB', '%.0f'))


def summarise(rounds):
    """``{figure: {side: {'median', 'min', 'max', 'n'}}, 'ratio'}``
    (Cyborg / accel_backend, of the medians)."""
    out = {}
    for key, _, _ in FIGURES:
        per = {}
        for side in SIDES:
            values = [r[key] for r in rounds if r['side'] == side]
            per[side] = {'median': statistics.median(values),
                         'min': min(values), 'max': max(values),
                         'n': len(values)}
        per['ratio'] = common.ratio(per['cyborg']['median'],
                                    per['accel_backend']['median'])
        out[key] = per
    return out


def markdown(data):
    """The results file's text from ``data`` (``main``'s JSON)."""
    meta, rounds = data['meta'], data['rounds']
    summary = summarise(rounds)
    lines = ['# Start-up report: Cyborg 17 vs accel_backend, one run', '',
             '%s; %s, %s cores; `%s`; %d rounds per side, taking turns; '
             'periodic reports every %d s.' % (
                 meta['date'], meta['machine']['cpu'],
                 meta['machine']['cores'], meta['command'], meta['rounds'],
                 PERIOD), '',
             '| figure | Cyborg 17 median (min-max) | accel_backend median '
             '(min-max) | Cyborg / accel_backend |', '|---|---|---|---|']
    for key, label, fmt in FIGURES:
        cells = [(fmt + ' (' + fmt + '-' + fmt + ')') % (
            s['median'], s['min'], s['max'])
            for s in (summary[key]['cyborg'], summary[key]['accel_backend'])]
        ratio = summary[key]['ratio']
        lines.append('| %s | %s | %s | %s |' % (
            label, cells[0], cells[1],
            '-' if ratio is None else '%.2fx' % ratio))
    rabbit = [r['rabbitmq_cpu_s'] for r in rounds if r['side'] == 'cyborg']
    lines += ['', 'RabbitMQ (Cyborg only), CPU s over the same spans: '
              'median %.2f (n=%d), not counted above.' % (
                  statistics.median(rabbit), len(rabbit)), '',
              '## Placement calls by kind, first round of each side', '']
    for side in SIDES:
        first = [r for r in rounds if r['side'] == side][0]
        lines.append('**%s**, inventory %s' % (side, json.dumps(
            first['inventory'], sort_keys=True)))
        lines.append('')
        for what in ('startup_by_call', 'steady_by_call'):
            calls = ', '.join('%s x%d' % kv
                              for kv in sorted(first[what].items()))
            lines.append('- %s: %s' % (what.split('_')[0], calls or 'none'))
        lines.append('')
    return '\n'.join(lines)


def measure(rounds, workdir):
    """Every round of both sides (list of dicts)."""
    log = os.path.join(workdir, 'upstream-setup.log')
    env = {'workdir': workdir, 'venv': os.path.dirname(os.path.dirname(
        cyborg_fx.ensure_venv(log)))}
    rabbitmq.ensure_installed(log)
    out = []
    with contextlib.ExitStack() as stack:
        for name, fx in (('placement', placement_fx.PlacementServer(
                workdir)), ('stub', nova_stub.NovaStubProcess(workdir)),
                ('rabbit', rabbitmq.RabbitMQServer())):
            env[name] = tools_fixtures.start(fx)
            stack.callback(fx.cleanUp)
        for n in range(rounds):
            for side in SIDES:
                out.append(one_round(env, side, n))
                print('startup_anchor: %s round %d: %.2f s, %d calls' % (
                    side, n, out[-1]['startup_s'],
                    out[-1]['calls_startup']), flush=True)
    return out


def main(argv=None):
    """Measure, then write ``benchmarks/results/<date>-<machine>-
    startup-anchor.md`` and its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--render', metavar='JSON',
                        help='only (re)write the Markdown of this results '
                        'file')
    args = parser.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            data = json.load(f)
        return _write_md(args.render[:-len('.json')], data)
    now = datetime.datetime.now(datetime.timezone.utc)
    meta = {'date': now.strftime('%Y-%m-%d %H:%M UTC'),
            'machine': machine.machine_info(), 'versions': machine.versions(),
            'rounds': args.rounds,
            'command': 'python -m benchmarks.startup_anchor --rounds %d'
            % args.rounds}
    with tempfile.TemporaryDirectory(prefix='startup-anchor-') as workdir:
        data = {'meta': meta, 'rounds': measure(args.rounds, workdir)}
    base = os.path.join(common.REPO, 'benchmarks', 'results', '%s-%s-%s' % (
        now.strftime('%Y-%m-%d'), report._slug(meta), 'startup-anchor'))
    with open(base + '.json', 'w') as f:
        json.dump(data, f, indent=1)
    _write_md(base, data)


def _write_md(base, data):
    with open(base + '.md', 'w') as f:
        f.write(markdown(data) + '\n')
    print(base + '.md')


if __name__ == '__main__':
    main()
