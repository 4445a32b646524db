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

"""Start and stop each service of the all-in-one cloud.

:func:`start_all` brings them up in order: PostgreSQL (or nothing for
SQLite) and RabbitMQ (``tools.aio.infra``), Keystone (and its accounts
and catalog), Placement, Glance (and the demo image), the Neutron stub,
nova-api, nova-conductor, nova-scheduler, nova-compute and accel-backend
(or, for the nested compute node, accel-backend-api and then the node,
``tools.aio.nested``).  Each service's way to start is one function here;
the configs they read come from ``tools.aio.config`` and the process
handling from ``tools.aio.procs``.  :func:`stop_all` stops what was
recorded.
"""

import grp
import os
import pwd

from tools.aio import config
from tools.aio import devices
from tools.aio import infra
from tools.aio import procs
from tools.aio import venv as venv_mod
from tools.launch import accel_backend as launch_accel
from tools.launch import keystone as launch_keystone
from tools.launch import placement as launch_placement

#: The name of the image Glance holds (a tiny raw file, or the nested
#: compute node's guest kernel).
IMAGE_NAME = 'aio-tiny'


def start_all(cloud, say):
    """Start every service of ``cloud`` (a ``tools.aio.cloud.Cloud`` whose
    configs are written), in order, each recorded in its ``state.json`` as
    soon as it starts; ``say(msg)`` reports progress.

    :raises procs.ProcessFailed: when a service exits or does not become
        ready in time (its log is ``.log`` of the exception).
    :raises RuntimeError: when a program is missing or an API call fails.
    """
    layout = cloud.layout
    if layout.compute == 'nested':
        # First: L1's services import their modules while the machine
        # starts the control plane (``nested.boot``).
        from tools.aio import nested
        rec = nested.boot(cloud, say)
    if layout.db == 'postgresql':
        infra.start_postgres(cloud, say)
    infra.start_rabbitmq(cloud, say)
    _keystone(cloud, say)
    token = cloud.admin_token()
    _keystone_accounts(cloud, say, token)
    _placement(cloud, say)
    _glance(cloud, say, token)
    say('neutron-stub: starting (no Neutron: servers boot with --nic none)')
    cloud.serve('neutron-stub', [
        venv_mod.python(cloud.venv), '-m', 'tools.aio.neutron_stub',
        str(layout.ports['neutron_stub'])], layout.url('neutron_stub'),
        env=cloud.env(PYTHONPATH=layout.repo), cwd=layout.repo)
    _nova(cloud, say, token)
    _accel_backend(cloud, say, token)
    if layout.compute == 'nested':
        nested.start(cloud, say, token, rec)
        _discover_hosts(cloud, say, token, rec)


def _keystone(cloud, say):
    layout = cloud.layout
    config_dir = layout.path('etc', 'keystone')
    user = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    say('keystone: db_sync, fernet and credential keys, bootstrap')
    url = layout.auth_url
    for argv in launch_keystone.setup_argvs(
            cloud.prog('keystone-manage'),
            os.path.join(config_dir, 'keystone.conf'), user, group,
            layout.passwords['admin'], url, config.REGION):
        cloud.run('keystone-manage', argv)
    cloud.gunicorn('keystone', launch_keystone.WSGI_MODULE, 'keystone',
                   cloud.env(**launch_keystone.environment(config_dir)))
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
    config_dir = layout.path('etc', 'placement')
    say('placement: db sync')
    cloud.run('placement-manage', launch_placement.db_sync_argv(
        cloud.prog('placement-manage'), config_dir))
    cloud.gunicorn('placement', launch_placement.WSGI_MODULE, 'placement',
                   cloud.env(**launch_placement.environment(config_dir)))
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
    cloud.run('accel-backend-manage', launch_accel.db_sync_argv(
        [cloud.prog('accel-backend-manage')], conf))
    if layout.compute == 'nested':
        # The API and the conductor here; the agent of the compute node
        # runs in L1, without database credentials.
        cloud.serve('accel-backend', [
            cloud.prog('accel-backend-api'), '--config-file', conf],
            layout.url('accel', '/'))
        cloud.serve('accel-backend-conductor', [
            cloud.prog('accel-backend-conductor'), '--config-file', conf,
            '--config-file', layout.path(
                'etc', 'accel-backend', 'accel-backend-conductor.conf')],
            'http://127.0.0.1:%d/metrics' % layout.ports['conductor_metrics'])
        say('accel-backend-api: up at %s, accel-backend-conductor serves '
            'the agents' % layout.url('accel', '/v2'))
        return
    rec = cloud.serve('accel-backend', [
        cloud.prog('accel-backend'), '--config-file', conf],
        layout.url('accel', '/'))
    want = devices.accelerator_total(layout)

    def reported():
        got, _ = cloud.http('GET', layout.url('accel', '/v2/deployables'),
                            token=token)
        return launch_accel.stored(got['deployables'],
                                   devices.expected_deployables(layout))
    cloud.wait_for('accel-backend devices in Placement', reported, rec)
    say('accel-backend: up at %s, %d accelerators reported to Placement' % (
        layout.url('accel', '/v2'), want))


def stop_all(cloud, say):
    """Stop every process ``cloud`` recorded, newest first (RabbitMQ by
    ``rabbitmqctl stop`` first); ``say(msg)`` reports each.

    Returns the names of the processes still running afterwards.
    """
    recs = cloud.state['processes']
    # Reverse order: the services go before the bus and the database they
    # need to shut down cleanly.
    for rec in reversed(recs):
        if rec['name'] == 'rabbitmq' and procs.alive(rec):
            infra.stop_rabbitmq(cloud)
        if procs.stop(rec):
            say('stopped %s (pid %d)' % (rec['name'], rec['pid']))
    return [r['name'] for r in recs if procs.alive(r)]
