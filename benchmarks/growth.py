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

"""Growth curves from real processes, one cloud per number of hosts.

    python -m benchmarks.growth [--hosts 1,10,25,50]

Each size gets a fresh cloud (``Cloud``): RabbitMQ, PostgreSQL, Placement
(gunicorn, its database on the same PostgreSQL), the in-process Nova
stub, ``accel-backend-conductor``, two ``accel-backend-api`` processes
and one ``accel-backend-agent`` per host (no ``[database]`` section), the
fixtures of ``tests.functional.test_multinode``.  Every agent reports 8
devices as ``LAYOUTS`` says (default ``pooled``: the fake driver), a
discovery pass at start only (``report_interval = 0``) and its Prometheus
metrics on a port of its own, from which the Placement calls are counted
(``accel_placement_request_seconds_count``, every call the agent's
``PlacementClient`` made).  ``measure`` takes, in order:

* start-up: all agents spawned at once; seconds until each host's
  provider has its inventory in Placement (polled every 0.2 s), the CPU
  seconds each agent used by then, Placement calls per host;
* restart: every agent stopped (SIGTERM) and started again, nothing
  changed; seconds until each one's discovery pass ended, Placement calls;
* a probe (``growth_binds``): 24 binds on host 1, one at a time, PATCH
  to event;
* a bind storm: 8 ARQs per host created, then all bound at once (one
  PATCH per ARQ, each for an instance of its own, ``STORM_THREADS``
  threads alternating between the APIs); per ARQ the seconds from its
  PATCH being sent to its ``accelerator-request-bound`` event reaching the
  Nova stub; ARQs with more than one event, attach handles held by more
  than one ARQ, ARQs not Bound, and log lines (every process, PostgreSQL
  included) naming a deadlock; CPU milliseconds per bind of each
  component (``growth_binds.cpu_by_component``), less the background
  each has with nothing asked of it (``growth_binds.idle_cpu``, read
  just before), which is reported apart;
* resident memory (``VmRSS``) of each agent, API process and the
  conductor after the storm; connections to the database (all, and those
  not idle) sampled every 0.1 s during the storm, and once idle after it.

Every process shares this machine with the harness (the Nova stub, the
pollers and the threads sending the binds run in this process)."""

import concurrent.futures
import os
import re
import threading
import time
import uuid

import fixtures
import sqlalchemy as sa

from accel_backend import conf as accel_conf
from benchmarks import growth_binds as binds
from benchmarks import growth_probes as probes
from tests.functional.fixtures import accel_nodes
from tests import waiting
from tools.fixtures import databases
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import process
from tools.fixtures import rabbitmq
from tools.fixtures import sysfs as sysfs_fx
from tools import launch

SIZES = (1, 10, 25, 50)
DEVICES = 8
#: How the 8 devices of a host are reported: ``pooled``, the fake driver
#: (one deployable and provider of ``FPGA`` total 8, 8 attach handles);
#: ``per_device``, ``generic_pci`` over a recorded tree of 8 T4-like GPUs
#: (``tools.fixtures.sysfs.make_sysfs``: 8 providers of ``PGPU`` total 1).
#: ``rc``, ``trait``: the device profile's group; ``per_rp``: devices per
#: provider.
LAYOUTS = {
    'pooled': {'rc': 'FPGA', 'trait': 'CUSTOM_FAKE_DEVICE', 'per_rp': 8,
               'drivers': 'fake'},
    'per_device': {'rc': 'PGPU', 'trait': 'CUSTOM_NVIDIA_T4', 'per_rp': 1,
                   'drivers': 'generic_pci'}}
#: ``[cleaning] poll_interval`` of every process: the option's default,
#: not the 1 s of the functional tests' configuration (each agent's look
#: for dirty devices is a conductor call, a background that grows with
#: the hosts).
CLEANING_POLL = next(o.default for o in accel_conf.CLEANING_OPTS
                     if o.name == 'poll_interval')
#: Threads of this process sending the creates and the binds.
STORM_THREADS = 16
#: ``[api] workers`` (threads) of each API process.
API_THREADS = 8
#: Seconds any wait may take (50 agents starting on 2 cores are slow).
WAIT = 600
DEADLOCK = re.compile('deadlock', re.IGNORECASE)


def host_name(i):
    """Name of host ``i`` (int): ``growth-001``..."""
    return 'growth-%03d' % (i + 1)


class Cloud(fixtures.Fixture):
    """Everything but the agents, started for ``hosts`` hosts (their
    compute node providers created in Placement).

    :param hosts: host names (list of str).
    :param layout: a key of ``LAYOUTS``.
    :param workdir: where Placement keeps its files (kept), or None.
    :param options: ``{section: {option: value}}`` of every agent, or None.
    :ivar roots: ``{host: compute node provider UUID}``.
    :ivar agents: ``{host: AgentProcess}`` once ``start_agents`` ran.
    """

    def __init__(self, hosts, layout='pooled', workdir=None, options=None):
        super().__init__()
        self.options = options or {}
        self.workdir = workdir
        self.hosts = list(hosts)
        self.layout = layout
        self.shape = LAYOUTS[layout]
        self.agents = {}
        self.ports = {}

    def _setUp(self):
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer(wait=False))
        self.pg = self.useFixture(databases.PostgreSQLServer())
        self.db_name = 'accel_growth'
        database = self.pg.create_database(self.db_name)
        # Placement on PostgreSQL, as deployed: SQLite fails concurrent
        # writers (500, "database is locked").
        self.placement = self.useFixture(placement_fx.PlacementServer(
            self.workdir, connection=self.pg.create_database('placement')))
        self.nova = self.useFixture(nova_stub.NovaStub())
        self.roots = {h: self.placement.create_provider(h)
                      for h in self.hosts}
        self.rabbit.wait_ready()
        url = self.rabbit.add_user('accel', 'secret', 'accel',
                                   '.*', '.*', '.*')
        tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = accel_nodes.MultiNodeConf(
            database, url, self.placement, self.nova,
            sysfs_root=sysfs_fx.make_sysfs(os.path.join(tmp, 'sys'), DEVICES),
            spec=sysfs_fx.GPU_SPEC, api_workers=API_THREADS,
            options={'discovery': {'enabled_drivers': self.shape['drivers'],
                                   'fake_total': DEVICES,
                                   'report_interval': 0},
                     'cleaning': {'poll_interval': CLEANING_POLL}})
        self.conf.db_sync(tmp)
        self.db = sa.create_engine(database)
        self.addCleanup(self.db.dispose)
        self.conductor = self.useFixture(accel_nodes.ConductorProcess(
            self.conf, 'conductor1'))
        self.conductor.wait_started(WAIT)
        self.apis = [self.useFixture(accel_nodes.ApiServer(
            self.conf, 'api%d' % i)) for i in (1, 2)]

    def spawn_agents(self):
        """Spawn one agent per host at once (no wait); returns the
        ``time.perf_counter()`` before the first."""
        t0 = time.perf_counter()
        for host in self.hosts:
            self.ports[host] = launch.listen_port()
            self.agents[host] = self.useFixture(accel_nodes.AgentProcess(
                self.conf, host, options=dict(self.options, metrics={
                    'enabled': True, 'port': self.ports[host]})))
        return t0

    def providers(self):
        """``{host: [child provider UUID, ...]}`` of the hosts whose
        providers all have their whole inventory in Placement."""
        per_rp = self.shape['per_rp']
        found = self.placement.request(
            'GET', '/resource_providers?resources=%s:%d' % (
                self.shape['rc'], per_rp))
        by_root = {r: h for h, r in self.roots.items()}
        out = {}
        for rp in found['resource_providers']:
            if rp['root_provider_uuid'] in by_root:
                out.setdefault(by_root[rp['root_provider_uuid']],
                               []).append(rp['uuid'])
        return {h: sorted(rps) for h, rps in out.items()
                if len(rps) == DEVICES // per_rp}

    def stop_agents(self):
        """SIGTERM every agent at once, then wait for each (SIGKILL after
        its ``STOP_TIMEOUT``)."""
        for agent in self.agents.values():
            agent.proc.terminate()
        for agent in self.agents.values():
            process.terminate(agent.proc, agent.STOP_TIMEOUT)

    def check_alive(self):
        """:raises AssertionError: an agent exited (its log's end)."""
        for host, agent in self.agents.items():
            if agent.proc.poll() is not None:
                raise AssertionError('agent %s exited (%s):\n%s' % (
                    host, agent.proc.returncode, agent.log_text()[-2000:]))

    def reported(self, host):
        """``{metric: value}`` of ``host``'s agent once its discovery pass
        ended, else None."""
        got = probes.scrape(self.ports[host])
        if got and got.get('accel_discovery_seconds_count', 0) >= 1:
            return got
        return None

    def logs(self):
        """``{process: log text}`` of every process and every run."""
        out = {'conductor': self.conductor.log_text(),
               'postgresql': self.pg.log_text()}
        for api in self.apis:
            out[api.name] = api.all_logs()
        for host, agent in self.agents.items():
            for run in range(1, agent.runs + 1):
                out['%s-%d' % (host, run)] = agent.log_text(run)
        return out

    def connections(self):
        """``(open, not idle)`` connections to the accel database."""
        with self.pg.admin.connect() as conn:
            return tuple(conn.execute(sa.text(
                "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') "
                'FROM pg_stat_activity WHERE datname = :db'),
                {'db': self.db_name}).one())


def startup(cloud):
    """Spawn every agent; the start-up figures (dict)."""
    before = binds.cpu_by_component(cloud)
    t0 = cloud.spawn_agents()
    ready, cpu = {}, {}
    pids = {h: a.proc.pid for h, a in cloud.agents.items()}

    def all_ready():
        cloud.check_alive()
        now = time.perf_counter()
        for host in set(cloud.providers()) - set(ready):
            ready[host] = now - t0
            cpu[host] = probes.cpu_seconds(pids[host])
        return len(ready) == len(cloud.hosts)
    _wait('every provider in Placement', all_ready)
    got = {h: _wait('%s discovery pass' % h, lambda h=h: cloud.reported(h))
           for h in cloud.hosts}
    after = binds.cpu_by_component(cloud)
    return {'ready_s': ready, 'cpu_s': cpu, 'all_s': max(ready.values()),
            'component_cpu_s': {k: after[k] - before[k] for k in after},
            'placement_calls': {h: g[probes.PLACEMENT_CALLS]
                                for h, g in got.items()},
            'placement_by_call': probes.by_call(got.values())}


def restart(cloud):
    """Stop every agent (SIGTERM), start them all again with nothing
    changed; the restart figures (dict)."""
    cloud.stop_agents()
    t0 = time.perf_counter()
    for agent in cloud.agents.values():
        agent.spawn()
    done, got = {}, {}

    def all_done():
        cloud.check_alive()
        for host in set(cloud.hosts) - set(done):
            got[host] = cloud.reported(host)
            if got[host]:
                done[host] = time.perf_counter() - t0
        return len(done) == len(cloud.hosts)
    _wait('every agent reported again', all_done)
    return {'done_s': done, 'all_s': max(done.values()),
            'placement_calls': {h: g[probes.PLACEMENT_CALLS]
                                for h, g in got.items()},
            'placement_by_call': probes.by_call(got.values())}


def _wait(what, predicate):
    return waiting.wait_for(what, predicate, WAIT, interval=0.2)


def _pool(fn, items):
    with concurrent.futures.ThreadPoolExecutor(STORM_THREADS) as pool:
        return list(pool.map(fn, items))


def storm(cloud, wanted, profile):
    """An ARQ for each of ``wanted`` (``growth_binds.targets``) created,
    the idle CPU read, then all bound at once; the storm figures
    (dict)."""
    def create(i):
        (arq,) = cloud.apis[i % 2].request(
            'POST', '/v2/accelerator_requests',
            {'device_profile_name': profile}, expect=(201,))['arqs']
        return arq['uuid']
    arqs = _pool(create, range(len(wanted)))
    idle = binds.idle_cpu(cloud)
    sent, errors = {}, []
    mark = cloud.nova.mark()
    sampling = threading.Event()
    samples = [cloud.connections()]
    sampler = threading.Thread(target=_sample, daemon=True,
                               args=(cloud, sampling, samples))
    sampler.start()
    cpu, cpu_t0 = binds.cpu_by_component(cloud), time.monotonic()

    def bind(i):
        arq, (host, rp) = arqs[i], wanted[i]
        sent[arq] = time.perf_counter()
        try:
            cloud.apis[i % 2].request(
                'PATCH', '/v2/accelerator_requests',
                binds.bind_body(arq, host, rp, str(uuid.uuid4())),
                expect=(202,))
        except AssertionError as e:
            errors.append(str(e))
    _pool(bind, range(len(arqs)))
    events = cloud.nova.wait_tags(arqs, since=mark, timeout=WAIT)
    after = binds.cpu_by_component(cloud)
    seconds = time.monotonic() - cpu_t0
    gross = binds.per_bind_ms(cpu, after, len(arqs))
    cpu = binds.per_bind_ms(cpu, after, len(arqs), idle, seconds)
    sampling.set()
    sampler.join()
    time.sleep(1)  # an event sent twice would come now
    latency = sorted(events[a][0] - sent[a] for a in arqs)
    span = max(t for t, _ in events.values()) - min(sent.values())
    counts = cloud.nova.events_by_tag()
    return dict(binds.check_rows(cloud, arqs), **{
        'arqs': len(arqs), 'binds_per_s': len(arqs) / span,
        'cpu_ms_per_bind': cpu, 'cpu_gross_ms_per_bind': gross,
        'idle_cpu_ms_per_s': {k: 1000.0 * v for k, v in idle.items()},
        'latency_s': latency, 'patch_errors': errors,
        'bound_twice': sum(len(counts.get(a, ())) > 1 for a in arqs),
        'deadlocks': {k: len(DEADLOCK.findall(v))
                      for k, v in cloud.logs().items()
                      if DEADLOCK.search(v)},
        'connections_peak': [max(c) for c in zip(*samples)],
        'connections_idle': list(cloud.connections())})


def _sample(cloud, stop, into):
    while not stop.wait(0.1):
        into.append(cloud.connections())


def measure(cloud):
    """Every figure of one size on a started ``Cloud`` without agents
    (dict, seconds and MiB; see the module's docstring)."""
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    result = {'hosts': len(cloud.hosts), 'devices_per_host': DEVICES,
              'layout': cloud.layout,
              'startup': startup(cloud)}
    result['restart'] = restart(cloud)
    profile = {'name': 'growth', 'groups': [{
        'resources:%s' % cloud.shape['rc']: '1',
        'trait:%s' % cloud.shape['trait']: 'required'}]}
    cloud.apis[0].request('POST', '/v2/device_profiles', [profile],
                          expect=(201,))
    wanted = binds.targets(cloud, cloud.providers(), DEVICES)
    result['probe_s'] = binds.probe(cloud, 'growth',
                                    wanted[:binds.PROBE_BINDS], WAIT)
    result['storm'] = storm(cloud, wanted, 'growth')
    result['memory_mib'] = probes.memory(cloud)
    cloud.stop_agents()
    result['load'] = (load0, os.getloadavg()[0])
    result['seconds'] = time.monotonic() - t0
    return result


def main(argv=None):
    """Measure every size of ``--hosts``, write the results file, its
    JSON and plot to ``benchmarks/results/``."""
    import argparse

    from benchmarks import growth_report
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', default=','.join(map(str, SIZES)))
    parser.add_argument('--layout', default='pooled', choices=LAYOUTS)
    parser.add_argument('--name', default='growth')
    args = parser.parse_args(argv)
    started = time.monotonic()
    results = []
    for n in [int(x) for x in args.hosts.split(',')]:
        print('growth: %d hosts' % n, flush=True)
        with Cloud([host_name(i) for i in range(n)], args.layout) as cloud:
            results.append(measure(cloud))
        print('growth: %d hosts done in %.0f s' % (
            n, results[-1]['seconds']), flush=True)
    path = growth_report.write(results, args.name,
                               time.monotonic() - started, argv)
    print(path)


if __name__ == '__main__':
    main()
