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

"""Configuration files of the all-in-one cloud, as pure functions.

Every function takes a :class:`Layout` (where things are, which ports,
which passwords) and returns either an :class:`Ini` (``tools.aio.ini``,
rendered with :meth:`Ini.render`) or plain data; nothing here touches
the disk, the network or a process, so the unit tests in ``tests/aio``
check the whole configuration of the cloud without starting anything.

The services' own files are here; what the clients read (clouds.yaml,
openrc, tempest.conf) is in ``tools.aio.client_config``, and what each
discovery driver offers in ``tools.aio.devices``.
"""

import dataclasses
import json
import os

from tools.aio import devices
from tools.aio.ini import Ini
from tools.launch import keystone as launch_keystone
from tools.launch import rabbitmq as launch_rabbit

REGION = 'RegionOne'
HOST = 'aio-compute'
SERVICE_PROJECT = 'service'
DOMAIN = 'Default'
#: Service users: ``{user: roles in the service project}``.  ``service``
#: makes their tokens service tokens (accel_backend binds ARQs only for a
#: request whose ``X-Service-Token`` has it; Nova accepts
#: ``os-server-external-events`` from it); ``admin`` lets them read what
#: they act on in every project.  ``accelerator`` has the roles of the
#: install guide ("Roles"): ``service`` validates tokens and reports to
#: Placement; ``admin`` is for its ``[nova]`` credentials, as Nova 34
#: finds the instances of ``os-server-external-events`` with the caller's
#: project unless it is an administrator (with ``service`` alone every
#: event for another project's server is answered 404 and dropped).
SERVICE_USERS = {
    'nova': ('admin', 'service'),
    'placement': ('admin', 'service'),
    'glance': ('admin', 'service'),
    'accelerator': ('admin', 'service'),
    'neutron': ('admin', 'service'),
}
#: Catalog: ``(service name, service type, path after host:port, port key)``.
CATALOG = [
    ('keystone', 'identity', '/v3', 'keystone'),
    ('nova', 'compute', '/v2.1', 'nova_api'),
    ('placement', 'placement', '', 'placement'),
    ('glance', 'image', '', 'glance'),
    ('accelerator', 'accelerator', '/v2', 'accel'),
    ('neutron', 'network', '', 'neutron_stub'),
]
#: Ports the cloud listens on (keys of ``Layout.ports``).
PORT_NAMES = ('keystone', 'placement', 'glance', 'nova_api', 'accel',
              'neutron_stub', 'rabbit', 'rabbit_dist', 'epmd', 'postgres',
              'metrics', 'l1_metrics', 'conductor_metrics')
#: Databases (one per name; Nova has three).
DATABASES = ('keystone', 'placement', 'glance', 'nova_api', 'nova_cell0',
             'nova_cell1', 'accel_backend')


@dataclasses.dataclass
class Layout:
    """Where the cloud lives.

    :ivar run_dir: the run's temporary directory (configs, state, logs,
        databases, keys); ``down`` removes it.
    :ivar venv: the virtual environment holding the services.
    :ivar repo: this repository's root (sysfs fixtures, tools package).
    :ivar ports: ``{name: port}`` for every name of ``PORT_NAMES``.
    :ivar passwords: ``{'admin': ..., 'service': ...}``.
    :ivar db: ``'postgresql'`` or ``'sqlite'``.
    :ivar discovery: accel_backend's discovery drivers, keys of
        ``devices.DISCOVERY_DRIVERS``.
    :ivar arq_binding_timeout: Nova's ``[DEFAULT] arq_binding_timeout``.
    :ivar compute: ``'fake'`` (nova-compute with ``accel.FakeDriver`` on
        this machine) or ``'nested'`` (a real one in the nested compute
        node, :mod:`tools.aio.nested`).
    """

    run_dir: str
    venv: str
    repo: str
    ports: dict
    passwords: dict
    db: str = 'postgresql'
    discovery: list = dataclasses.field(
        default_factory=lambda: ['generic_pci', 'fake'])
    arq_binding_timeout: int = 120
    host: str = HOST
    compute: str = 'fake'

    def path(self, *parts):
        """A path under the run directory."""
        return os.path.join(self.run_dir, *parts)

    def url(self, port_name, path=''):
        """``http://127.0.0.1:<port>`` + ``path`` (``port_name``: a key of
        ``ports``)."""
        return 'http://127.0.0.1:%d%s' % (self.ports[port_name], path)

    @property
    def auth_url(self):
        return self.url('keystone', '/v3')

    @property
    def transport_url(self):
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.ports['rabbit']

    def db_url(self, name):
        """SQLAlchemy URL of database ``name`` (one of ``DATABASES``)."""
        if name not in DATABASES:
            raise ValueError('unknown database %r' % name)
        if self.db == 'sqlite':
            return 'sqlite:///%s' % self.path('db', name + '.sqlite')
        if self.db == 'postgresql':
            return 'postgresql+psycopg2://postgres@127.0.0.1:%d/%s' % (
                self.ports['postgres'], name)
        raise ValueError('unknown database backend %r' % self.db)

    def config_dir(self, service):
        """The folder of ``service``'s config files."""
        return self.path('etc', service)

    def endpoints(self):
        """``[(service name, type, url)]`` of the catalog."""
        return [(name, stype, self.url(port, path))
                for name, stype, path, port in CATALOG]


def keystone_authtoken(layout, user):
    """``[keystone_authtoken]`` of a service that validates tokens as
    ``user`` (a key of ``SERVICE_USERS``)."""
    values = {'www_authenticate_uri': layout.auth_url}
    values.update(service_credentials(layout, user))
    # The service token Nova adds is checked too: keystonemiddleware
    # passes its roles on as X-Service-Roles.
    values['service_token_roles_required'] = True
    return values


def service_credentials(layout, user):
    """keystoneauth ``password`` options for service user ``user``."""
    if user not in SERVICE_USERS:
        raise ValueError('unknown service user %r' % user)
    return {
        'auth_type': 'password',
        'auth_url': layout.auth_url,
        'username': user,
        'password': layout.passwords['service'],
        'project_name': SERVICE_PROJECT,
        'user_domain_name': DOMAIN,
        'project_domain_name': DOMAIN,
        'region_name': REGION,
    }


def _common(ini, layout):
    ini.update('DEFAULT', {'debug': False, 'use_stderr': True})
    ini.set('oslo_concurrency', 'lock_path', layout.path('lock'))
    return ini


def keystone_conf(layout):
    """keystone.conf: fernet tokens, keys under the run directory
    (``tools.launch.keystone.config``)."""
    ini = _common(Ini(), layout)
    for section, values in launch_keystone.config(
            layout.db_url('keystone'), layout.path('keystone')).items():
        ini.update(section, values)
    return ini


def placement_conf(layout):
    """placement.conf: Keystone authentication, its own database."""
    ini = _common(Ini(), layout)
    ini.set('api', 'auth_strategy', 'keystone')
    ini.update('keystone_authtoken', keystone_authtoken(layout, 'placement'))
    ini.set('placement_database', 'connection', layout.db_url('placement'))
    return ini


def glance_conf(layout):
    """glance-api.conf: a file store under the run directory."""
    ini = _common(Ini(), layout)
    ini.update('DEFAULT', {
        'enabled_backends': 'fs:file',
        # Glance under a WSGI server refuses to start without it.
        'worker_self_reference_url': layout.url('glance'),
    })
    ini.set('glance_store', 'default_backend', 'fs')
    ini.set('fs', 'filesystem_store_datadir',
            layout.path('glance', 'images') + os.sep)
    ini.set('os_glance_staging_store', 'filesystem_store_datadir',
            layout.path('glance', 'staging') + os.sep)
    ini.set('os_glance_tasks_store', 'filesystem_store_datadir',
            layout.path('glance', 'tasks') + os.sep)
    ini.set('database', 'connection', layout.db_url('glance'))
    ini.update('keystone_authtoken', keystone_authtoken(layout, 'glance'))
    ini.update('paste_deploy', {
        'flavor': 'keystone',
        'config_file': os.path.join(layout.venv, 'etc', 'glance',
                                    'glance-api-paste.ini'),
    })
    return ini


#: Nova 34's ``[filter_scheduler] enabled_filters`` default.
NOVA_FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter')


def nova_conf(layout):
    """One nova.conf for nova-api, -conductor, -scheduler and -compute.

    ``[database]`` is cell1's: the conductor and the compute's conductor
    calls use it; ``nova-manage cell_v2 create_cell`` records it in the API
    database.
    """
    ini = _common(Ini(), layout)
    ini.update('DEFAULT', {
        'host': layout.host,
        'my_ip': '127.0.0.1',
        'state_path': layout.path('nova'),
        'instances_path': layout.path('nova', 'instances'),
        'transport_url': layout.transport_url,
        # No KVM and no libvirtd here: the bundle's fake driver (Nova's
        # SmallFakeDriver plus the hostdevs the libvirt driver would add).
        'compute_driver': 'accel.FakeDriver',
        'arq_binding_timeout': layout.arq_binding_timeout,
    })
    ini.set('api', 'auth_strategy', 'keystone')
    ini.set('wsgi', 'api_paste_config',
            os.path.join(layout.venv, 'etc', 'nova', 'api-paste.ini'))
    ini.set('api_database', 'connection', layout.db_url('nova_api'))
    ini.set('database', 'connection', layout.db_url('nova_cell1'))
    ini.update('keystone_authtoken', keystone_authtoken(layout, 'nova'))
    # Nova's calls to accel_backend (and the other services) carry the
    # user's token plus this service token: accel_backend binds and
    # unbinds ARQs only for a service token.
    service_user = service_credentials(layout, 'nova')
    service_user['send_service_user_token'] = True
    ini.update('service_user', service_user)
    for section, user in (('placement', 'placement'), ('glance', 'glance'),
                          ('neutron', 'neutron'), ('cyborg', 'nova')):
        creds = service_credentials(layout, user)
        if section in ('glance', 'cyborg'):
            # Nova calls these with the user's token.
            creds = {'region_name': REGION}
        ini.update(section, creds)
    ini.set('cyborg', 'service_type', 'accelerator')
    # Nova 34's default filters (nova/conf/scheduler.py) and the one that
    # keeps NUMA-local accelerator groups off full nodes (install guide).
    ini.update('filter_scheduler', {
        'enabled_filters': ','.join(NOVA_FILTERS +
                                    ('AcceleratorNumaFitFilter',)),
        # Nova's filters and ours (nova_accel/scheduler/filters.py).
        'available_filters': 'nova_accel.scheduler.filters.all_filters'})
    ini.update('scheduler', {
        'discover_hosts_in_cells_interval': -1,
        'workers': 1,
        # One compute host: a failed build has nowhere else to go.
        'max_attempts': 1,
    })
    ini.set('conductor', 'workers', 1)
    ini.set('vnc', 'enabled', False)
    ini.set('notifications', 'notification_format', 'unversioned')
    ini.set('oslo_messaging_notifications', 'driver', 'noop')
    return ini


def nova_cpu_conf(layout):
    """nova-compute's own config (devstack's nova-cpu.conf): no database
    options, a compute reaches the databases only through the conductor
    (with them, Nova logs "No DB access allowed in nova-compute")."""
    ini = nova_conf(layout)
    for section in ('api_database', 'database'):
        del ini.sections[section]
    return ini


def accel_backend_conf(layout):
    """accel-backend.conf: Keystone authentication, the discovery drivers
    of ``layout.discovery``, Prometheus metrics.

    :raises ValueError: for an unknown discovery driver, or none.
    """
    ini = _common(Ini(), layout)
    ini.update('DEFAULT', {'host': layout.host,
                           'state_path': layout.path('accel-backend')})
    if layout.compute == 'nested':
        # The API casts binds to the agent of the nested compute node.
        ini.set('DEFAULT', 'transport_url', layout.transport_url)
    ini.update('api', {'host_ip': '127.0.0.1',
                       'port': layout.ports['accel'],
                       'auth_strategy': 'keystone', 'workers': 8})
    ini.set('database', 'connection', layout.db_url('accel_backend'))
    ini.update('keystone_authtoken',
               keystone_authtoken(layout, 'accelerator'))
    ini.update('placement', service_credentials(layout, 'accelerator'))
    ini.update('nova', service_credentials(layout, 'accelerator'))
    ini.update('discovery', {
        # The compute node provider the FakeDriver reports (its node is
        # [DEFAULT] host).
        'resource_provider_name': layout.host,
        'report_interval': 10,
    })
    names = list(layout.discovery)
    unknown = set(names) - set(devices.DISCOVERY_DRIVERS)
    if unknown or not names:
        raise ValueError('unknown discovery drivers %r' % sorted(unknown))
    # l1_edu: generic_pci on the real sysfs of the nested compute node;
    # l1_mtty: the mdev driver there, for the kernel's mtty sample.
    ini.set('discovery', 'enabled_drivers', list(dict.fromkeys(
        {'l1_edu': 'generic_pci', 'l1_mtty': 'mdev'}.get(name, name)
        for name in names)))
    if 'l1_mtty' in names:
        ini.set('discovery', 'mdev_types', devices.MTTY_TYPE)
    if 'generic_pci' in names:
        ini.set('discovery', 'sysfs_root', os.path.join(
            layout.repo, 'tests', 'fixtures', 'sysfs', 'two-gpus'))
    for name in names:
        for spec in devices.device_specs(name):
            ini.add('discovery', 'device_spec', json.dumps(spec))
    ini.set('binding', 'workers', 2)
    # Prometheus metrics (the demo shows the bind latency histogram).
    ini.update('metrics', {'enabled': True, 'host': '127.0.0.1',
                           'port': layout.ports['metrics']})
    return ini


def rabbitmq(layout):
    """``(environment, rabbitmq.conf text)`` of the private RabbitMQ
    (:mod:`tools.launch.rabbitmq`), logging to its console."""
    env = launch_rabbit.environment(
        layout.path('rabbitmq'), 'aio%d' % layout.ports['rabbit'],
        layout.ports['rabbit'], layout.ports['rabbit_dist'],
        layout.ports['epmd'])
    return env, launch_rabbit.config(layout.ports['rabbit'],
                                     log_to_console=True)


def all_configs(layout):
    """``{relative path under run_dir: Ini}`` of every service."""
    return {
        'etc/keystone/keystone.conf': keystone_conf(layout),
        'etc/placement/placement.conf': placement_conf(layout),
        'etc/glance/glance-api.conf': glance_conf(layout),
        'etc/nova/nova.conf': nova_conf(layout),
        'etc/nova/nova-cpu.conf': nova_cpu_conf(layout),
        'etc/accel-backend/accel-backend.conf': accel_backend_conf(layout),
        'etc/accel-backend/accel-backend-conductor.conf':
            conductor_overlay(layout),
    }


def conductor_overlay(layout):
    """What ``accel-backend-conductor`` reads after accel-backend.conf
    (nested compute node): its own metrics port, where the bind latency
    and failures of every host are counted."""
    return Ini().update('metrics', {
        'enabled': True, 'host': '127.0.0.1',
        'port': layout.ports['conductor_metrics']})
