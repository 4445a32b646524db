"""Bring the all-in-one cloud up and down.

``up`` creates a run directory (``mkdtemp``), writes every config there,
and starts, in order: PostgreSQL (or nothing for SQLite), epmd + RabbitMQ,
Keystone, Placement, Glance, the Neutron stub, nova-api, nova-conductor,
nova-scheduler, nova-compute and accel-backend; it records each process in
``state.json`` as soon as it starts, so ``down`` (also run when ``up``
fails) stops exactly what was started and removes the run directory.
"""

import grp
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from tools.aio import config
from tools.aio import procs
from tools.aio import venv as venv_mod
from tools.launch import ComponentMissing
from tools.launch import postgresql as launch_pg
from tools.launch import rabbitmq as launch_rabbit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
START_TIMEOUT = 120
IMAGE_NAME = 'aio-tiny'


def cache_dir():
    return os.environ.get('NOVA_ACCEL_AIO_CACHE') or os.path.join(
        os.path.expanduser('~'), '.cache', 'nova-accel-aio')


def _pointer():
    return os.path.join(cache_dir(), 'current.json')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def pick_ports():
    ports = {}
    while len(set(ports.values())) < len(config.PORT_NAMES):
        ports = {name: free_port() for name in config.PORT_NAMES}
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
        path = self.layout.path('state.json')
        with open(path + '.tmp', 'w') as f:
            json.dump(self.state, f, indent=1)
        os.replace(path + '.tmp', path)

    def record(self, rec):
        self.state['processes'].append(rec)
        self.save()
        return rec

    def env(self, **extra):
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
        return venv_mod.program(self.venv, name)

    def log(self, name):
        return self.layout.path('logs', name + '.log')

    # -- HTTP (stdlib only: the launcher needs nothing installed) -----------

    def http(self, method, url, body=None, token=None, headers=None,
             expect=(200, 201, 202, 204), raw=None):
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
        """Poll ``check()`` until it returns a true value (returned)."""
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
        def check():
            try:
                urllib.request.urlopen(url, timeout=5).close()
                return True
            except urllib.error.HTTPError as e:
                return e.code < 500
        return self.wait_for(url, check, rec)

    def serve(self, name, argv, url, env=None, **kw):
        rec = self.record(procs.spawn(name, argv, self.layout.path('logs'),
                                      env=env or self.env(), **kw))
        self.wait_http(rec, url)
        return rec

    def gunicorn(self, name, module, port_name, env, threads=4, workers=1):
        return self.serve(name, [
            self.prog('gunicorn'), '--workers', str(workers),
            '--threads', str(threads), '--timeout', '300',
            '--bind', '127.0.0.1:%d' % self.layout.ports[port_name],
            # gunicorn 27 would share one control socket in ~/.gunicorn.
            '--no-control-socket', '--name', 'aio-' + name,
            "tools.aio.wsgi_app:load('%s')" % module],
            self.layout.url(port_name), env=dict(env, PYTHONPATH=REPO),
            cwd=REPO)

    def run(self, name, argv, **kw):
        kw.setdefault('env', self.env())
        return procs.run(argv, self.log(name), **kw)


def _find(pattern_dirs, name):
    for d in pattern_dirs:
        path = os.path.join(d, name)
        if os.path.exists(path):
            return path
    found = shutil.which(name)
    if not found:
        raise RuntimeError('%s not found (see tools/aio/README.md: '
                           'bindep -b aio)' % name)
    return found


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
        agent in L1 shares the API's database).
    """
    say = Say()
    host = config.HOST
    if compute == 'nested':
        if db != 'postgresql':
            raise SystemExit('the nested compute node needs --db postgresql '
                             '(its agent shares the API\'s database)')
        from tools.aio import nested
        host, discovery = nested.L1_HOST, ['l1_edu']
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
        _start_all(cloud, say)
    except BaseException as e:
        log = getattr(e, 'log', None)
        say('FAILED: %s' % e)
        if log:
            say('last lines of %s:\n%s' % (log, procs.tail(log)))
        if keep:
            say('--keep: leaving the run dir and processes; '
                '`python -m tools.aio down` removes them')
        else:
            down()
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
        json.dump(config.clouds_yaml(layout), f, indent=1)
    with open(layout.path('openrc'), 'w') as f:
        f.write(config.openrc(layout))


def _start_all(cloud, say):
    layout = cloud.layout
    if layout.db == 'postgresql':
        _postgres(cloud, say)
    _rabbitmq(cloud, say)
    _keystone(cloud, say)
    token = cloud.admin_token()
    _keystone_accounts(cloud, say, token)
    _placement(cloud, say)
    _glance(cloud, say, token)
    say('neutron-stub: starting (no Neutron: servers boot with --nic none)')
    cloud.serve('neutron-stub', [
        venv_mod.python(cloud.venv), '-m', 'tools.aio.neutron_stub',
        str(layout.ports['neutron_stub'])], layout.url('neutron_stub'),
        env=cloud.env(PYTHONPATH=REPO), cwd=REPO)
    _nova(cloud, say, token)
    _accel_backend(cloud, say, token)
    if layout.compute == 'nested':
        from tools.aio import nested
        rec = nested.start(cloud, say, token)
        _discover_hosts(cloud, say, token, rec)


def _postgres(cloud, say):
    layout = cloud.layout
    # How to launch it: tools/launch/postgresql.py (the tests' fixture
    # uses it too); the lifecycle is ours (procs).
    user = launch_pg.system_user()
    bindir = launch_pg.bindir()
    datadir = layout.path('pg', 'data')
    os.makedirs(datadir)
    if user:
        os.chown(layout.path('pg'), pwd.getpwnam(user).pw_uid,
                 grp.getgrnam(user).gr_gid)
        os.chown(datadir, pwd.getpwnam(user).pw_uid,
                 grp.getgrnam(user).gr_gid)
    say('postgresql: initdb')
    cloud.run('postgresql', launch_pg.initdb_argv(bindir, datadir),
              user=user, cwd=layout.path('pg'))
    rec = cloud.record(procs.spawn('postgresql', launch_pg.server_argv(
        bindir, datadir, layout.ports['postgres'], layout.path('pg'),
        max_connections=300), layout.path('logs'), user=user,
        cwd=layout.path('pg')))
    psql = [_find([bindir], 'psql'), '-h', '127.0.0.1', '-p',
            str(layout.ports['postgres']), '-U', 'postgres', '-v',
            'ON_ERROR_STOP=1', '-q']
    cloud.wait_for('postgresql', lambda: _pg_ready(psql), rec, timeout=60)
    sql = ''.join('CREATE DATABASE %s;' % name for name in config.DATABASES)
    for statement in sql.split(';')[:-1]:
        cloud.run('postgresql', psql + ['-c', statement])
    say('postgresql: up on port %d, databases %s' % (
        layout.ports['postgres'], ', '.join(config.DATABASES)))


def _pg_ready(psql):
    return subprocess.run(psql + ['-c', 'SELECT 1'], capture_output=True,
                          stdin=subprocess.DEVNULL).returncode == 0


def _rabbitmq(cloud, say):
    layout = cloud.layout
    # How to launch it: tools/launch/rabbitmq.py (the tests' fixture uses
    # it too); the lifecycle is ours (procs).
    env, conf = config.rabbitmq(layout)
    base = layout.path('rabbitmq')
    launch_rabbit.write_files(env, conf)
    full_env = cloud.env(**env)
    say('rabbitmq: starting epmd and rabbitmq-server (node %s)' %
        env['RABBITMQ_NODENAME'])
    # Our own epmd, so that nothing outlives `down`.
    cloud.record(procs.spawn(
        'epmd', launch_rabbit.epmd_argv(layout.ports['epmd']),
        layout.path('logs'), env=full_env))
    rec = cloud.record(procs.spawn(
        'rabbitmq', [launch_rabbit.program('rabbitmq-server')],
        layout.path('logs'), env=full_env, cwd=base))
    cloud.state['rabbitmq_env'] = env
    cloud.save()
    ctl = [launch_rabbit.program('rabbitmqctl'), '-n',
           env['RABBITMQ_NODENAME']]

    def ready():
        done = subprocess.run(ctl + ['await_startup', '--timeout', '5'],
                              env=full_env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=30)
        return done.returncode == 0 and _port_open(layout.ports['rabbit'])
    cloud.wait_for('rabbitmq', ready, rec, timeout=90, interval=1)
    say('rabbitmq: up on port %d' % layout.ports['rabbit'])


def _port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(('127.0.0.1', port)) == 0


def _keystone(cloud, say):
    layout = cloud.layout
    conf = layout.path('etc', 'keystone', 'keystone.conf')
    km = [cloud.prog('keystone-manage'), '--config-file', conf]
    user = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    say('keystone: db_sync, fernet and credential keys, bootstrap')
    cloud.run('keystone-manage', km + ['db_sync'])
    for what in ('fernet_setup', 'credential_setup'):
        cloud.run('keystone-manage', km + [
            what, '--keystone-user', user, '--keystone-group', group])
    url = layout.auth_url
    cloud.run('keystone-manage', km + [
        'bootstrap', '--bootstrap-password', layout.passwords['admin'],
        '--bootstrap-username', 'admin', '--bootstrap-project-name', 'admin',
        '--bootstrap-role-name', 'admin', '--bootstrap-service-name',
        'keystone', '--bootstrap-region-id', config.REGION,
        '--bootstrap-admin-url', url, '--bootstrap-internal-url', url,
        '--bootstrap-public-url', url])
    cloud.gunicorn('keystone', 'keystone.wsgi.api', 'keystone',
                   cloud.env(OS_KEYSTONE_CONFIG_DIR=layout.path(
                       'etc', 'keystone')))
    say('keystone: up at %s' % url)


def _keystone_accounts(cloud, say, token):
    """Service project, roles, service users, catalog, a demo project."""
    layout = cloud.layout
    api = layout.auth_url

    def find(kind, name, key=None, extra=''):
        got, _ = cloud.http('GET', '%s/%s?name=%s%s' % (api, kind, name,
                                                        extra), token=token)
        items = got[key or kind]
        return items[0]['id'] if items else None

    def create(kind, body, key):
        got, _ = cloud.http('POST', '%s/%s' % (api, kind), {key: body},
                            token=token)
        return got[key]['id']

    domain = find('domains', config.DOMAIN)
    projects = {}
    for name in (config.SERVICE_PROJECT, 'demo'):
        projects[name] = find('projects', name) or create(
            'projects', {'name': name, 'domain_id': domain}, 'project')
    roles = {}
    # manager: the project persona of Cyborg 17's new policy defaults.
    for name in ('admin', 'manager', 'member', 'reader', 'service'):
        roles[name] = find('roles', name) or create('roles', {'name': name},
                                                    'role')
    users = dict(config.SERVICE_USERS)
    for name, user_roles in users.items():
        uid = create('users', {'name': name, 'domain_id': domain,
                               'password': layout.passwords['service'],
                               'default_project_id':
                                   projects[config.SERVICE_PROJECT]}, 'user')
        for role in user_roles:
            cloud.http('PUT', '%s/projects/%s/users/%s/roles/%s' % (
                api, projects[config.SERVICE_PROJECT], uid, roles[role]),
                token=token)
    demo = create('users', {'name': 'demo', 'domain_id': domain,
                            'password': layout.passwords['admin'],
                            'default_project_id': projects['demo']}, 'user')
    cloud.http('PUT', '%s/projects/%s/users/%s/roles/%s' % (
        api, projects['demo'], demo, roles['member']), token=token)
    for name, stype, url in layout.endpoints():
        if stype == 'identity':
            continue  # bootstrap made it
        sid = create('services', {'name': name, 'type': stype,
                                  'enabled': True}, 'service')
        for interface in ('public', 'internal', 'admin'):
            create('endpoints', {'service_id': sid, 'interface': interface,
                                 'url': url, 'region_id': config.REGION,
                                 'enabled': True}, 'endpoint')
    say('keystone: project %s, users %s and demo, catalog: %s' % (
        config.SERVICE_PROJECT, ', '.join(users),
        ', '.join('%s %s' % (t, u) for _, t, u in layout.endpoints())))


def _placement(cloud, say):
    layout = cloud.layout
    say('placement: db sync')
    cloud.run('placement-manage', [
        cloud.prog('placement-manage'), '--config-file',
        layout.path('etc', 'placement', 'placement.conf'), 'db', 'sync'])
    cloud.gunicorn('placement', 'placement.wsgi.api',
                   'placement', cloud.env(OS_PLACEMENT_CONFIG_DIR=layout.path(
                       'etc', 'placement')))
    say('placement: up at %s' % layout.url('placement'))


def _glance(cloud, say, token):
    layout = cloud.layout
    for sub in ('images', 'staging', 'tasks'):
        os.makedirs(layout.path('glance', sub), exist_ok=True)
    say('glance: db_sync')
    cloud.run('glance-manage', [
        cloud.prog('glance-manage'), '--config-file',
        layout.path('etc', 'glance', 'glance-api.conf'), 'db_sync'])
    cloud.gunicorn('glance', 'glance.wsgi.api', 'glance',
                   cloud.env(OS_GLANCE_CONFIG_DIR=layout.path(
                       'etc', 'glance')))
    if layout.compute == 'nested':
        from tools.aio import nested
        say('glance: uploading the guest image (kernel + initramfs whose '
            'init lists the guest\'s PCI functions)')
        cloud.state['image_id'] = nested.upload_images(cloud, token,
                                                       IMAGE_NAME)
        cloud.save()
        say('glance: up at %s, image %s (%s)' % (
            layout.url('glance'), IMAGE_NAME, cloud.state['image_id']))
        return
    # A tiny raw "disk": the fake compute driver never reads it.
    image, _ = cloud.http('POST', layout.url('glance', '/v2/images'), {
        'name': IMAGE_NAME, 'disk_format': 'raw', 'container_format': 'bare',
        'visibility': 'public'}, token=token)
    cloud.http('PUT', layout.url('glance', '/v2/images/%s/file' %
                                 image['id']),
               raw=b'nova-accel aio\n' + bytes(64 * 1024 - 15), token=token)
    cloud.wait_for('image active', lambda: cloud.http(
        'GET', layout.url('glance', '/v2/images/%s' % image['id']),
        token=token)[0]['status'] == 'active')
    cloud.state['image_id'] = image['id']
    cloud.save()
    say('glance: up at %s, image %s (%s)' % (layout.url('glance'),
                                             IMAGE_NAME, image['id']))


def _nova(cloud, say, token):
    layout = cloud.layout
    conf = layout.path('etc', 'nova', 'nova.conf')
    env = cloud.env(OS_NOVA_DISABLE_EVENTLET_PATCHING='1',
                    OS_NOVA_CONFIG_DIR=layout.path('etc', 'nova'))
    nm = [cloud.prog('nova-manage'), '--config-file', conf]
    say('nova: api_db sync, cell_v2 map_cell0, create_cell cell1, db sync')
    cloud.run('nova-manage', nm + ['api_db', 'sync'], env=env)
    cloud.run('nova-manage', nm + [
        'cell_v2', 'map_cell0', '--database_connection',
        layout.db_url('nova_cell0')], env=env)
    cloud.run('nova-manage', nm + ['cell_v2', 'create_cell', '--name',
                                   'cell1', '--verbose'], env=env)
    cloud.run('nova-manage', nm + ['db', 'sync'], env=env)
    nested = layout.compute == 'nested'
    say('nova: starting nova-api (gunicorn), conductor, scheduler%s' % (
        '' if nested else ', compute (compute_driver = accel.FakeDriver)'))
    cloud.gunicorn('nova-api', 'nova.wsgi.osapi_compute',
                   'nova_api', env, threads=8)
    cpu_conf = layout.path('etc', 'nova', 'nova-cpu.conf')
    binaries = [('nova-conductor', conf), ('nova-scheduler', conf)]
    if not nested:
        binaries.append(('nova-compute', cpu_conf))
    for binary, path in binaries:
        cloud.record(procs.spawn(binary, [cloud.prog(binary),
                                          '--config-file', path],
                                 layout.path('logs'), env=env))
    if nested:
        # nova-compute runs in L1, started after accel-backend-api.
        return

    def compute_rp():
        got, _ = cloud.http('GET', layout.url(
            'placement', '/resource_providers?name=%s' % layout.host),
            token=token)
        return got['resource_providers']
    rec = next(r for r in cloud.state['processes']
               if r['name'] == 'nova-compute')
    cloud.wait_for('compute node provider %s in Placement' % layout.host,
                   compute_rp, rec)
    _discover_hosts(cloud, say, token, rec)


def _discover_hosts(cloud, say, token, rec):
    """``nova-manage cell_v2 discover_hosts`` until the compute host is a
    hypervisor of the API; ``rec`` is the compute's process record."""
    layout = cloud.layout
    conf = layout.path('etc', 'nova', 'nova.conf')
    env = cloud.env(OS_NOVA_DISABLE_EVENTLET_PATCHING='1',
                    OS_NOVA_CONFIG_DIR=layout.path('etc', 'nova'))
    nm = [cloud.prog('nova-manage'), '--config-file', conf]

    def discovered():
        out = cloud.run('nova-manage', nm + ['cell_v2', 'discover_hosts',
                                             '--verbose'], env=env)
        got, _ = cloud.http('GET', layout.url(
            'nova_api', '/v2.1/os-hypervisors'), token=token)
        return got['hypervisors'] or (out and False)
    cloud.wait_for('nova-manage cell_v2 discover_hosts', discovered, rec,
                   interval=1)
    for name in ('nova-conductor', 'nova-scheduler', 'nova-compute'):
        rec = next((r for r in cloud.state['processes']
                    if r['name'] == name), None)
        if rec is not None and not procs.alive(rec):
            raise procs.ProcessFailed('%s exited' % name, rec['log'])
    say('nova: up at %s, compute host %s discovered in cell1' % (
        layout.url('nova_api', '/v2.1'), layout.host))


def _accel_backend(cloud, say, token):
    layout = cloud.layout
    conf = layout.path('etc', 'accel-backend', 'accel-backend.conf')
    say('accel-backend: db sync, start (discovery: %s)' %
        ', '.join(layout.discovery))
    cloud.run('accel-backend-manage', [
        cloud.prog('accel-backend-manage'), '--config-file', conf, 'db',
        'sync'])
    if layout.compute == 'nested':
        # The API alone here; the agent of the compute node runs in L1.
        cloud.serve('accel-backend', [
            cloud.prog('accel-backend-api'), '--config-file', conf],
            layout.url('accel', '/'))
        say('accel-backend-api: up at %s' % layout.url('accel', '/v2'))
        return
    rec = cloud.serve('accel-backend', [
        cloud.prog('accel-backend'), '--config-file', conf],
        layout.url('accel', '/'))
    want = config.accelerator_total(layout)

    def reported():
        got, _ = cloud.http('GET', layout.url('accel', '/v2/deployables'),
                            token=token)
        deps = got['deployables']
        return len(deps) >= config.expected_deployables(layout) and all(
            d.get('rp_uuid') for d in deps)
    cloud.wait_for('accel-backend devices in Placement', reported, rec)
    say('accel-backend: up at %s, %d accelerators reported to Placement' % (
        layout.url('accel', '/v2'), want))


# --------------------------------------------------------------------------
# down
# --------------------------------------------------------------------------

def down(quiet=False):
    """Stop everything the current run started; remove its run dir."""
    say = Say()
    cloud = Cloud.load()
    if cloud is None:
        if not quiet:
            say('no cloud is up')
        _remove_pointer()
        return
    layout = cloud.layout
    renv = cloud.state.get('rabbitmq_env')
    recs = cloud.state['processes']
    # Reverse order: the services go before the bus and the database they
    # need to shut down cleanly.
    for rec in reversed(recs):
        if rec['name'] == 'rabbitmq' and renv and procs.alive(rec):
            try:
                procs.run([launch_rabbit.program('rabbitmqctl'), '-n',
                           renv['RABBITMQ_NODENAME'], 'stop'], os.devnull,
                          env=cloud.env(**renv), timeout=60, check=False)
            except (procs.ProcessFailed, ComponentMissing):
                pass
        if procs.stop(rec):
            say('stopped %s (pid %d)' % (rec['name'], rec['pid']))
    left = [r['name'] for r in recs if procs.alive(r)]
    if left:
        say('WARNING: still running: %s' % ', '.join(left))
    shutil.rmtree(layout.run_dir, ignore_errors=True)
    _remove_pointer()
    say('removed %s' % layout.run_dir)


def _remove_pointer():
    try:
        os.unlink(_pointer())
    except FileNotFoundError:
        pass


def status():
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
