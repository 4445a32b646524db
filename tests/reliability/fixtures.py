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

"""Servers and stubs of the reliability tests, on top of
:mod:`tools.fixtures` (Placement, the Nova stub, accel-backend as a
process):

``AccelProcess``
    ``accel-backend`` as a process on its own config (any sysfs tree and
    options), which a test can ``kill()`` (SIGKILL) and ``start()`` again
    on the same database and port, whose SQLite database it reads.
``InProcessService``
    an accel_backend ``Service`` in this process with discovered devices
    and no Placement (hostile-input tests call ``service.app``).
``FaultProxy``
    an HTTP proxy that injects faults in front of Placement.
"""

import contextlib
import os
import sqlite3
import threading
import time

import fixtures
import requests

from accel_backend.agent.discovery import drivers as drivers_mod
from accel_backend.conductor import host_sync
from accel_backend import conf as accel_conf
from accel_backend import service as service_mod
from tests.functional.fixtures import servers
from tests.unit.accel_backend import sysfs_tree
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import process
from tools.launch import accel_backend as launch_accel

HOST = servers.HOST
#: The GPUs ``sysfs_tree.many_gpus`` writes (NVIDIA 10de:20b5).
MANY_GPUS_SPEC = {'vendor_id': '10de', 'product_id': '20b5',
                  'resource_class': 'PGPU', 'traits': ['CUSTOM_A100'],
                  'device_type': 'GPU'}


def write_many_gpus(root, count):
    """A sysfs tree with ``count`` GPUs; returns their PCI addresses."""
    return sysfs_tree.many_gpus(root, count)


class AccelProcess(accel_fx.AccelBackendServer):
    """``accel-backend`` on its own config (any sysfs tree and options,
    no audit), restartable, called as Nova calls it; its SQLite database
    read directly.

    :param options: ``{group: {option: value}}`` added to the config
        (lists are written one line per value).
    """

    SERVICE_TOKEN = True

    def __init__(self, placement_endpoint, nova_endpoint, sysfs_root,
                 specs, options=None):
        base = {'binding': {'workers': 4},
                'nova': {'event_retry_interval': 0.1,
                         'event_retry_timeout': 120},
                'audit': {'interval': 0}}
        for group, opts in (options or {}).items():
            base.setdefault(group, {}).update(opts)
        super().__init__(placement_endpoint, nova_endpoint, sysfs_root,
                         specs, host=HOST, options=base)

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
            f.write(launch_accel.config(
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
        running = process.serve_wsgi(self._app, name='fault-proxy')
        self.endpoint = 'http://127.0.0.1:%d' % running[0].server_port
        self.addCleanup(process.stop_wsgi, *running)

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
