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

"""What an idle cloud costs, per idle host (issue 55, items 3 and 4).

    python -m benchmarks.idle [--hosts 1,10,25,50] [--seconds 60]
                              [--liveness] [--calls N] [--label after]
                              [--json results.json] [--name idle]

Each size gets a fresh ``benchmarks.growth.Cloud`` (RabbitMQ, PostgreSQL,
Placement, the conductor, two APIs, one agent of 8 fake devices per
host) whose processes run with the defaults an operator gets: ``[cleaning]
poll_interval`` and ``[discovery] report_interval`` included (the growth
benchmark runs one discovery pass only).  Once every host's provider is
in Placement and every agent's first pass ended, nothing is asked of the
cloud for ``--seconds`` (default 60: one ``report_interval``, six cleaning
polls) and this reads, over that window:

* CPU milliseconds per second of each component
  (``growth_binds.cpu_by_component``, and ``agents``: every agent
  process together), per second of wall time;
* frames each way on every AMQP connection of the broker (``rabbitmqctl
  list_connections recv_cnt send_cnt``, read just outside the CPU window:
  rabbitmqctl's own work is not counted), the connections and queues;
* the Placement calls the agents made (their metrics, read outside the
  window too);
* the 1-minute load average at the start and end of the window (another
  job may share the machine: CPU per process is robust to that, a latency
  is not).

``--liveness`` adds the two latencies the cut must not make worse, on a
cloud of one host of its own (``idle_liveness``): a device removed until
Placement no longer offers it, a SIGKILLed agent until the broker has no
consumer of its host and the age of its last status beat.  ``--calls N``
takes the slope apart at the smallest size: what each periodic call of an
idle agent costs every component (``idle_calls``).  ``--label`` names the
run, ``--json`` adds it to an existing results file (a run before and one
after a change, side by side).
"""

import os
import time

from benchmarks import growth
from benchmarks import growth_binds as binds
from benchmarks import growth_probes as probes

SIZES = growth.SIZES
#: Seconds of the idle window.
IDLE_S = 60.0
#: Seconds left after the last agent's first pass, before the window: the
#: start-up's last writes and log lines settle.
SETTLE_S = 5.0
#: ``[discovery] report_interval`` here: the option's default (None: what
#: the code says), not the 0 of ``tools.launch.accel_backend.config``.
REPORT_INTERVAL = None


def _options():
    from accel_backend import conf as accel_conf
    interval = REPORT_INTERVAL
    if interval is None:
        interval = next(o.default for o in accel_conf.DISCOVERY_OPTS
                        if o.name == 'report_interval')
    return {'discovery': {'report_interval': interval}}


def agents_cpu(cloud):
    """CPU seconds every agent process used so far (float)."""
    return sum(probes.cpu_seconds(a.proc.pid, tree=True)
               for a in cloud.agents.values())


def amqp_frames(cloud):
    """``(connections, frames received, frames sent, queues)`` of the
    broker: every connection's ``recv_cnt`` and ``send_cnt`` summed."""
    conns = cloud.rabbit.ctl('list_connections', '-q', '-p', 'accel',
                             'recv_cnt', 'send_cnt')
    recv = sent = n = 0
    for line in conns.splitlines():
        parts = line.split()
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            recv, sent, n = recv + int(parts[0]), sent + int(parts[1]), n + 1
    queues = cloud.rabbit.ctl('list_queues', '-q', '-p', 'accel', 'name')
    return n, recv, sent, len([q for q in queues.splitlines()
                               if q.strip() and q.strip() != 'name'])


def placement_calls(cloud):
    """Placement calls every agent made so far (its
    ``accel_placement_request_seconds_count``); an agent whose metrics do
    not answer counts 0."""
    return sum((probes.scrape(cloud.ports[h]) or {}).get(
        probes.PLACEMENT_CALLS, 0) for h in cloud.agents)


def idle_window(cloud, seconds):
    """Read the idle background of a started cloud with its agents over
    ``seconds`` (see the module); returns a dict (CPU ms per second by
    component, frames per second, counts, load)."""
    calls0 = placement_calls(cloud)
    frames0, f0 = amqp_frames(cloud), time.monotonic()
    load0 = os.getloadavg()[0]
    cpu0, a0, t0 = (binds.cpu_by_component(cloud), agents_cpu(cloud),
                    time.monotonic())
    time.sleep(seconds)
    cpu1, a1 = binds.cpu_by_component(cloud), agents_cpu(cloud)
    span = time.monotonic() - t0
    load1 = os.getloadavg()[0]
    frames1 = amqp_frames(cloud)
    fspan = time.monotonic() - f0
    calls = placement_calls(cloud) - calls0
    by = {k: 1000.0 * (cpu1[k] - cpu0[k]) / span for k in cpu0}
    return {'cpu_ms_per_s': by,
            'agents_cpu_ms_per_s': 1000.0 * (a1 - a0) / span,
            'seconds': span, 'placement_calls': calls,
            'amqp_connections': frames1[0], 'amqp_queues': frames1[3],
            'amqp_frames_in_per_s': (frames1[1] - frames0[1]) / fspan,
            'amqp_frames_out_per_s': (frames1[2] - frames0[2]) / fspan,
            'load': (load0, load1)}


def measure(cloud, seconds=IDLE_S, stop=True):
    """Start the agents of ``cloud`` (a started ``growth.Cloud`` without
    agents), wait for their first pass, read the idle window over
    ``seconds``, then stop the agents unless ``stop`` is False.  Returns
    a dict: ``hosts``, ``startup_all_s``, ``report_interval_s`` (0:
    one pass at start), ``idle`` (``idle_window``'s), ``total_s``."""
    t0 = time.monotonic()
    start = growth.startup(cloud)
    time.sleep(SETTLE_S)
    result = {'hosts': len(cloud.hosts), 'startup_all_s': start['all_s'],
              'report_interval_s': cloud.options.get('discovery', {}).get(
                  'report_interval', 0),
              'idle': idle_window(cloud, seconds)}
    if stop:
        cloud.stop_agents()     # all at once, not one by one at cleanup
    result['total_s'] = time.monotonic() - t0
    return result


def main(argv=None):
    """Measure each size of ``--hosts``; write the results file, its JSON
    and its plot to ``benchmarks/results/`` (``idle_report``)."""
    import argparse

    from benchmarks import idle_calls
    from benchmarks import idle_liveness
    from benchmarks import idle_report
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', default=','.join(map(str, SIZES)))
    parser.add_argument('--seconds', type=float, default=IDLE_S)
    parser.add_argument('--liveness', action='store_true')
    parser.add_argument('--calls', type=int, default=0,
                        help='at the smallest size, send each periodic '
                             'call this many times (idle_calls)')
    parser.add_argument('--label', default='after',
                        help='what the run measures (before, after...)')
    parser.add_argument('--json', help='add this run to a results JSON')
    parser.add_argument('--name', default='idle')
    args = parser.parse_args(argv)
    started = time.monotonic()
    results, liveness, path = [], None, args.json
    sizes = [int(x) for x in args.hosts.split(',') if x]
    for n in sizes:
        print('idle: %d hosts' % n, flush=True)
        with growth.Cloud([growth.host_name(i) for i in range(n)],
                          options=_options()) as cloud:
            calls = args.calls if n == min(sizes) else 0
            results.append(measure(cloud, args.seconds, stop=not calls))
            if calls:
                results[-1]['calls_ms'] = idle_calls.costs(
                    cloud, cloud.hosts[0], calls)
                cloud.stop_agents()
        print('idle: %d hosts: %.1f CPU ms/s' % (n, sum(
            results[-1]['idle']['cpu_ms_per_s'].values())), flush=True)
        # Written after every size: a run cut short keeps what it read.
        path = idle_report.write(results, args.label, args.name,
                                 time.monotonic() - started, argv, path)
    if args.liveness:
        liveness = idle_liveness.measure(_options())
    print(idle_report.write(results, args.label, args.name,
                            time.monotonic() - started, argv, path,
                            liveness=liveness))


if __name__ == '__main__':
    main()
