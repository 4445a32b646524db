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

"""Boots per second through Nova 34 at 1 to 500 hosts (issue 55, items 2
and 4).

    python -m benchmarks.nova_boot [--hosts 1,100,500] [--boots 30]
                                   [--concurrent 8] [--no-plots]

One process per size (Nova's harness is one per process), each Nova 34's
functional harness (``tests.functional.base.AccelServersTestBase``: real
nova-api, nova-scheduler, nova-conductor, Placement, accel_backend over
HTTP) with ``hosts`` nova-compute services of the bundle's
``accel.FakeDriver`` (Nova's ``SmallFakeDriver``: a boot spawns nothing),
and our weigher after Nova's own (``[filter_scheduler] weight_classes``).
Every host is a two-socket server of 8 H100-like GPUs, 4 per NUMA node
(``tests.unit.accel_backend.test_pooled.write_hgx``), pooled by a device
spec with ``"pool": true``, reported to Placement by accel_backend's own
code: host 1 by the embedded service of the harness (API, binder,
events), every other host by an agent-role ``Service`` of its own with
the database at hand (``direct_db``), its ``discover_and_report`` called
once; all share the one accel_backend database. The layout follows
``[discovery] pool_numa_span`` as the code defaults it (recorded): per
NUMA node, an 8-GPU profile is two groups of 4; spanning, one group of 8.

Flavors ``plain``, ``gpu1`` and ``gpu8`` (1 VCPU, 512 MB each) take
turns (``benchmarks.stats.interleaved``), after one warm-up boot each,
one boot at a time; each server is deleted and its host's devices
cleaned (``Cleaner.clean_pending``) before the next boot, untimed.  Then,
where there are at least ``--concurrent`` hosts, rounds of that many
boots of one flavor posted at once (boots/s = boots / wall time).

A boot's time runs from its ``POST /servers`` to the moment nova-compute
has saved it ``ACTIVE`` (the return of ``ComputeManager.
_build_and_run_instance``, which saves ``ACTIVE`` and sends
``instance.create.end``; no polling).  Its phases come from wrapping five
Nova methods in this benchmark process only
(``benchmarks.nova_boot_marks``).
"""

import argparse
import os
import sys
import threading
import time
import unittest

import tests  # noqa: F401  (chooses Nova's threading mode first)

import fixtures

from accel_backend import conf as accel_conf
from accel_backend import service as accel_service
from accel_common import arq_states
from benchmarks import nova_boot_driver
from benchmarks import nova_boot_marks
from benchmarks import nova_boot_report
from benchmarks import stats
from tests.functional import base
from tests.functional import test_pooled
from tests.unit.accel_backend import test_pooled as hgx
from tools.launch import accel_backend as launch_accel

SIZES = (1, 100, 500)
FLAVORS = nova_boot_report.FLAVORS
PHASES = nova_boot_report.PHASES
ORDER = nova_boot_marks.ORDER
phases = nova_boot_marks.phases
WEIGHER = ('nova_accel.scheduler.weighers.'
           'AcceleratorHostReservationWeigher')
TIMEOUT = 300


def host_name(i):
    """Name of host ``i`` (int from 0): ``host-0001``..."""
    return 'host-%04d' % (i + 1)


def gpu8_groups(span):
    """Device profile groups of an 8-GPU server: one group of 8 when pools
    span the NUMA nodes, else one group of 4 per node (a group is one
    provider; ``benchmarks.sched.device_profile`` alike)."""
    if span:
        return [{'resources:PGPU': '8'}]
    return [{'resources:PGPU': '4'}, {'resources:PGPU': '4'}]


class ManyHostsBoot(base.AccelServersTestBase):
    """The harness of one size: ``HOSTS`` fake-driver computes of 8 GPUs.

    Class attributes set by ``measure``: ``HOSTS``, ``BOOTS``,
    ``CONCURRENT``, ``ROUNDS``; the outcome lands in ``RESULT``.
    """

    COMPUTE = host_name(0)
    DEVICE_SPECS = [test_pooled.SPEC]
    HOSTS, BOOTS, CONCURRENT, ROUNDS = 1, 1, 0, 2
    RESULT = {}
    #: Path the result is written to at the end of the test, or None.
    OUT = None

    def _setup_compute_service(self):
        self.flags(compute_driver='accel.FakeDriver')

    def _setup_scheduler_service(self):
        # 500 services' heartbeats every 10 s would be a DB write each
        # 20 ms on the harness's cores: once an hour, never "down".
        self.flags(report_interval=3600, service_down_time=7200)
        self.flags(weight_classes=['nova.scheduler.weights.all_weighers',
                                   WEIGHER], group='filter_scheduler')
        return super()._setup_scheduler_service()

    def start_compute(self, hostname='compute1', **kwargs):
        self.computes[hostname] = self.start_service('compute',
                                                     host=hostname)
        return hostname

    def setUp(self):
        root = self.useFixture(fixtures.TempDir()).path
        hgx.write_hgx(root)     # 4 GPUs on each of 2 NUMA nodes
        self.SYSFS_ROOT = root
        self.marks = nova_boot_marks.Marks()
        for patch in self.marks.patches():
            self.useFixture(patch)
        t0 = time.perf_counter()
        super().setUp()
        self.agents = {self.COMPUTE: self.accel}
        work = self.useFixture(fixtures.TempDir()).path
        for i in range(1, self.HOSTS):
            self._add_host(host_name(i), work)
        self.RESULT['setup_s'] = time.perf_counter() - t0
        # A profiler attached from outside starts on this line.
        print('nova_boot: %d hosts up in %.0f s' % (
            self.HOSTS, self.RESULT['setup_s']), file=sys.stderr, flush=True)

    def _add_host(self, host, work):
        """nova-compute of ``host``, then its GPUs reported by an agent-role
        ``Service`` (accel_backend's discovery and report code)."""
        self.start_compute(host)
        state = os.path.join(work, host)
        os.makedirs(state)
        path = os.path.join(state, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(launch_accel.config(
                self.placement_fixture.endpoint, self.api_fixture.base_url,
                self.SYSFS_ROOT, self.DEVICE_SPECS,
                DEFAULT={'host': host, 'state_path': state},
                database={'connection':
                          self.accel.conf.database.connection}))
        agent = accel_service.Service(
            accel_conf.new_conf(config_files=[path]),
            role=accel_service.AGENT, direct_db=True, transport=object())
        self.addCleanup(agent.db.dispose)
        agent.discover_and_report()
        self.agents[host] = agent

    def pools(self, host):
        """PGPU totals of ``host``'s device providers in Placement."""
        root = self._get_provider_uuid_by_host(host)
        rps = self.placement.get('/resource_providers?in_tree=%s' % root,
                                 version='1.14').body['resource_providers']
        return sorted(self.placement.get(
            '/resource_providers/%s/inventories' % rp['uuid']).body[
                'inventories']['PGPU']['total']
            for rp in rps if rp['uuid'] != root)

    def body(self, flavor_id):
        # Nova's helper sets the client's microversion for a moment: built
        # in the main thread only.
        return self._build_server(flavor_id=flavor_id, networks='none')

    def boot(self, body):
        """POST one server; returns ``(uuid, post mark, POST seconds)``."""
        t0 = time.perf_counter()
        server = self.api.post_server({'server': body})
        t1 = time.perf_counter()
        self.marks.at.setdefault(server['id'], {})['post'] = t0
        return server['id'], t0, t1 - t0

    def finish(self, uuid):
        """Wait for ACTIVE (untimed from there); returns the sample
        ``{total_s, phases_s, marks_s, host, bound_arqs}`` (``phases``;
        the marks in seconds from the POST)."""
        if not self.marks.done(uuid).wait(TIMEOUT):
            raise AssertionError('%s not built in %ss' % (uuid, TIMEOUT))
        if uuid in self.marks.failed:
            raise AssertionError('boot failed: %s' %
                                 self.marks.failed[uuid])
        server = self.api.get_server(uuid)
        self.assertEqual('ACTIVE', server['status'])
        marks = self.marks.at[uuid]
        return {'total_s': marks['active'] - marks['post'],
                'phases_s': phases(marks),
                'scheduling_s': self.marks.spent.get(uuid, {}),
                'marks_s': {
                    k: t - marks['post'] for k, t in marks.items()},
                'host':
                server['OS-EXT-SRV-ATTR:host'],
                'bound_arqs': sum(a['state'] == arq_states.BOUND
                                  for a in self.arqs_of(uuid))}

    def release(self, uuid, host):
        self.api.delete_server(uuid)
        self._wait_until_deleted({'id': uuid})
        self.agents[host].cleaner.clean_pending()

    def one(self, flavor_id):
        uuid, _t0, post_s = self.boot(self.body(flavor_id))
        sample = self.finish(uuid)
        sample['post_s'] = post_s
        self.release(uuid, sample['host'])
        return sample

    def burst(self, flavor_id, count):
        """``count`` boots posted at once; returns seconds from the first
        POST to the last ACTIVE."""
        posted, failed = [], []

        def post(body):
            try:
                posted.append(self.boot(body))
            except Exception as e:
                failed.append(repr(e))

        threads = [threading.Thread(target=post, args=(self.body(flavor_id),))
                   for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], failed)
        samples = [self.finish(uuid) for uuid, _t0, _s in posted]
        first = min(t0 for _u, t0, _s in posted)
        last = max(self.marks.at[u]['active'] for u, _t, _s in posted)
        for (uuid, _t0, _s), sample in zip(posted, samples):
            self.release(uuid, sample['host'])
        return last - first

    def runTest(self):
        span = self.accel.conf.discovery.pool_numa_span
        self.create_device_profile('gpu1', [{'resources:PGPU': '1'}])
        self.create_device_profile('gpu8', gpu8_groups(span))
        flavors = {'plain': self._create_flavor(memory_mb=512, vcpu=1,
                                                disk=1)}
        for name in ('gpu1', 'gpu8'):
            flavors[name] = self._create_flavor(
                memory_mb=512, vcpu=1, disk=1,
                extra_spec={'accel:device_profile': name})
        out = self.RESULT
        out.update(hosts=self.HOSTS, pool_numa_span=span, samples={},
                   concurrent={}, providers={
                       h: self.pools(h) for h in {self.COMPUTE, host_name(
                           self.HOSTS - 1)}})
        for name in FLAVORS:    # warm-up, not counted
            self.one(flavors[name])
        t0 = time.perf_counter()
        for name in stats.interleaved(FLAVORS, self.BOOTS):
            out['samples'].setdefault(name, []).append(
                self.one(flavors[name]))
        out['sequential_s'] = time.perf_counter() - t0
        if self.CONCURRENT and self.HOSTS >= self.CONCURRENT:
            for _ in range(self.ROUNDS):
                for name in FLAVORS:
                    out['concurrent'].setdefault(name, []).append(
                        self.burst(flavors[name], self.CONCURRENT))
        out['concurrency'] = self.CONCURRENT
        if self.OUT:
            # Before the harness's teardown, which at 500 hosts takes
            # longer than the measure (run_size stops the child then).
            nova_boot_driver.write_atomic(self.OUT, dict(out, errors=[]))


def measure(hosts, boots, concurrent=0, rounds=2, out=None):
    """One size in this process.

    :param hosts: computes of 8 GPUs (int >= 1).
    :param boots: timed boots per flavor (int >= 1).
    :param concurrent: boots per burst (0: none; none either with fewer
        hosts than that).
    :param rounds: bursts per flavor.
    :param out: path (str) the result is written to once measured, before
        the harness's teardown, or None.
    :returns: dict: ``hosts``, ``setup_s``, ``pool_numa_span``,
        ``samples`` (``{flavor: [sample]}``, see ``ManyHostsBoot.finish``),
        ``sequential_s``, ``concurrent`` (``{flavor: [burst seconds]}``),
        ``concurrency``, ``errors`` (list of str).
    """
    cls = ManyHostsBoot
    cls.HOSTS, cls.BOOTS, cls.CONCURRENT, cls.ROUNDS = (
        hosts, boots, concurrent, rounds)
    cls.RESULT, cls.OUT = {}, out
    result = unittest.TextTestRunner(stream=sys.stderr,
                                     verbosity=0).run(cls())
    out = dict(cls.RESULT)
    out['errors'] = [tb[-3000:] for _, tb in result.errors +
                     result.failures]
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--hosts', default=','.join(map(str, SIZES)),
                   help='comma-separated sizes (default %(default)s)')
    p.add_argument('--boots', type=int, default=30,
                   help='timed boots per flavor and size')
    p.add_argument('--concurrent', type=int, default=8,
                   help='boots per burst (0: no bursts)')
    p.add_argument('--rounds', type=int, default=2,
                   help='bursts per flavor')
    p.add_argument('--name', default='nova-boot',
                   help='results file name after date and machine')
    p.add_argument('--no-plots', action='store_true')
    p.add_argument('--size', type=int, help=argparse.SUPPRESS)
    p.add_argument('--out', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        sizes = [int(s) for s in args.hosts.split(',') if s]
    except ValueError:
        p.error('--hosts takes integers, got %r' % args.hosts)
    if not sizes or min(sizes) < 1 or args.boots < 1:
        p.error('--hosts and --boots must be at least 1')
    if args.size:   # the child of one size
        result = measure(args.size, args.boots, args.concurrent,
                         args.rounds, out=args.out)
        if result['errors'] or not os.path.exists(args.out):
            nova_boot_driver.write_atomic(args.out, result)
        return 0
    t0 = time.monotonic()

    def log(msg):
        print('[%6.0fs] %s' % (time.monotonic() - t0, msg), file=sys.stderr,
              flush=True)

    results = [nova_boot_driver.run_size(n, args, log) for n in sizes]
    path = nova_boot_report.write(
        results, args.name, time.monotonic() - t0,
        argv if argv is not None else sys.argv[1:], plots=not args.no_plots)
    print(path)
    return 0 if not any(r['errors'] for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
