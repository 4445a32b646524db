"""Pieces every measure shares: statistics, processes, a Placement server,
a Nova stub that records events, recorded sysfs trees, the HTTP client.

Everything listens on 127.0.0.1 on free ports and lives in a temporary
directory the caller owns.
"""

import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid

import requests

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
BIN = os.path.dirname(PY)

# One set of headers for both accel_backend (noauth) and upstream Cyborg
# (no keystone, identity from headers): the same client code talks to both.
PROJECT_ID = '6b5b2ad1c5b24a0f9d3fb0f8f9a3c001'
USER_ID = 'a3c0e8e2a2b84f0fa5d0c4b1e6f7a002'
ACCEL_HEADERS = {
    'X-Auth-Token': 'admin',
    'X-Roles': 'admin,member,reader',
    'X-Service-Roles': 'service',
    'X-User-Id': USER_ID,
    'X-Project-Id': PROJECT_ID,
    'Content-Type': 'application/json',
    'Accept': 'application/json',
}
PLACEMENT_HEADERS = {'x-auth-token': 'admin',
                     'OpenStack-API-Version': 'placement 1.36',
                     'Content-Type': 'application/json'}


# -- statistics --------------------------------------------------------

def percentile(values, pct):
    """Linear-interpolated percentile (``pct`` in 0..100) of a non-empty
    list; None for an empty one."""
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * pct / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summary(values_s):
    """``{n, p50, p95, p99, min, max}`` in milliseconds from seconds."""
    ms = [v * 1000.0 for v in values_s]
    return {'n': len(ms), 'p50': percentile(ms, 50),
            'p95': percentile(ms, 95), 'p99': percentile(ms, 99),
            'min': min(ms) if ms else None, 'max': max(ms) if ms else None,
            'samples_ms': ms}


def ratio(a, b):
    return None if not a or not b else a / b


# -- processes -----------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_http(url, timeout=60.0, headers=None, ok=(200,), proc=None):
    """Poll ``url`` until it answers a status in ``ok``."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError('%s exited (%s) before %s answered; see %s'
                               % (proc.name, proc.returncode, url, proc.log))
        try:
            r = requests.get(url, headers=headers, timeout=5)
            if r.status_code in ok:
                return r
            last = r.status_code
        except requests.RequestException as e:
            last = e
        time.sleep(0.1)
    raise RuntimeError('%s did not answer in %ss (last: %s)' % (url, timeout,
                                                               last))


class Proc:
    """A child process in its own process group, logging to a file."""

    def __init__(self, name, argv, log, env=None, cwd=None, user=None):
        self.name = name
        self.log = log
        self._fh = open(log, 'ab')
        full_env = dict(os.environ)
        full_env.update(env or {})
        if user is not None:
            argv = ['runuser', '-u', user, '--'] + list(argv)
        self.popen = subprocess.Popen(
            argv, stdout=self._fh, stderr=subprocess.STDOUT, env=full_env,
            cwd=cwd or REPO, start_new_session=True)

    @property
    def returncode(self):
        return self.popen.returncode

    def poll(self):
        return self.popen.poll()

    def stop(self, timeout=15):
        """SIGTERM the process group we started, then SIGKILL."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        self._fh.close()


def run(argv, log, env=None, cwd=None, timeout=300, user=None):
    """Run a command to completion; raise with the log's tail on failure."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    if user is not None:
        argv = ['runuser', '-u', user, '--'] + list(argv)
    with open(log, 'ab') as fh:
        rc = subprocess.call(argv, stdout=fh, stderr=subprocess.STDOUT,
                             env=full_env, cwd=cwd or REPO, timeout=timeout)
    if rc != 0:
        raise RuntimeError('%s failed (%s): %s' % (' '.join(argv), rc,
                                                   tail(log)))


def tail(path, lines=15):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return ''


# -- recorded sysfs trees ----------------------------------------------

GPU_VENDOR, GPU_PRODUCT = '10de', '1eb8'
GPU_SPEC = {'vendor_id': GPU_VENDOR, 'product_id': GPU_PRODUCT,
            'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_T4'],
            'device_type': 'GPU'}


def gpu_address(i):
    """PCI address of fake GPU ``i`` (0..8191): bus and slot vary."""
    return '0000:%02x:%02x.0' % (0x10 + i // 32, i % 32)


def make_sysfs(root, count):
    """Write a sysfs tree of ``count`` T4-like GPUs bound to vfio-pci,
    in the layout of ``tests/fixtures/sysfs`` (plain files, relative
    links)."""
    os.makedirs(root, exist_ok=True)
    for i in range(count):
        d = os.path.join(root, gpu_address(i))
        os.makedirs(d, exist_ok=True)
        for name, value in (('vendor', '0x' + GPU_VENDOR),
                            ('device', '0x' + GPU_PRODUCT),
                            ('subsystem_vendor', '0x10de'),
                            ('subsystem_device', '0x12a2'),
                            ('class', '0x030200'),
                            ('numa_node', str(i % 2))):
            with open(os.path.join(d, name), 'w') as f:
                f.write(value + '\n')
        os.symlink('../../../bus/pci/drivers/vfio-pci',
                   os.path.join(d, 'driver'))
        os.symlink('../../../kernel/iommu_groups/%d' % (100 + i),
                   os.path.join(d, 'iommu_group'))
    return root


# -- Placement -----------------------------------------------------------

class PlacementServer:
    """openstack-placement served by gunicorn (1 worker), SQLite, noauth2."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, 'placement')
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        with open(os.path.join(self.dir, 'placement.conf'), 'w') as f:
            f.write('[DEFAULT]\n[api]\nauth_strategy = noauth2\n'
                    '[placement_database]\nconnection = sqlite:///%s\n'
                    % os.path.join(self.dir, 'placement.sqlite'))
        self.env = {'OS_PLACEMENT_CONFIG_DIR': self.dir}
        self.proc = None
        self.session = requests.Session()
        self.session.headers.update(PLACEMENT_HEADERS)

    def start(self):
        log = os.path.join(self.dir, 'placement.log')
        run([os.path.join(BIN, 'placement-manage'), '--config-file',
             os.path.join(self.dir, 'placement.conf'), 'db', 'sync'], log,
            env=self.env)
        self.proc = Proc('placement', [
            PY, '-m', 'gunicorn', '-b', '127.0.0.1:%d' % self.port, '-w',
            '1', '--threads', '4', 'placement.wsgi.api:application'], log,
            env=self.env)
        wait_http(self.url + '/', proc=self.proc)
        return self

    def stop(self):
        if self.proc:
            self.proc.stop()

    def request(self, method, path, body=None, ok=(200, 201, 204)):
        r = self.session.request(method, self.url + path,
                                 data=None if body is None
                                 else json.dumps(body))
        if r.status_code not in ok:
            raise RuntimeError('placement %s %s: %s %s' % (
                method, path, r.status_code, r.text[:300]))
        return r.json() if r.content else None

    def create_compute_rp(self, name):
        rp_uuid = str(uuid.uuid4())
        self.request('POST', '/resource_providers',
                     {'name': name, 'uuid': rp_uuid})
        return rp_uuid

    def providers(self, root_uuid):
        return self.request('GET', '/resource_providers?in_tree=%s'
                            % root_uuid)['resource_providers']


# -- Nova stub -----------------------------------------------------------

class NovaStub:
    """A threaded HTTP server standing in for nova-api: answers version
    documents and records ``os-server-external-events`` with their
    arrival times (``time.perf_counter()``)."""

    def __init__(self):
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.events = []          # (t, event dict)
        self.posts = 0
        self._cond = threading.Condition()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                base = 'http://127.0.0.1:%d' % stub.port
                ver = {'id': 'v2.1', 'status': 'CURRENT',
                       'version': '2.96', 'min_version': '2.1',
                       'updated': '2013-07-23T11:33:21Z',
                       'links': [{'rel': 'self',
                                  'href': base + '/v2.1/'}]}
                if self.path.rstrip('/') in ('', '/'):
                    self._send(200, {'versions': [ver]})
                elif self.path.rstrip('/') == '/v2.1':
                    self._send(200, {'version': ver})
                else:
                    self._send(404, {})

            def do_POST(self):
                n = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(n)
                now = time.perf_counter()
                if not self.path.endswith('/os-server-external-events'):
                    self._send(404, {})
                    return
                events = json.loads(raw or b'{}').get('events', [])
                with stub._cond:
                    stub.posts += 1
                    for ev in events:
                        stub.events.append((now, ev))
                    stub._cond.notify_all()
                out = [dict(ev, code=200) for ev in events]
                self._send(200, {'events': out})

        self.server = http.server.ThreadingHTTPServer(
            ('127.0.0.1', self.port), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def mark(self):
        with self._cond:
            return len(self.events)

    def wait_tags(self, tags, since=0, timeout=60.0, partial=False):
        """Wait for events tagged with every ARQ UUID in ``tags``.

        :returns: ``{tag: (t, event)}`` of the first event per tag.
        :raises RuntimeError: on timeout, unless ``partial`` (then what
            arrived is returned).
        """
        tags = set(tags)
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                seen = {}
                for t, ev in self.events[since:]:
                    if ev.get('tag') in tags and ev['tag'] not in seen:
                        seen[ev['tag']] = (t, ev)
                if len(seen) == len(tags):
                    return seen
                left = end - time.monotonic()
                if left <= 0:
                    if partial:
                        return seen
                    raise RuntimeError('events for %d of %d ARQs did not '
                                       'arrive' % (len(tags) - len(seen),
                                                   len(tags)))
                self._cond.wait(min(left, 0.5))


# -- accel_backend as a process -----------------------------------------

class AccelBackendProcess:
    """``accel-backend`` (cheroot) on its own config and database."""

    def __init__(self, workdir, name, placement, nova, sysfs_root,
                 connection=None, api_workers=8, binding_workers=4,
                 env=None):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.host = name
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.connection = connection or 'sqlite:///%s' % os.path.join(
            self.dir, 'accel_backend.sqlite')
        self.conf = os.path.join(self.dir, 'accel-backend.conf')
        self.log = os.path.join(self.dir, 'accel-backend.log')
        self.env = env or {}
        with open(self.conf, 'w') as f:
            f.write('\n'.join([
                '[DEFAULT]', 'host = %s' % name, 'state_path = %s' % self.dir,
                'log_file = %s' % self.log, 'debug = False',
                '[api]', 'host_ip = 127.0.0.1', 'port = %d' % self.port,
                'workers = %d' % api_workers, 'auth_strategy = noauth',
                '[database]', 'connection = %s' % self.connection,
                '[binding]', 'workers = %d' % binding_workers,
                '[discovery]', 'sysfs_root = %s' % sysfs_root,
                'report_interval = 0',
                'device_spec = %s' % json.dumps(GPU_SPEC),
                '[placement]', 'auth_type = admin_token',
                'endpoint = %s' % placement.url, 'token = admin',
                'endpoint_override = %s' % placement.url,
                '[nova]', 'auth_type = admin_token',
                'endpoint = %s/v2.1' % nova.url, 'token = admin',
                'endpoint_override = %s/v2.1' % nova.url,
                'event_retry_interval = 0.05', 'event_retry_timeout = 60',
                '']))
        self.proc = None

    def start(self, expect_devices=None, placement=None, root_rp=None,
              timeout=180):
        """Start; with ``expect_devices``, wait until that many devices are
        stored and (with ``placement``/``root_rp``) reported to Placement
        with inventory and traits, so measuring starts on a quiet
        service."""
        run([PY, '-m', 'accel_backend.cmd.manage', '--config-file',
             self.conf, 'db', 'sync'], self.log, env=self.env)
        self.proc = Proc('accel-backend', [
            PY, '-m', 'accel_backend.cmd.server', '--config-file',
            self.conf], self.log + '.out', env=self.env)
        wait_http(self.url + '/v2', headers=ACCEL_HEADERS, proc=self.proc)
        if not expect_devices:
            return self
        end = time.monotonic() + timeout
        s = requests.Session()
        while True:
            deps = s.get(self.url + '/v2/deployables',
                         headers=ACCEL_HEADERS).json()['deployables']
            reported = expect_devices
            if placement is not None and len(deps) >= expect_devices:
                reported = len(placement.request(
                    'GET', '/resource_providers?in_tree=%s&resources=PGPU:1'
                    '&required=OWNER_CYBORG' % root_rp)['resource_providers'])
            if len(deps) >= expect_devices and reported >= expect_devices:
                return self
            if time.monotonic() > end:
                raise RuntimeError('accel-backend: %d of %d devices stored, '
                                   '%d reported' % (len(deps), expect_devices,
                                                    reported))
            time.sleep(0.25)

    def stop(self):
        if self.proc:
            self.proc.stop()


class AccelClient:
    """The Cyborg v2 calls Nova makes, as one client for both services.

    Every call returns ``(seconds, response)``.
    """

    def __init__(self, url, version=None):
        self.url = url.rstrip('/')
        self.s = requests.Session()
        self.s.headers.update(ACCEL_HEADERS)
        if version:
            self.s.headers['OpenStack-API-Version'] = 'accelerator ' + version

    def call(self, method, path, body=None, ok=(200, 201, 202, 204)):
        data = None if body is None else json.dumps(body)
        t0 = time.perf_counter()
        r = self.s.request(method, self.url + path, data=data)
        dt = time.perf_counter() - t0
        if r.status_code not in ok:
            raise RuntimeError('%s %s -> %s %s' % (method, path,
                                                   r.status_code,
                                                   r.text[:300]))
        return dt, r

    def create_profile(self, name, groups):
        return self.call('POST', '/v2/device_profiles',
                         [{'name': name, 'groups': groups}])

    def create_arqs(self, profile):
        dt, r = self.call('POST', '/v2/accelerator_requests',
                          {'device_profile_name': profile})
        return dt, r.json()['arqs']

    def bind(self, bindings):
        """``bindings``: ``{arq_uuid: (hostname, rp_uuid, instance)}``."""
        body = {a: [{'path': '/hostname', 'op': 'add', 'value': h},
                    {'path': '/device_rp_uuid', 'op': 'add', 'value': rp},
                    {'path': '/instance_uuid', 'op': 'add', 'value': i}]
                for a, (h, rp, i) in bindings.items()}
        return self.call('PATCH', '/v2/accelerator_requests', body)

    def list_for_instance(self, instance):
        dt, r = self.call('GET', '/v2/accelerator_requests?instance=%s'
                          % instance)
        return dt, r.json()['arqs']

    def get_arq(self, arq_uuid):
        dt, r = self.call('GET', '/v2/accelerator_requests/%s' % arq_uuid)
        return dt, r.json()

    def delete_instance(self, instance):
        return self.call('DELETE', '/v2/accelerator_requests?instance=%s'
                         % instance)

    def deployables(self):
        return self.call('GET', '/v2/deployables')[1].json()['deployables']


# -- floors ----------------------------------------------------------------

class SQLiteCommitFloor:
    """One INSERT + COMMIT on a SQLite file with accel_backend's pragmas
    (WAL, foreign keys, busy timeout)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False)
        for p in ('journal_mode=WAL', 'foreign_keys=ON',
                  'busy_timeout=30000'):
            self.db.execute('PRAGMA ' + p)
        self.db.execute('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY '
                        'KEY, v TEXT)')
        self.db.commit()

    def once(self):
        t0 = time.perf_counter()
        self.db.execute('INSERT INTO t (v) VALUES (?)', (str(uuid.uuid4()),))
        self.db.commit()
        return time.perf_counter() - t0

    def close(self):
        self.db.close()


def sqlite_version():
    return sqlite3.sqlite_version


def which(name):
    return shutil.which(name)
