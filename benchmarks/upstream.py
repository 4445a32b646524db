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

"""Measure 3: the same client against upstream openstack-cyborg 17.0.0 and
accel_backend, in the same run.

Upstream is started as ``tools.launch.cyborg`` says (much as its devstack
plugin does; ``tools.fixtures.cyborg``): its own venv (under
``~/.cache/nova-accel-bench/cyborg-venv``, built when missing), RabbitMQ from
Debian's ``rabbitmq-server`` (``tools.fixtures.rabbitmq``), SQLite
(``cyborg-dbsync create_schema`` + a unique index on
``device_profiles.uuid``), the API under gunicorn (1 worker) without
keystone, the conductor, and the agent with the fake driver reporting to
the shared Placement server; events go to the shared Nova stub.

accel_backend runs as an ``accel-backend`` process over 16 recorded GPUs.
The services take turns by blocks of ``BLOCK`` trials (ABAB..., so drift
in the machine's speed falls on both alike).  One trial: create a device
profile, create an ARQ, PATCH-bind it (timing the PATCH, and either the
arrival of its event at the stub or, in every other trial, the first GET
showing ``Bound``), list the instance's ARQs, delete by instance.

Why blocks and not single trials in turn: a trial of one service then
runs after a trial of the same service, on either side.  In turns of one,
each of our 4-5 ms PATCHes came right after a Cyborg trial (three Python
services and RabbitMQ, about 150 ms of work) and each Cyborg PATCH after
one of ours.  Measured on the 2-core benchmark machine (40 trials per
condition, shuffled): our PATCH -> event p50 was 5.46 ms after a Cyborg
trial, 5.39 ms when Cyborg's processes were also stopped (SIGSTOP) during
ours, against 4.26 ms with no Cyborg on the machine; Cyborg's processes
used 0.4-1 % of a CPU while idle.  So the cost is the state the other
service leaves behind (caches), not work it does meanwhile, and it weighs
more on the shorter path.  The first trial of each block still runs after
the other service's block; it is counted, and its own p50 is reported
(``first_of_block``).

What compares like with like: ``patch_to_event`` (PATCH sent -> its
event at the Nova stub) and ``patch_to_get_bound`` (PATCH sent -> the
first GET showing ``Bound``) are the headline: both end when the ARQ is
bound, on either service.  The bare PATCH is not quite: both answer once
the binding is committed (accel_backend binds in the PATCH's transaction;
Cyborg 17's binds of the fake driver are instant, ``ExtARQJob.master``),
but accel_backend sends the event after its answer and Cyborg before; it
is reported apart, with that label (``BARE_LABEL``).  The headline rows
also get the floor of their path (``benchmarks.stats.PATHS``), from a
``GET /v2`` of the accel-backend and a commit on a SQLite file with its
pragmas, sampled after each of accel_backend's blocks (in the state its
trials ran in) in the same run.  Every ratio (Cyborg / accel_backend, of the
medians) comes with its percentile bootstrap 95 % confidence interval
(``ratios``).
"""

import contextlib
import os
import subprocess
import time
import uuid

from accel_common import arq_states
from benchmarks import common
from benchmarks import stats
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import cyborg as cyborg_fx
from tools.fixtures import rabbitmq
from tools.fixtures import sysfs as sysfs_fx
from tools.launch import cyborg as launch_cyborg

#: Trials per service; each headline measure gets half of them (``_trial``).
TRIALS = int(os.environ.get("BENCH_UPSTREAM_TRIALS", 100))
#: Trials of one service in a row before the other's turn (``take_turns``;
#: even: the first trial of each block times ``patch_to_event``).
BLOCK = 10
#: Both end when the ARQ is bound: the comparison.
HEADLINE = ('patch_to_event', 'patch_to_get_bound')
#: The other calls Nova makes, each synchronous on both services.
OTHER = ('device_profile_create', 'arq_create', 'arq_list',
         'delete_by_instance')
#: Not like with like: reported apart, labelled.
BARE = ('bind_patch',)
BARE_LABEL = ('bare PATCH (both answer once the binding is committed; ours '
              'sends the event after answering, Cyborg before)')
OPS = HEADLINE + OTHER + BARE
FLOOR_SAMPLES = 200


def _trial(client, stub, host, rp_uuid, groups, prefix, i):
    """One trial; even ``i`` times PATCH -> event (no request to the
    service until the event arrived), odd ``i`` PATCH -> the first GET
    showing ``Bound`` (polling every millisecond).  Apart, because the
    polling GETs compete for the CPU with an asynchronous binder (ours)
    and not with a synchronous one (Cyborg's PATCH answers bound).

    :returns: ``{operation: seconds}``.
    :raises RuntimeError: the ARQ did not get bound within 30 s.
    """
    out = {}
    dp = '%s-dp-%d' % (prefix, i)
    out['device_profile_create'], resp = client.create_profile(dp, groups)
    body = resp.json()
    dp_uuid = (body[0] if isinstance(body, list) else body)['uuid']
    out['arq_create'], arqs = client.create_arqs(dp)
    arq = arqs[0]['uuid']
    instance = str(uuid.uuid4())
    mark = stub.mark()
    t0 = time.perf_counter()
    client.bind({arq: (host, rp_uuid, instance)})
    out['bind_patch'] = time.perf_counter() - t0
    if i % 2 == 0:
        seen = stub.wait_tags([arq], since=mark, timeout=30)
        out['patch_to_event'] = seen[arq][0] - t0
    end = time.monotonic() + 30
    while True:
        _, view = client.get_arq(arq)
        if view['state'] == arq_states.BOUND:
            if i % 2:
                out['patch_to_get_bound'] = time.perf_counter() - t0
            break
        if (view['state'] == arq_states.BIND_FAILED or
                time.monotonic() > end):
            raise RuntimeError('ARQ %s ended %s' % (arq, view['state']))
        time.sleep(0.001)
    stub.wait_tags([arq], since=mark, timeout=30)
    out['arq_list'], listed = client.list_for_instance(instance)
    if [a['uuid'] for a in listed] != [arq]:
        raise RuntimeError('list by instance returned %s' % listed)
    out['delete_by_instance'], _ = client.delete_instance(instance)
    client.call('DELETE', '/v2/device_profiles/%s' % dp_uuid, ok=(204,))
    return out


def ratios(samples):
    """Cyborg / accel_backend per operation, with its spread.

    :param samples: ``{'accel_backend': {op: [seconds]}, 'cyborg': {op:
        [seconds]}}`` for the operations of ``OPS``.
    :returns: ``{'ratios_p50': {op: ratio of the medians or None},
        'ci95': {op: [low, high]}}``: the interval is the percentile
        bootstrap 95 % confidence interval of that ratio
        (``benchmarks.stats.bootstrap_ratio_ci``), for operations with
        samples on both sides.
    """
    out = {'ratios_p50': {}, 'ci95': {}}
    for op in OPS:
        a, c = samples['accel_backend'][op], samples['cyborg'][op]
        if not a or not c:
            out['ratios_p50'][op] = None
            continue
        out['ratios_p50'][op], lo, hi = stats.bootstrap_ratio_ci(c, a)
        out['ci95'][op] = [lo, hi]
    return out


def take_turns(names, blocks, trial, after_block=None):
    """Run the trials of the services in turns by blocks: every service a
    block of ``blocks[0]`` trials, in the order of ``names``, then every
    service a block of ``blocks[1]``, and so on.  Trial indices run on
    across a service's blocks (``_trial`` times ``patch_to_event`` in the
    even ones).

    :param names: the services (list of str).
    :param blocks: block sizes (list of ints, ``stats.rounds``).
    :param trial: ``trial(name, i)`` -> ``{operation: seconds}``.
    :param after_block: called as ``after_block(name)`` after each block
        of that service, or None.
    :returns: ``(samples, first)``: ``{name: {op: [seconds]}}`` of every
        trial (the operations of ``OPS``), and ``{name: [seconds]}``, the
        ``patch_to_event`` of each block's first trial.
    """
    samples = {k: {op: [] for op in OPS} for k in names}
    first = {k: [] for k in names}
    i = 0
    for size in blocks:
        for name in names:
            for j in range(size):
                got = trial(name, i + j)
                for op, v in got.items():
                    samples[name][op].append(v)
                if j == 0 and 'patch_to_event' in got:
                    first[name].append(got['patch_to_event'])
            if after_block is not None:
                after_block(name)
        i += size
    return samples, first


def measure(env):
    """Upstream Cyborg 17 and ``accel-backend`` side by side, in turns by
    blocks (``take_turns``), with the floor's primitives of accel_backend.

    :returns: ``{'accel_backend': {op: summary}, 'cyborg': ...,
        'ratios_p50', 'ci95', 'floors', 'setup', 'notes', ...}``, or
        ``{'not_measured': reason}`` when Cyborg or RabbitMQ cannot be
        installed.
    """
    log = os.path.join(env.workdir, 'upstream-setup.log')
    try:
        py = cyborg_fx.ensure_venv(log)
        rabbitmq.ensure_installed(log)
    except Exception as e:
        return {'not_measured': 'installing upstream Cyborg or RabbitMQ '
                'failed: %s' % e}
    _record_versions(env, py)
    with contextlib.ExitStack() as stack:
        sides, ac = _start_sides(env, py, stack)
        for name, (client, host, rp, groups) in sides.items():
            _trial(client, env.stub, host, rp, groups, 'warm', 0)
        floor = common.SQLiteCommitFloor(
            os.path.join(env.workdir, 'upstream-floor.sqlite'))
        blocks = stats.rounds(TRIALS, BLOCK)
        raw = {'http': [], 'commit': []}

        def trial(name, i):
            client, host, rp, groups = sides[name]
            return _trial(client, env.stub, host, rp, groups, 'b', i)

        def after_block(name):
            if name == 'accel_backend':
                common.primitive_samples(
                    ac, floor, -(-FLOOR_SAMPLES // len(blocks)), into=raw)
        try:
            samples, first = take_turns(list(sides), blocks, trial,
                                        after_block)
        finally:
            floor.close()
        out = _results(env, samples, first, raw)
        env.log('  upstream: PATCH -> event p50 accel %.1f ms, cyborg '
                '%.1f ms' % (out['accel_backend']['patch_to_event']['p50'],
                             out['cyborg']['patch_to_event']['p50']))
        return out


def _record_versions(env, py):
    """Cyborg's version from the venv of ``py``, and RabbitMQ's from dpkg
    where it is a package, into ``env.versions``."""
    env.versions['cyborg'] = subprocess.check_output(
        [py, '-c', 'import importlib.metadata as m; '
         'print(m.version("openstack-cyborg"))'], text=True).strip()
    try:
        env.versions['rabbitmq'] = subprocess.check_output(
            ['dpkg-query', '-W', '-f=${Version}', 'rabbitmq-server'],
            text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        pass


def _start_sides(env, py, stack):
    """Start Cyborg and an ``accel-backend`` over 16 recorded GPUs, both
    stopped by ``stack`` (a ``contextlib.ExitStack``).

    :returns: ``(sides, ac)``: ``{name: (client, host, rp uuid, device
        profile groups)}`` for ``'accel_backend'`` and ``'cyborg'``, and
        accel_backend's client.
    """
    cyborg, cy_rp = cyborg_fx.start_with_broker(
        env.workdir, py, env.placement, env.stub, stack)
    sysfs = sysfs_fx.make_sysfs(os.path.join(env.workdir, 'sysfs-up'), 16)
    backend = accel_fx.start_reporting(
        env.workdir, env.placement, env.stub, 'up-accel', sysfs, 16)
    stack.callback(backend.cleanUp)
    ac = accel_client.AccelClient(backend.root)
    ac_rp = sorted(d['rp_uuid'] for d in ac.deployables())[0]
    cc = accel_client.AccelClient(cyborg.url)
    sides = {
        'accel_backend': (ac, backend.host, ac_rp,
                          [{'resources:PGPU': '1',
                            'trait:CUSTOM_NVIDIA_T4': 'required'}]),
        'cyborg': (cc, launch_cyborg.HOST, cy_rp,
                   [{'resources:FPGA': '1',
                     'trait:CUSTOM_FAKE_DEVICE': 'required'}]),
    }
    return sides, ac


def _results(env, samples, first, raw):
    """``measure``'s result from the trials' ``samples`` and ``first``
    (``take_turns``'s answer) and the floor's primitives ``raw``
    (``{'http': [seconds], 'commit': [seconds]}``)."""
    out = {k: {op: common.summary(v) for op, v in ops.items()}
           for k, ops in samples.items()}
    out.update(ratios(samples))
    out['trials'] = TRIALS
    out['block'] = BLOCK
    out['first_of_block'] = {k: common.summary(v)
                             for k, v in first.items()}
    prim = {k: common.summary(v) for k, v in raw.items()}
    out['floor_http'], out['floor_commit'] = prim['http'], prim['commit']
    out['floors'] = {op: stats.path_floor(op, prim['http']['p50'],
                                          prim['commit']['p50'])
                     for op in HEADLINE}
    out['ratios_to_floor_p50'] = {
        op: common.ratio(out['accel_backend'][op]['p50'],
                         out['floors'][op]['ms']) for op in HEADLINE}
    out['setup'] = (
        'Cyborg 17.0.0: API under gunicorn (1 worker, no keystone; '
        'identity from X-* headers), conductor, agent with the fake '
        'driver (FPGA x16, binds instantly), RabbitMQ %s, SQLite. '
        'accel_backend: `accel-backend` (cheroot, 8 threads) over 16 '
        'recorded GPUs, SQLite. Both report to the same Placement and '
        'send events to the same Nova stub; one client class '
        '(`tools.fixtures.accel_client.AccelClient`, same headers) drives '
        'both; the services take turns by blocks of %d trials (ABAB...; '
        'in turns of one, each service\'s trial ran in the state the '
        'other\'s left: see `benchmarks/upstream.py`); the floor\'s '
        'primitives are sampled after each accel_backend block.'
        % (env.versions.get('rabbitmq', ''), BLOCK))
    out['notes'] = ['ratios are Cyborg / accel_backend (above 1: '
                    'accel_backend is faster).']
    return out
