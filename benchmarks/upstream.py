"""Measure 3: the same client against upstream openstack-cyborg 17.0.0 and
accel_backend, in the same run.

Upstream is started as ``tools.launch.cyborg`` says (much as its devstack
plugin does): its own venv (under
``~/.cache/nova-accel-bench/cyborg-venv``, built when missing), RabbitMQ from
Debian's ``rabbitmq-server`` with its own environment, SQLite
(``cyborg-dbsync create_schema`` + a unique index on
``device_profiles.uuid``), the API under gunicorn (1 worker) without
keystone, the conductor, and the agent with the fake driver reporting to
the shared Placement server; events go to the shared Nova stub.

accel_backend runs as an ``accel-backend`` process over 16 recorded GPUs.
Trials alternate between the two services.  One trial: create a device
profile, create an ARQ, PATCH-bind it (timing the PATCH, the arrival of
its event at the stub, and the first GET showing ``Bound``), list the
instance's ARQs, delete by instance.
"""

import glob
import os
import shutil
import subprocess
import time
import uuid

import requests

from accel_common import arq_states
from benchmarks import common
from benchmarks import servers
from tools.launch import cyborg as launch_cyborg

TRIALS = int(os.environ.get("BENCH_UPSTREAM_TRIALS", 30))
OPS = ('device_profile_create', 'arq_create', 'bind_patch',
       'patch_to_event', 'patch_to_get_bound', 'arq_list',
       'delete_by_instance')


def ensure_venv(log):
    """Create the Cyborg venv unless a usable one is cached
    (``tools.launch.cyborg``); returns its python."""
    with open(log, 'ab') as fh:
        return launch_cyborg.ensure_venv(common.PY, log=fh)


def _rabbit_script(name):
    found = sorted(glob.glob('/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/'
                             + name))
    if found:
        return found[-1]
    for cand in ('/usr/lib/rabbitmq/bin/' + name, '/usr/sbin/' + name):
        if os.path.exists(cand):
            return cand
    return None


def ensure_rabbitmq(log):
    if _rabbit_script('rabbitmq-server') is None:
        env = {'DEBIAN_FRONTEND': 'noninteractive'}
        common.run(['apt-get', 'install', '-y', 'rabbitmq-server'], log,
                   env=env, timeout=600)
    if _rabbit_script('rabbitmq-server') is None:
        raise RuntimeError('rabbitmq-server not found after apt-get install')


class RabbitMQ:
    """A RabbitMQ node of our own on loopback."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, 'rabbitmq')
        os.makedirs(self.dir, exist_ok=True)
        self.port = common.free_port()
        self.node = 'bench%d@localhost' % self.port
        plugins = os.path.join(self.dir, 'enabled_plugins')
        with open(plugins, 'w') as f:
            f.write('[].\n')
        conf = os.path.join(self.dir, 'rabbitmq.conf')
        with open(conf, 'w') as f:
            f.write('listeners.tcp.default = 127.0.0.1:%d\n'
                    'loopback_users.guest = true\n' % self.port)
        self.env = {
            'HOME': self.dir, 'RABBITMQ_NODENAME': self.node,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port),
            'RABBITMQ_DIST_PORT': str(common.free_port()),
            'ERL_EPMD_PORT': str(common.free_port()),
            'ERL_EPMD_ADDRESS': '127.0.0.1',
            'RABBITMQ_MNESIA_BASE': os.path.join(self.dir, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(self.dir, 'log'),
            'RABBITMQ_ENABLED_PLUGINS_FILE': plugins,
            'RABBITMQ_CONFIG_FILE': conf[:-len('.conf')],
        }
        self.log = os.path.join(self.dir, 'rabbitmq.out')
        self.proc = None
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    def start(self, timeout=90):
        self.proc = common.Proc('rabbitmq', [
            _rabbit_script('rabbitmq-server')], self.log, env=self.env,
            cwd=self.dir)
        common.run([_rabbit_script('rabbitmqctl'), '-n', self.node, 'wait',
                    '--timeout', str(timeout), '--pid', str(self.proc.popen.pid)],
                   self.log, env=self.env, cwd=self.dir, timeout=timeout + 30)
        return self

    def stop(self):
        if self.proc is None:
            return
        try:
            common.run([_rabbit_script('rabbitmqctl'), '-n', self.node,
                        'stop'], self.log, env=self.env, cwd=self.dir,
                       timeout=60)
        except Exception:
            pass
        self.proc.stop()
        # rabbitmq-server started an epmd daemon on our ERL_EPMD_PORT; it
        # outlives the node unless told to go.
        epmd = shutil.which('epmd') or '/usr/lib/erlang/bin/epmd'
        try:
            common.run([epmd, '-kill'], self.log, env=self.env,
                       cwd=self.dir, timeout=30)
        except Exception:
            pass


class Cyborg:
    """cyborg-api (gunicorn), cyborg-conductor and cyborg-agent, launched
    as ``tools.launch.cyborg`` says."""

    HOST = launch_cyborg.HOST

    def __init__(self, workdir, py, placement, stub, rabbit):
        self.venv = os.path.dirname(os.path.dirname(py))
        self.dir = os.path.join(workdir, 'cyborg')
        self.port = common.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.db = os.path.join(self.dir, 'cyborg.sqlite')
        self.conf = launch_cyborg.write_config(
            self.dir, self.port, self.db, rabbit.url, placement.url,
            stub.url, venv=self.venv)
        self.procs = []

    def start(self, placement, root_rp, timeout=120):
        launch_cyborg.create_schema(self.conf, self.db, self.venv)
        api = common.Proc('cyborg-api', launch_cyborg.api_argv(
            self.dir, self.port, self.venv),
            os.path.join(self.dir, 'api.log'), cwd=self.dir)
        self.procs.append(api)
        for name in launch_cyborg.SERVICES:
            self.procs.append(common.Proc(
                name, launch_cyborg.service_argv(name, self.conf, self.venv),
                os.path.join(self.dir, name + '.log'), cwd=self.dir))
        common.wait_http(self.url + '/v2', proc=api, timeout=timeout)
        # The agent reports its fake device: wait for the deployable with
        # its RP and for the inventory in Placement.
        end = time.monotonic() + timeout
        s = requests.Session()
        while True:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError('%s exited: %s' % (
                        p.name, common.tail(p.log)))
            try:
                deps = s.get(self.url + '/v2/deployables',
                             headers=common.ACCEL_HEADERS).json().get(
                                 'deployables', [])
            except (requests.RequestException, ValueError):
                deps = []
            deps = [d for d in deps if d.get('rp_uuid')]
            if deps:
                inv = placement.request(
                    'GET', '/resource_providers?in_tree=%s&resources=FPGA:1'
                    % root_rp)['resource_providers']
                if inv:
                    return deps[0]['rp_uuid']
            if time.monotonic() > end:
                raise RuntimeError('cyborg agent did not report its fake '
                                   'device in %ss: %s' % (
                                       timeout, common.tail(
                                           self.procs[-1].log)))
            time.sleep(0.5)

    def stop(self):
        for p in reversed(self.procs):
            p.stop()


def _trial(client, stub, host, rp_uuid, groups, prefix, i):
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
    end = time.monotonic() + 30
    while True:
        _, view = client.get_arq(arq)
        if view['state'] == arq_states.BOUND:
            out['patch_to_get_bound'] = time.perf_counter() - t0
            break
        if (view['state'] == arq_states.BIND_FAILED or
                time.monotonic() > end):
            raise RuntimeError('ARQ %s ended %s' % (arq, view['state']))
        time.sleep(0.001)
    seen = stub.wait_tags([arq], since=mark, timeout=30)
    out['patch_to_event'] = seen[arq][0] - t0
    out['arq_list'], listed = client.list_for_instance(instance)
    if [a['uuid'] for a in listed] != [arq]:
        raise RuntimeError('list by instance returned %s' % listed)
    out['delete_by_instance'], _ = client.delete_instance(instance)
    client.call('DELETE', '/v2/device_profiles/%s' % dp_uuid, ok=(204,))
    return out


def measure(env):
    log = os.path.join(env.workdir, 'upstream-setup.log')
    notes = []
    try:
        py = ensure_venv(log)
        ensure_rabbitmq(log)
    except Exception as e:
        return {'not_measured': 'installing upstream Cyborg or RabbitMQ '
                'failed: %s' % e}
    env.versions['cyborg'] = subprocess.check_output(
        [py, '-c', 'import importlib.metadata as m; '
         'print(m.version("openstack-cyborg"))'], text=True).strip()
    try:
        env.versions['rabbitmq'] = subprocess.check_output(
            ['dpkg-query', '-W', '-f=${Version}', 'rabbitmq-server'],
            text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    rabbit = cyborg = backend = None
    try:
        rabbit = RabbitMQ(env.workdir).start()
        root = env.placement.create_compute_rp(Cyborg.HOST)
        cyborg = Cyborg(env.workdir, py, env.placement, env.stub, rabbit)
        cy_rp = cyborg.start(env.placement, root)
        sysfs = common.make_sysfs(os.path.join(env.workdir, 'sysfs-up'), 16)
        backend = servers.AccelBackendProcess(
            env.workdir, 'up-accel', env.placement, env.stub, sysfs,
            api_workers=8)
        backend.start_reported(16)
        ac = common.AccelClient(backend.url)
        ac_rp = sorted(d['rp_uuid'] for d in ac.deployables())[0]
        cc = common.AccelClient(cyborg.url)
        sides = {
            'accel_backend': (ac, backend.host, ac_rp,
                              [{'resources:PGPU': '1',
                                'trait:CUSTOM_NVIDIA_T4': 'required'}]),
            'cyborg': (cc, Cyborg.HOST, cy_rp,
                       [{'resources:FPGA': '1',
                         'trait:CUSTOM_FAKE_DEVICE': 'required'}]),
        }
        samples = {k: {op: [] for op in OPS} for k in sides}
        for name, (client, host, rp, groups) in sides.items():
            _trial(client, env.stub, host, rp, groups, 'warm', 0)
        for i in range(TRIALS):
            for name, (client, host, rp, groups) in sides.items():
                for op, v in _trial(client, env.stub, host, rp, groups,
                                    'b', i).items():
                    samples[name][op].append(v)
        out = {k: {op: common.summary(v) for op, v in ops.items()}
               for k, ops in samples.items()}
        out['ratios_p50'] = {op: common.ratio(out['cyborg'][op]['p50'],
                                              out['accel_backend'][op]['p50'])
                             for op in OPS}
        out['trials'] = TRIALS
        out['setup'] = (
            'Cyborg 17.0.0: API under gunicorn (1 worker, no keystone; '
            'identity from X-* headers), conductor, agent with the fake '
            'driver (FPGA x16, binds instantly), RabbitMQ %s, SQLite. '
            'accel_backend: `accel-backend` (cheroot, 8 threads) over 16 '
            'recorded GPUs, SQLite. Both report to the same Placement and '
            'send events to the same Nova stub; one client class '
            '(`benchmarks.common.AccelClient`, same headers) drives both; '
            'trials alternate.' % env.versions.get('rabbitmq', ''))
        notes.append('ratios are Cyborg / accel_backend (above 1: '
                     'accel_backend is faster).')
        out['notes'] = notes
        env.log('  upstream: bind PATCH p50 accel %.1f ms, cyborg %.1f ms'
                % (out['accel_backend']['bind_patch']['p50'],
                   out['cyborg']['bind_patch']['p50']))
        return out
    finally:
        for thing in (backend, cyborg, rabbit):
            if thing is not None:
                thing.stop()
