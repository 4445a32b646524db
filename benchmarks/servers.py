"""The servers every measure talks to, each a process or thread of its own
on 127.0.0.1 on a free port: a Placement server, a Nova stub that records
the events it is sent, and ``accel-backend`` over a recorded sysfs tree.

Each has ``start()`` (returns the object, once it answers) and ``stop()``;
their files (config, database, log) live under the work directory the
caller gives and owns.  ``tools.compare_cyborg`` uses them too.
"""

import http.server
import json
import os
import threading
import time
import uuid

import requests

from benchmarks import common

PLACEMENT_HEADERS = {'x-auth-token': 'admin',
                     'OpenStack-API-Version': 'placement 1.36',
                     'Content-Type': 'application/json'}


# -- Placement -----------------------------------------------------------

class PlacementServer:
    """openstack-placement served by gunicorn (1 worker), SQLite, noauth2.

    :param workdir: the caller's work directory; config, database and log
        go to ``<workdir>/placement``.
    """

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, 'placement')
        os.makedirs(self.dir, exist_ok=True)
        self.port = common.free_port()
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
        """``db sync``, start gunicorn and wait (up to 60 s) for it to
        answer; returns self.

        :raises RuntimeError: when a step fails or it does not answer.
        """
        log = os.path.join(self.dir, 'placement.log')
        common.run([os.path.join(common.BIN, 'placement-manage'),
                    '--config-file', os.path.join(self.dir, 'placement.conf'),
                    'db', 'sync'], log, env=self.env)
        self.proc = common.Proc('placement', [
            common.PY, '-m', 'gunicorn', '-b', '127.0.0.1:%d' % self.port,
            '-w', '1', '--threads', '4', 'placement.wsgi.api:application'],
            log, env=self.env)
        common.wait_http(self.url + '/', proc=self.proc)
        return self

    def stop(self):
        """Stop the process (SIGTERM, then SIGKILL after 15 s)."""
        if self.proc:
            self.proc.stop()

    def request(self, method, path, body=None, ok=(200, 201, 204)):
        """One Placement call (microversion 1.36) with a JSON-able
        ``body``; returns the parsed answer or None.

        :raises RuntimeError: on a status not in ``ok``.
        """
        r = self.session.request(method, self.url + path,
                                 data=None if body is None
                                 else json.dumps(body))
        if r.status_code not in ok:
            raise RuntimeError('placement %s %s: %s %s' % (
                method, path, r.status_code, r.text[:300]))
        return r.json() if r.content else None

    def create_compute_rp(self, name):
        """Create a root provider named ``name``; returns its UUID."""
        rp_uuid = str(uuid.uuid4())
        self.request('POST', '/resource_providers',
                     {'name': name, 'uuid': rp_uuid})
        return rp_uuid

    def providers(self, root_uuid):
        """The providers of the tree rooted at ``root_uuid`` (dicts)."""
        return self.request('GET', '/resource_providers?in_tree=%s'
                            % root_uuid)['resource_providers']


# -- Nova stub -----------------------------------------------------------

class NovaStub:
    """A threaded HTTP server standing in for nova-api: answers version
    documents and records ``os-server-external-events`` with their
    arrival times (``time.perf_counter()``)."""

    def __init__(self):
        self.port = common.free_port()
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
        """Serve in a daemon thread; returns self."""
        self._thread.start()
        return self

    def stop(self):
        """Shut the server down and close its socket."""
        self.server.shutdown()
        self.server.server_close()

    def mark(self):
        """How many events have arrived (an index for ``since``)."""
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
    """``accel-backend`` (cheroot) on its own config and database.

    :param workdir: the caller's work directory; files go to
        ``<workdir>/<name>``.
    :param name: the service's host name (``[DEFAULT] host``).
    :param placement: a started :class:`PlacementServer` (its URL; and
        where :meth:`start_reported` makes the compute node provider).
    :param nova: a started :class:`NovaStub` (its URL).
    :param sysfs_root: a tree written by ``common.make_sysfs``.
    :param connection: a SQLAlchemy URL; default a SQLite file.
    :param env: extra environment variables of the processes.
    """

    def __init__(self, workdir, name, placement, nova, sysfs_root,
                 connection=None, api_workers=8, binding_workers=4,
                 env=None):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.host = name
        self.port = common.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.connection = connection or 'sqlite:///%s' % os.path.join(
            self.dir, 'accel_backend.sqlite')
        self.conf = os.path.join(self.dir, 'accel-backend.conf')
        self.log = os.path.join(self.dir, 'accel-backend.log')
        self.env = env or {}
        self.placement = placement
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
                'device_spec = %s' % json.dumps(common.GPU_SPEC),
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
        common.run([common.PY, '-m', 'accel_backend.cmd.manage',
                    '--config-file', self.conf, 'db', 'sync'], self.log,
                   env=self.env)
        self.proc = common.Proc('accel-backend', [
            common.PY, '-m', 'accel_backend.cmd.server', '--config-file',
            self.conf], self.log + '.out', env=self.env)
        # A token: noauth answers 401 without one.
        common.wait_http(self.url + '/v2', headers=common.ACCEL_HEADERS,
                         proc=self.proc)
        if not expect_devices:
            return self
        end = time.monotonic() + timeout
        s = requests.Session()
        while True:
            deps = s.get(self.url + '/v2/deployables',
                         headers=common.ACCEL_HEADERS).json()['deployables']
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

    def start_reported(self, devices, timeout=180):
        """Create this host's compute node provider in Placement, start,
        and wait (up to ``timeout`` seconds) until ``devices`` devices are
        stored and reported under it; returns self.

        :raises RuntimeError: when it fails to start or report in time.
        """
        root = self.placement.create_compute_rp(self.host)
        return self.start(expect_devices=devices, placement=self.placement,
                          root_rp=root, timeout=timeout)

    def stop(self):
        """Stop the process (SIGTERM, then SIGKILL after 15 s)."""
        if self.proc:
            self.proc.stop()
