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

"""Bring the all-in-one cloud up and down.

``up`` creates a run directory (``mkdtemp``), writes every config there,
and starts, in order: PostgreSQL (or nothing for SQLite), epmd + RabbitMQ,
Keystone, Placement, Glance, the Neutron stub, nova-api, nova-conductor,
nova-scheduler, nova-compute and accel-backend; it records each process in
``state.json`` as soon as it starts, so ``down`` (also run when ``up``
fails) stops exactly what was started and removes the run directory.

This module is the orchestration and the run's state (:class:`Cloud`);
how each service is started and stopped is ``tools.aio.services`` (and
``tools.aio.infra``), the files they read ``tools.aio.config`` and
``tools.aio.client_config``.
"""

import json
import os
import secrets
import shutil
import tempfile
import time
import urllib.error
import urllib.request

from tools.aio import client_config
from tools.aio import config
from tools.aio import procs
from tools.aio import run_logs
from tools.aio import services
from tools.aio import venv as venv_mod
from tools import launch
from tools.launch import gunicorn as launch_gunicorn

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
START_TIMEOUT = 120


def cache_dir():
    """Where runs are found and the venv kept (``$NOVA_ACCEL_AIO_CACHE``,
    default ``~/.cache/nova-accel-aio``)."""
    return os.environ.get('NOVA_ACCEL_AIO_CACHE') or os.path.join(
        os.path.expanduser('~'), '.cache', 'nova-accel-aio')


def _pointer():
    return os.path.join(cache_dir(), 'current.json')


def pick_ports():
    """``{name: port}`` for every name of ``config.PORT_NAMES``, all
    different."""
    ports = {}
    while len(set(ports.values())) < len(config.PORT_NAMES):
        ports = {name: launch.free_port() for name in config.PORT_NAMES}
    return ports


class Say:
    """Progress printer with the seconds since ``up`` began."""

    def __init__(self):
        self.t0 = time.monotonic()

    def __call__(self, msg):
        print('[%6.1fs] %s' % (time.monotonic() - self.t0, msg), flush=True)


class Cloud:
    """One run of the cloud (its ``state.json``)."""

    def __init__(self, state):
        self.state = state
        self.layout = config.Layout(**state['layout'])
        self.venv = self.layout.venv

    # -- state -------------------------------------------------------------

    @classmethod
    def load(cls):
        """The cloud ``up`` left running, or None."""
        try:
            with open(_pointer()) as f:
                run_dir = json.load(f)['run_dir']
            with open(os.path.join(run_dir, 'state.json')) as f:
                return cls(json.load(f))
        except (OSError, ValueError, KeyError):
            return None

    def save(self):
        """Write ``state.json`` (atomically)."""
        path = self.layout.path('state.json')
        with open(path + '.tmp', 'w') as f:
            json.dump(self.state, f, indent=1)
        os.replace(path + '.tmp', path)

    def record(self, rec):
        """Add a process record (``procs.spawn``'s) and save; returns it."""
        self.state['processes'].append(rec)
        self.save()
        return rec

    def env(self, **extra):
        """This environment without ``OS_*``, with the venv first on PATH
        and the run's clouds.yaml, updated with ``extra``."""
        env = dict(os.environ)
        for key in list(env):
            if key.startswith('OS_'):
                del env[key]
        env.update({
            'PATH': os.path.join(self.venv, 'bin') + os.pathsep +
            env.get('PATH', ''),
            'OS_CLIENT_CONFIG_FILE': self.layout.path('clouds.yaml'),
            'PYTHONDONTWRITEBYTECODE': '1',
        })
        env.update(extra)
        return env

    def prog(self, name):
        """The path of program ``name`` in the venv."""
        return venv_mod.program(self.venv, name)

    def log(self, name):
        """The path of log ``name`` in the run's ``logs``."""
        return self.layout.path('logs', name + '.log')

    # -- HTTP (stdlib only: the launcher needs nothing installed) -----------

    def http(self, method, url, body=None, token=None, headers=None,
             expect=(200, 201, 202, 204), raw=None):
        """One HTTP call (60 s timeout) with a JSON ``body`` or ``raw``
        bytes; returns ``(parsed JSON or None, response headers)``.

        :raises RuntimeError: on a status not in ``expect``.
        """
        hdrs = {'Accept': 'application/json'}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs['Content-Type'] = 'application/json'
        if raw is not None:
            data = raw
            hdrs['Content-Type'] = 'application/octet-stream'
        if token:
            hdrs['X-Auth-Token'] = token
        hdrs.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method,
                                     headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, payload, rh = resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as e:
            status, payload, rh = e.code, e.read(), e.headers
        if status not in expect:
            raise RuntimeError('%s %s: %s %s' % (method, url, status,
                                                 payload[:500]))
        parsed = json.loads(payload) if payload.strip() else None
        return parsed, rh

    def admin_token(self):
        """A Keystone token of the admin, scoped to project admin."""
        body = {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': 'admin', 'domain': {'name': config.DOMAIN},
                'password': self.layout.passwords['admin']}}},
            'scope': {'project': {'name': 'admin',
                                  'domain': {'name': config.DOMAIN}}}}}
        _, headers = self.http('POST', self.layout.auth_url + '/auth/tokens',
                               body)
        return headers['X-Subject-Token']

    # -- waiting -----------------------------------------------------------

    def wait_for(self, what, check, rec=None, timeout=START_TIMEOUT,
                 interval=0.2):
        """Poll ``check()`` every ``interval`` seconds until it returns a
        true value (returned); other exceptions than
        ``procs.ProcessFailed`` it raises count as not yet.

        :raises procs.ProcessFailed: when ``rec``'s process exits, when
            ``check`` raises it, or after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        last = None
        while True:
            if rec is not None and not procs.alive(rec):
                raise procs.ProcessFailed('%s exited' % rec['name'],
                                          rec['log'])
            try:
                result = check()
                if result:
                    return result
            except procs.ProcessFailed:
                raise  # the check saw the service die: no use waiting
            except Exception as e:  # noqa: BLE001 - reported on timeout
                last = e
            if time.monotonic() > deadline:
                raise procs.ProcessFailed(
                    'timed out waiting for %s (%s)' % (what, last),
                    rec['log'] if rec else None)
            time.sleep(interval)

    def wait_http(self, rec, url):
        """Wait until ``url`` answers below 500 (``wait_for``)."""
        def check():
            try:
                urllib.request.urlopen(url, timeout=5).close()
                return True
            except urllib.error.HTTPError as e:
                return e.code < 500
        return self.wait_for(url, check, rec)

    def serve(self, name, argv, url, env=None, **kw):
        """Spawn and record a server, then wait for ``url``; returns its
        record."""
        rec = self.record(procs.spawn(name, argv, self.layout.path('logs'),
                                      env=env or self.env(), **kw))
        self.wait_http(rec, url)
        return rec

    def gunicorn(self, name, module, port_name, env, threads=4, workers=1):
        """Serve the WSGI application of ``module`` with gunicorn on port
        ``port_name`` (``serve``)."""
        return self.serve(name, launch_gunicorn.argv(
            self.prog('gunicorn'), "tools.aio.wsgi_app:load('%s')" % module,
            self.layout.ports[port_name], workers=workers, threads=threads,
            # gunicorn 27 would share one control socket in ~/.gunicorn.
            options=['--timeout', '300', '--no-control-socket',
                     '--name', 'aio-' + name]),
            self.layout.url(port_name), env=dict(env, PYTHONPATH=REPO),
            cwd=REPO)

    def run(self, name, argv, **kw):
        """Run a command to completion, logging to ``name``'s log.

        :raises procs.ProcessFailed: when it fails.
        """
        kw.setdefault('env', self.env())
        return procs.run(argv, self.log(name), **kw)


# --------------------------------------------------------------------------
# up
# --------------------------------------------------------------------------

def up(db='postgresql', discovery=('generic_pci', 'fake'), keep=False,
       arq_binding_timeout=120, compute='fake'):
    """Start the cloud; returns the ``Cloud``.  Fails if one is running.

    :param compute: ``'fake'`` (nova-compute with ``accel.FakeDriver`` on
        this machine, ``discovery`` as given) or ``'nested'`` (the nested
        compute node, :mod:`tools.aio.nested`; its ``edu`` functions are
        the accelerators, ``discovery`` is ignored; PostgreSQL only: the
        API and the conductor share the database).
    """
    say = Say()
    host = config.HOST
    if compute == 'nested':
        if db != 'postgresql':
            raise SystemExit('the nested compute node needs --db postgresql '
                             '(its API and conductor share the database)')
        from tools.aio import nested
        host, discovery = nested.L1_HOST, ['l1_edu', 'l1_mtty']
    elif compute != 'fake':
        raise SystemExit('unknown compute %r (fake or nested)' % compute)
    existing = Cloud.load()
    if existing is not None:
        if any(procs.alive(r) for r in existing.state['processes']):
            raise SystemExit('a cloud is already up (%s); run '
                             '`python -m tools.aio down` first' %
                             existing.layout.run_dir)
        down(quiet=True)
    os.makedirs(cache_dir(), exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix='nova-accel-aio-')
    # PostgreSQL (another user when we are root) must reach its datadir.
    os.chmod(run_dir, 0o711)
    layout = config.Layout(
        run_dir=run_dir, venv=os.path.join(cache_dir(), 'venv'), repo=REPO,
        ports=pick_ports(),
        passwords={'admin': secrets.token_hex(8),
                   'service': secrets.token_hex(8)},
        db=db, discovery=list(discovery),
        arq_binding_timeout=arq_binding_timeout, host=host, compute=compute)
    cloud = Cloud({'layout': vars(layout), 'processes': [],
                   'started': time.time()})
    for sub in ('logs', 'lock', 'db', 'etc', 'keystone', 'glance', 'nova',
                'accel-backend', 'rabbitmq', 'tempest'):
        os.makedirs(layout.path(sub), exist_ok=True)
    cloud.save()
    with open(_pointer(), 'w') as f:
        json.dump({'run_dir': run_dir}, f)
    say('run dir %s (logs in logs/)' % run_dir)
    try:
        venv_mod.ensure(layout.venv, REPO, say, cloud.log('venv'))
        _write_configs(cloud)
        services.start_all(cloud, say)
    except BaseException as e:
        log = getattr(e, 'log', None)
        say('FAILED: %s' % e)
        if log:
            say('last lines of %s:\n%s' % (log, procs.tail(log)))
        if keep:
            say('--keep: leaving the run dir and processes; '
                '`python -m tools.aio down` removes them')
        else:
            down(failed=True)
        raise SystemExit(1)
    took = time.monotonic() - say.t0
    cloud.state['up_seconds'] = round(took, 1)
    cloud.save()
    say('cloud is up in %.0f s. Admin credentials: source %s' % (
        took, layout.path('openrc')))
    return cloud


def _write_configs(cloud):
    layout = cloud.layout
    for rel, ini in config.all_configs(layout).items():
        path = layout.path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(ini.render())
    shutil.copy(os.path.join(layout.venv, 'etc', 'nova', 'api-paste.ini'),
                layout.path('etc', 'nova', 'api-paste.ini'))
    with open(layout.path('clouds.yaml'), 'w') as f:
        # JSON is YAML.
        json.dump(client_config.clouds_yaml(layout), f, indent=1)
    with open(layout.path('openrc'), 'w') as f:
        f.write(client_config.openrc(layout))


# --------------------------------------------------------------------------
# down
# --------------------------------------------------------------------------

def down(quiet=False, failed=False):
    """Stop everything the current run started; remove its run dir.

    :param failed: the run failed: first keep its logs in
        ``<cache_dir>/failed-run`` and print their last errors
        (:func:`tools.aio.run_logs.keep`).
    """
    say = Say()
    cloud = Cloud.load()
    if cloud is None:
        if not quiet:
            say('no cloud is up')
        _remove_pointer()
        return
    layout = cloud.layout
    left = services.stop_all(cloud, say)
    if left:
        say('WARNING: still running: %s' % ', '.join(left))
    if failed:
        run_logs.keep(layout.run_dir, os.path.join(cache_dir(), 'failed-run'),
                      say)
    shutil.rmtree(layout.run_dir, ignore_errors=True)
    _remove_pointer()
    say('removed %s' % layout.run_dir)


def _remove_pointer():
    try:
        os.unlink(_pointer())
    except FileNotFoundError:
        pass


def status():
    """Print the processes and endpoints; returns 1 when none is up."""
    cloud = Cloud.load()
    if cloud is None:
        print('no cloud is up')
        return 1
    print('run dir: %s' % cloud.layout.run_dir)
    for rec in cloud.state['processes']:
        print('  %-16s pid %-7d %s' % (rec['name'], rec['pid'],
                                       'running' if procs.alive(rec)
                                       else 'GONE'))
    for name, stype, url in cloud.layout.endpoints():
        print('  %-12s %s' % (stype, url))
    print('credentials: source %s' % cloud.layout.path('openrc'))
    return 0
