"""Servers and stubs of the reliability tests.

Built on ``tests.functional.fixtures.servers`` (Placement under gunicorn,
process helpers):

``ControlledNova``
    a Nova stub on a loopback port whose answers a test steers: slow
    (``delay``), a whole-request status (``fail_status`` for the next
    ``fail_count`` posts), per-event 422 (``refuse_422`` posts), down
    (``stop()``: nothing listens on its port until ``start()``), and
    ``GET /servers/<uuid>`` (404 for ``gone``).  It records every
    attempt and every accepted event.
``AccelProcess``
    ``accel-backend`` as a process on its own config (any sysfs tree and
    options), which a test can ``kill()`` (SIGKILL) and ``restart()`` on
    the same database and port.
``InProcessService``
    an accel_backend ``Service`` in this process with discovered devices
    and no Placement (hostile-input tests call ``service.app``).
"""

import contextlib
import json
import os
import signal
import sqlite3
import threading
import time

import fixtures
import requests

from accel_backend import conf as accel_conf
from accel_backend.discovery import drivers as drivers_mod
from accel_backend.objects import host_sync
from accel_backend import service as service_mod
from tests import accel_config
from tests.functional.fixtures import servers
from tests.unit.accel_backend import sysfs_tree

HOST = servers.HOST
#: The GPUs ``sysfs_tree.many_gpus`` writes (NVIDIA 10de:20b5).
MANY_GPUS_SPEC = {'vendor_id': '10de', 'product_id': '20b5',
                  'resource_class': 'PGPU', 'traits': ['CUSTOM_A100'],
                  'device_type': 'GPU'}
# As Nova calls it: a user token plus the service token binding needs.
ADMIN = {'X-Auth-Token': 'admin', 'X-Service-Token': 'nova'}


def write_many_gpus(root, count):
    """A sysfs tree with ``count`` GPUs; returns their PCI addresses."""
    return sysfs_tree.many_gpus(root, count)


class ControlledNova(servers.NovaStub):
    """Nova's external events API and server lookups, steerable:
    ``delay`` (seconds) before answering events, ``fail_status`` answered
    to the next ``fail_count`` event requests, a per-event 422 (207) for
    the next ``refuse_422``, and servers that exist unless in ``gone``.

    :ivar attempts: ``(time.monotonic(), status, [tags])`` per event
        request.
    :ivar accepted: the event dicts answered 200.
    """

    def _setUp(self):
        self.delay = 0.0
        self.fail_status = None
        self.fail_count = 0
        self.refuse_422 = 0
        self.gone = set()
        self.attempts = []
        self.accepted = []
        super()._setUp()

    def take_events(self, events):
        if self.delay:
            time.sleep(self.delay)
        with self.lock:
            tags = [e['tag'] for e in events]
            if self.fail_count > 0:
                self.fail_count -= 1
                status, body = self.fail_status, {'error': 'injected'}
            elif self.refuse_422 > 0:
                self.refuse_422 -= 1
                status, body = 207, {'events': [dict(e, code=422)
                                                for e in events]}
            else:
                self.accepted.extend(events)
                status, body = 200, {'events': [dict(e, code=200)
                                                for e in events]}
            self.attempts.append((time.monotonic(), status, tags))
        return status, body

    def find_server(self, server_id):
        if server_id in self.gone:
            return None
        return {'id': server_id, 'status': 'ACTIVE'}

    def events_by_tag(self):
        """``{arq_uuid: [status, ...]}`` of the accepted events."""
        with self.lock:
            out = {}
            for ev in self.accepted:
                out.setdefault(ev['tag'], []).append(ev['status'])
            return out


class AccelProcess(servers._Process):
    """``accel-backend`` on its own config; restartable.

    :param options: ``{group: {option: value}}`` added to the config
        (lists are written one line per value).
    """

    MUST_STOP_ON_SIGTERM = True

    def __init__(self, placement_endpoint, nova_endpoint, sysfs_root,
                 specs, options=None):
        super().__init__()
        self.placement_endpoint = placement_endpoint
        self.nova_endpoint = nova_endpoint
        self.sysfs_root = sysfs_root
        self.specs = specs
        self.options = options or {}
        self.starts = 0

    def _setUp(self):
        self.tmpdir = self.useFixture(fixtures.TempDir()).path
        self.port = servers.free_port()
        self.root = 'http://127.0.0.1:%d' % self.port
        self.endpoint = self.root + '/v2'
        self.db_path = os.path.join(self.tmpdir, 'accel.sqlite')
        self.config_file = os.path.join(self.tmpdir, 'accel-backend.conf')
        sections = {
            'DEFAULT': {'host': HOST, 'state_path': self.tmpdir},
            'api': {'host_ip': '127.0.0.1', 'port': self.port,
                    'auth_strategy': 'noauth'},
            'database': {'connection': 'sqlite:///' + self.db_path},
            'discovery': {'sysfs_root': self.sysfs_root,
                          'report_interval': 0,
                          'device_spec': [json.dumps(s)
                                          for s in self.specs]},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': self.placement_endpoint,
                          'endpoint_override': self.placement_endpoint},
            'nova': {'auth_type': 'admin_token', 'token': 'admin',
                     'endpoint': self.nova_endpoint,
                     'endpoint_override': self.nova_endpoint,
                     'event_retry_interval': 0.1,
                     'event_retry_timeout': 120},
            'audit': {'interval': 0},
        }
        for group, opts in self.options.items():
            sections.setdefault(group, {}).update(opts)
        lines = []
        for group, opts in sections.items():
            lines.append('[%s]' % group)
            for key, value in opts.items():
                for v in value if isinstance(value, list) else [value]:
                    lines.append('%s = %s' % (key, v))
        with open(self.config_file, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        servers.run([servers.venv_program('accel-backend-manage'),
                     '--config-file', self.config_file, 'db', 'sync'],
                    env=servers.code_env())
        self.start()

    def start(self):
        """Start (again) on the same database and port; returns seconds
        until the API answered."""
        self.starts += 1
        t0 = time.monotonic()
        self.start_process(
            'accel-backend-%d' % self.starts,
            [servers.venv_program('accel-backend'), '--config-file',
             self.config_file],
            servers.code_env(), self.endpoint, self.tmpdir)
        return time.monotonic() - t0

    def kill(self):
        """SIGKILL: no shutdown code runs."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def all_logs(self):
        out = []
        for n in range(1, self.starts + 1):
            path = os.path.join(self.tmpdir, 'accel-backend-%d.log' % n)
            with open(path, 'rb') as f:
                out.append('--- start %d ---\n%s' % (
                    n, f.read().decode('utf-8', 'replace')))
        return '\n'.join(out)

    # -- API ------------------------------------------------------------

    def request(self, method, path, body=None, expect=(200,)):
        resp = requests.request(method, self.root + path, json=body,
                                headers=ADMIN, timeout=30)
        if resp.status_code not in expect:
            raise AssertionError('%s %s: %s %s' % (
                method, path, resp.status_code, resp.text))
        return resp.json() if resp.content else None

    def wait_for_deployables(self, count, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            deps = self.request('GET', '/v2/deployables')['deployables']
            if len(deps) >= count:
                return deps
            if time.monotonic() > deadline:
                raise AssertionError('%d deployables expected, got %d:\n%s'
                                     % (count, len(deps), self.log_text()))
            time.sleep(0.1)

    # -- the database, read directly (read-only) -------------------------

    @contextlib.contextmanager
    def db(self):
        conn = sqlite3.connect('file:%s?mode=ro' % self.db_path, uri=True,
                               timeout=30)
        try:
            yield conn
        finally:
            conn.close()

    def consistency_problems(self):
        """What must never be: a list of (problem, rows)."""
        queries = {
            'handle in use without a Bound ARQ':
                'SELECT h.uuid FROM attach_handles h WHERE h.in_use AND '
                'NOT EXISTS (SELECT 1 FROM accelerator_requests a WHERE '
                "a.attach_handle_id = h.id AND a.state = 'Bound')",
            'Bound ARQ without a handle in use':
                'SELECT a.uuid FROM accelerator_requests a LEFT JOIN '
                'attach_handles h ON a.attach_handle_id = h.id WHERE '
                "a.state = 'Bound' AND (h.id IS NULL OR NOT h.in_use)",
            'handle held by two ARQs':
                'SELECT attach_handle_id FROM accelerator_requests WHERE '
                'attach_handle_id IS NOT NULL GROUP BY attach_handle_id '
                'HAVING COUNT(*) > 1',
            'ARQ not Bound holding a handle':
                'SELECT uuid FROM accelerator_requests WHERE '
                "attach_handle_id IS NOT NULL AND state != 'Bound'",
        }
        problems = []
        with self.db() as conn:
            for name, sql in queries.items():
                rows = conn.execute(sql).fetchall()
                if rows:
                    problems.append((name, rows))
        return problems

    def pending_events(self):
        with self.db() as conn:
            return conn.execute(
                'SELECT uuid, pending_event FROM accelerator_requests '
                'WHERE pending_event IS NOT NULL').fetchall()


def placement_children(placement, compute_rp):
    """``{rp_uuid: (name, inventories, traits)}`` of the compute node's
    children, read from Placement."""
    rps = placement.request('GET', '/resource_providers?in_tree=%s' %
                            compute_rp)['resource_providers']
    out = {}
    for rp in rps:
        if rp['uuid'] == compute_rp:
            continue
        inv = placement.request('GET', '/resource_providers/%s/inventories'
                                % rp['uuid'])['inventories']
        traits = placement.request('GET', '/resource_providers/%s/traits'
                                   % rp['uuid'])['traits']
        out[rp['uuid']] = (rp['name'], inv, set(traits))
    return out


class InProcessService(fixtures.Fixture):
    """A ``Service`` in this process (noauth, SQLite, two T4s discovered;
    Placement and Nova unreachable: nothing here needs them)."""

    def _setUp(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(accel_config.accel_backend_conf(
                'http://127.0.0.1:9', 'http://127.0.0.1:9/v2.1',
                servers.SYSFS_TWO_GPUS, [servers.T4_SPEC],
                DEFAULT={'host': HOST, 'state_path': tmp},
                binding={'workers': 4},
                discovery={'report_interval': 60},
                nova={'event_retry_timeout': 1}))
        conf = accel_conf.new_conf(config_files=[path])
        self.service = service_mod.Service(conf)
        self.addCleanup(self.service.stop)
        with self.service.db.transaction() as session:
            deps = host_sync.sync(
                session, HOST, drivers_mod.discover_all(self.service.drivers))
            self.rps = [d.rp_uuid for d in deps]
        self.app = self.service.app


class FaultProxy(fixtures.Fixture):
    """An HTTP proxy on a loopback port in front of ``upstream`` (e.g.
    Placement) that injects faults.

    ``rule(method, path)`` (set by the test) decides per request:
    ``None`` forwards it; ``('status', code)`` answers ``code`` without
    forwarding; ``('lost', code)`` forwards it and then answers ``code``
    (the write happened, the client never hears of it); ``('sleep', s)``
    waits ``s`` seconds before forwarding (the client times out);
    ``('before', fn)`` calls ``fn()`` and then forwards (e.g. a concurrent
    write that makes the request a generation conflict).  ``delay`` slows
    every request down.  Every request is recorded in ``log`` as
    ``(method, path, status answered, time.monotonic())``.

    A request the client gave up on still runs upstream; ``drain()``
    waits for those before a test checks state.
    """

    def __init__(self, upstream):
        super().__init__()
        self.upstream = upstream.rstrip('/')

    def _setUp(self):
        self.rule = None
        self.delay = 0.0
        self.log = []
        self.lock = threading.Lock()
        self._idle = threading.Condition()
        self._in_flight = 0
        self._local = threading.local()
        running = servers.serve_wsgi(self._app, name='fault-proxy')
        self.endpoint = 'http://127.0.0.1:%d' % running[0].server_port
        self.addCleanup(servers.stop_wsgi, *running)

    def _session(self):
        if not hasattr(self._local, 'session'):
            self._local.session = requests.Session()
        return self._local.session

    def drain(self, timeout=30):
        """Wait until no request is in the proxy (``timeout`` seconds).

        :raises AssertionError: requests are still running after it.
        """
        with self._idle:
            if not self._idle.wait_for(lambda: self._in_flight == 0,
                                       timeout):
                raise AssertionError('%d proxied requests still running'
                                     % self._in_flight)

    def _app(self, environ, start_response):
        with self._idle:
            self._in_flight += 1
        try:
            return self._proxy(environ, start_response)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def _proxy(self, environ, start_response):
        method = environ['REQUEST_METHOD']
        path = environ.get('PATH_INFO', '')
        if environ.get('QUERY_STRING'):
            path += '?' + environ['QUERY_STRING']
        size = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(size) if size else None
        headers = {k[5:].replace('_', '-').title(): v
                   for k, v in environ.items() if k.startswith('HTTP_')}
        if environ.get('CONTENT_TYPE'):
            headers['Content-Type'] = environ['CONTENT_TYPE']
        headers.pop('Host', None)
        if self.delay:
            time.sleep(self.delay)
        rule = self.rule(method, path) if self.rule else None
        kind, arg = rule if rule else (None, None)
        if kind == 'status':
            return self._answer(start_response, method, path, arg,
                                b'{"errors": [{"detail": "injected"}]}', {})
        if kind == 'sleep':
            time.sleep(arg)
        if kind == 'before':
            arg()
        resp = self._session().request(method, self.upstream + path,
                                       data=body, headers=headers,
                                       timeout=60)
        if kind == 'lost':
            return self._answer(start_response, method, path, arg,
                                b'{"errors": [{"detail": "injected"}]}', {})
        keep = {k: v for k, v in resp.headers.items()
                if k.lower() in ('content-type', 'openstack-api-version',
                                 'location', 'x-openstack-request-id')}
        return self._answer(start_response, method, path, resp.status_code,
                            resp.content, keep)

    def _answer(self, start_response, method, path, status, data, headers):
        with self.lock:
            self.log.append((method, path, status, time.monotonic()))
        hdrs = [('Content-Length', str(len(data)))] + list(headers.items())
        if data and not any(k.lower() == 'content-type' for k, _ in hdrs):
            hdrs.append(('Content-Type', 'application/json'))
        start_response('%d X' % status, hdrs)
        return [data]
