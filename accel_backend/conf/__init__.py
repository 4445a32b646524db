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

"""Configuration of accel_backend.

Options are declared per group in the modules of this package and gathered
by ``list_opts()`` (the ``oslo.config.opts`` entry point) for
``oslo-config-generator``.  accel_backend always works on its own
``ConfigOpts`` instance (never a global), so a test may run it in the same
process as Nova.
"""

import socket

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_db import options as db_options
from oslo_log import log as logging
from oslo_log import versionutils
from oslo_middleware.healthcheck import opts as healthcheck_opts

from accel_backend.conf import conductor
from accel_backend.conf import discovery
from accel_backend.conf import metrics
from accel_backend.conf import nvidia_vgpu
from accel_backend.conf import taints
from accel_backend.conf import upgrade_levels

LOG = logging.getLogger(__name__)

DEFAULT_OPTS = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help='Name of this host: the ``hostname`` Nova binds ARQs '
                    'with must equal it (Nova sends the compute node\'s '
                    'hypervisor_hostname).'),
    cfg.StrOpt('state_path', default='/var/lib/accel-backend',
               help='Directory for the embedded SQLite database.'),
]

API_GROUP = cfg.OptGroup('api', title='REST API server')
# Listening on every address is the intended default of [api] host_ip
# (see its help).
_EVERY_ADDRESS = '0.0.0.0'  # nosec B104
API_OPTS = [
    cfg.HostAddressOpt('host_ip', default=_EVERY_ADDRESS,
                       help='Address the API server (``accel-backend``, '
                            '``accel-backend-api``) listens on; the '
                            'default, every IPv4 address, is what the '
                            'endpoint ``http://<host>:6666/v2`` and a load '
                            'balancer in front of several API nodes need '
                            '(as Cyborg\'s and Ironic\'s ``[api] host_ip``). '
                            'Set 127.0.0.1 for a single-host cloud whose '
                            'clients are all local.'),
    cfg.PortOpt('port', default=6666,
                help='Port the API server listens on (Cyborg uses 6666).'),
    cfg.IntOpt('workers', default=8, min=1,
               help='Threads of the WSGI server.'),
    cfg.IntOpt('backlog', default=128, min=1,
               help='Connections the listening socket queues while every '
                    'worker is busy; beyond it new connections are reset.'),
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token'),
                        ('noauth', 'no authentication: identity comes from '
                                   'X-User-Id/X-Project-Id/X-Roles headers; '
                                   'for local use only')],
               help='How requests are authenticated.'),
    cfg.BoolOpt('allow_remote_noauth', default=False,
                help='Serve ``auth_strategy = noauth`` where other hosts '
                     'may reach the API: ``accel-backend`` or '
                     '``accel-backend-api`` with a ``host_ip`` that is not '
                     'a loopback address, and the WSGI application '
                     '``accel_backend.wsgi.api:application`` (whose '
                     'listening address is the WSGI server\'s). noauth '
                     'takes the caller\'s roles from the request\'s '
                     'headers, so whoever reaches the port is an '
                     'administrator: set it only where a firewall or a '
                     'private network keeps every other client out. '
                     'Without it these start-ups are refused.'),
]

DATABASE_DEFAULT = 'sqlite:///$state_path/accel_backend.sqlite'

PLACEMENT_GROUP = cfg.OptGroup('placement', title='Placement client')
NOVA_GROUP = cfg.OptGroup('nova', title='Nova client (external events)')
NOVA_OPTS = [
    cfg.FloatOpt('event_retry_interval', default=0.5, min=0.01,
                 help='Seconds before the first retry of an '
                      '``accelerator-request-bound`` event that Nova did not '
                      'accept; doubles on each try up to 30 seconds.'),
    cfg.IntOpt('event_retry_timeout', default=600, min=1,
               help='Seconds after which an undelivered event is dropped '
                    '(Nova waits ``arq_binding_timeout``, default 300).'),
]

DISCOVERY_GROUP = discovery.GROUP
DISCOVERY_OPTS = discovery.OPTS

CLEANING_GROUP = cfg.OptGroup(
    'cleaning', title='Cleaning devices between tenants')
CLEANING_OPTS = [
    cfg.DictOpt('methods',
                default={'nvidia_gpu': 'flr', 'fpga': 'flr',
                         'generic_pci': 'none', 'mdev': 'none',
                         'nvidia_vgpu': 'vgpu', 'fake': 'none'},
                help='Cleaning step per discovery driver once a device is '
                     'released: ``flr`` (write 1 to the function\'s sysfs '
                     '``reset``; a function the kernel offers no reset for, '
                     'no ``reset_method``, gets ``none`` with a warning), '
                     '``command`` (run ``[cleaning] command``), ``vgpu`` '
                     '(nvidia_vgpu: destroy the VF\'s vGPU and create a '
                     'fresh one of its profile), ``mdev`` (mdev: destroy '
                     'the mediated device, and its mdevctl definition; the '
                     'next guest\'s is created fresh) or ``none`` '
                     '(offered again at once). A function reset does not '
                     'clear a GPU\'s memory: scrub it with ``command``.'),
    cfg.StrOpt('command',
               help='Command run by the ``command`` method, split like a '
                    'shell would; ``{address}`` is replaced by the PCI '
                    'address (appended when absent). Exit status 0 means '
                    'clean.'),
    cfg.IntOpt('timeout', default=300, min=1,
               help='Seconds a cleaning command may run.'),
    cfg.IntOpt('workers', default=4, min=1,
               help='Devices cleaned at once. Released devices waiting '
                    'for a worker are already reserved in Placement.'),
    cfg.FloatOpt('poll_interval', default=60.0, min=0.1,
                 help='Seconds between looks for dirty devices. Releases '
                      'wake the cleaner at once (the commit of a release '
                      'in ``accel-backend``, a ``clean`` cast from the API '
                      'to ``accel-backend-agent``): the look is the safety '
                      'net for a wake-up lost on the way. In an agent each '
                      'look is a conductor call, a background that grows '
                      'with the hosts; the default is the discovery\'s '
                      '``report_interval``.'),
]

#: ``[healthcheck] backends`` by default, per role
#: (``accel_backend.service``): an API node behind a load balancer answers
#: for itself (its database), not for a compute host's discovery or
#: Placement, which would take every API node out at once; the embedded
#: service is the whole cloud's accelerator side and checks all of it.
HEALTH_BACKENDS = {
    'embedded': ('accel_database', 'accel_placement', 'accel_discovery',
                 'accel_audit', 'accel_devices'),
    'api': ('accel_database',),
}

#: accel_backend's own ``[database]`` options (oslo.db's are there too).
DATABASE_OPTS = [
    cfg.BoolOpt('sync_on_startup', default=True,
                help='``accel-backend`` (embedded, one process): create or '
                     'upgrade the schema when it starts (as Placement\'s '
                     'option of that name). When false, and always for '
                     '``accel-backend-api`` and ``accel-backend-agent``, the '
                     'schema must already be at the revision of the '
                     'installed code (``accel-backend-manage db sync``) or '
                     'the process refuses to start: processes sharing a '
                     'database never race the migrations.'),
]

AUDIT_GROUP = cfg.OptGroup('audit', title='Periodic reconciliation')
AUDIT_OPTS = [
    cfg.IntOpt('interval', default=600, min=0,
               help='Seconds between audits '
                    '(``accel_backend.conductor.audit``) that '
                    'find and repair ARQs of instances Nova deleted, '
                    'attach handles in use without an ARQ (and the '
                    'reverse), ARQs stuck in BindStarted and cleanings '
                    'that hang; 0 disables the audit.'),
    cfg.IntOpt('grace_period', default=600, min=0,
               help='Seconds a state must be old before the audit acts on '
                    'it: ARQs bound longer than this are checked against '
                    'Nova, ARQs BindStarted longer than this are bound '
                    'again, and a cleaning running longer than '
                    '``[cleaning] timeout`` plus this is failed.'),
    cfg.BoolOpt('delete_orphaned_arqs', default=True,
                help='Delete the ARQs (and free the devices) of instances '
                     'proven gone: the ``[nova]`` credentials can list '
                     'every project\'s servers (``admin``), Nova answers '
                     '404 and Placement holds no allocation of the '
                     'instance, at two audits ``grace_period`` apart. '
                     'With credentials that cannot see every project '
                     '(the ``service`` role alone) nothing is deleted and '
                     'a warning says so; false turns the step and the '
                     'warning off.'),
]

BINDING_GROUP = cfg.OptGroup('binding', title='ARQ binding')
BINDING_OPTS = [
    cfg.IntOpt('workers', default=4, min=1,
               help='Threads that carry out ARQ binding.'),
    cfg.StrOpt('mode', default='inline',
               choices=[('inline', 'the embedded ``accel-backend`` binds '
                                   'every ARQ of a PATCH in the PATCH\'s '
                                   'own transaction (one commit; the 202 '
                                   'means Bound or BindFailed) and sends '
                                   'the events from its own threads'),
                        ('agents', 'the embedded ``accel-backend`` binds '
                                   'after the PATCH\'s commit, as the '
                                   'conductor of other hosts\' '
                                   '``accel-backend-agent`` (it serves '
                                   'their database work and wakes their '
                                   'cleaners over oslo.messaging, '
                                   '``[DEFAULT] transport_url``) and the '
                                   'agent of its own host'),
                        ('local', 'deprecated name of ``inline``'),
                        ('rpc', 'deprecated name of ``agents``')],
               help='How the embedded ``accel-backend`` binds '
                    '(``accel_backend.conductor.dispatcher``). '
                    '``accel-backend-api`` always casts bind requests to '
                    'an ``accel-backend-conductor``, which binds them. '
                    'The values ``local`` and ``rpc`` of earlier releases '
                    'are deprecated names of ``inline`` and ``agents``.'),
    cfg.StrOpt('agent_topic', default='accel-agent',
               help='oslo.messaging topic the agents serve (server = '
                    '``[DEFAULT] host``).'),
    cfg.IntOpt('cast_retry', default=2, min=0,
               help='Reconnection attempts of a cast (a bind request to '
                    'a conductor, a cleaning wake-up to an agent) before '
                    'it fails; a bind PATCH then fails with 503 (the ARQs '
                    'stay BindStarted: a conductor resumes them when it '
                    'starts, the audit re-queues them after ``[audit] '
                    'grace_period``).'),
]


#: Deprecated values of ``[binding] mode`` and the value each names.
DEPRECATED_BINDING_MODES = {'local': 'inline', 'rpc': 'agents'}


def binding_mode(conf):
    """``[binding] mode`` of ``conf``: ``'inline'`` or ``'agents'``, the
    deprecated ``local`` and ``rpc`` read as those, with a deprecation
    warning (oslo.log's ``report_deprecated_feature``: once per process).
    """
    mode = conf.binding.mode
    if mode in DEPRECATED_BINDING_MODES:
        new = DEPRECATED_BINDING_MODES[mode]
        versionutils.report_deprecated_feature(
            LOG, '[binding] mode = %(old)s is deprecated; use mode = '
            '%(new)s', {'old': mode, 'new': new})
        return new
    return mode


def _own(group):
    # oslo.config keeps per-group state on the OptGroup object itself: a
    # group object shared by two ConfigOpts would carry overrides from one
    # to the other, so every ConfigOpts gets its own copies.
    return cfg.OptGroup(group.name, title=group.title, help=group.help)


def register_opts(conf):
    """Register every accel_backend option on ``conf``.

    :param conf: an ``oslo_config.cfg.ConfigOpts`` instance; several
        instances in one process stay independent.
    """
    conf.register_opts(DEFAULT_OPTS)
    conf.register_group(_own(API_GROUP))
    conf.register_opts(API_OPTS, group=API_GROUP.name)
    db_options.set_defaults(conf, connection=DATABASE_DEFAULT)
    conf.register_opts(DATABASE_OPTS, group='database')
    for group in (PLACEMENT_GROUP, NOVA_GROUP):
        conf.register_group(_own(group))
        ks_loading.register_session_conf_options(conf, group.name)
        ks_loading.register_auth_conf_options(conf, group.name)
        ks_loading.register_adapter_conf_options(conf, group.name)
    conf.register_opts(NOVA_OPTS, group=NOVA_GROUP.name)
    conf.register_group(_own(DISCOVERY_GROUP))
    conf.register_opts(DISCOVERY_OPTS, group=DISCOVERY_GROUP.name)
    conf.register_group(_own(BINDING_GROUP))
    conf.register_opts(BINDING_OPTS, group=BINDING_GROUP.name)
    conf.register_group(_own(CLEANING_GROUP))
    conf.register_opts(CLEANING_OPTS, group=CLEANING_GROUP.name)
    conf.register_group(_own(AUDIT_GROUP))
    conf.register_opts(AUDIT_OPTS, group=AUDIT_GROUP.name)
    conf.register_group(_own(metrics.GROUP))
    conf.register_opts(metrics.OPTS, group=metrics.GROUP.name)
    conf.register_group(_own(nvidia_vgpu.GROUP))
    conf.register_opts(nvidia_vgpu.OPTS, group=nvidia_vgpu.GROUP.name)
    conf.register_group(_own(conductor.GROUP))
    conf.register_opts(conductor.OPTS, group=conductor.GROUP.name)
    conf.register_group(_own(upgrade_levels.GROUP))
    conf.register_opts(upgrade_levels.OPTS, group=upgrade_levels.GROUP.name)
    conf.register_group(_own(taints.GROUP))
    conf.register_opts(taints.OPTS, group=taints.GROUP.name)
    # oslo.middleware's /healthcheck (accel_backend.api.health): our
    # checks by default; an operator's [healthcheck] backends wins.
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS, group='healthcheck')
    conf.set_default('backends', list(HEALTH_BACKENDS['embedded']),
                     group='healthcheck')


def new_conf(args=None, config_files=None):
    """Build a ready ``ConfigOpts`` with all accel_backend options.

    :param args: command-line arguments (list of str), default none.
    :param config_files: config file paths read when ``args`` names none
        (list of str); default: oslo.config's search for
        ``accel-backend.conf`` (``/etc/accel-backend/`` among others), as
        ``accel-backend-manage`` and ``accel-backend-status`` read it.
    :returns: ``oslo_config.cfg.ConfigOpts``.
    :raises oslo_config.cfg.Error: a configuration file that is missing or
        cannot be parsed.
    """
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    register_opts(conf)
    conf(args or [], project='accel-backend',
         default_config_files=config_files)
    return conf


def _ks_opts(group):
    return (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_auth_plugin_conf_options('password') +
            ks_loading.get_adapter_conf_options())


_AUTHTOKEN_GROUP = cfg.OptGroup(
    'keystone_authtoken', title='keystonemiddleware auth_token',
    help='How the API validates tokens ([api] auth_strategy = keystone): '
         'keystonemiddleware\'s auth_token options, and the credentials it '
         'validates them with. The options from accel_backend are those of '
         'auth_type = password.')


def list_opts():
    """``[(group, opts)]`` for ``oslo-config-generator``
    (etc/oslo-config-generator/accel-backend.conf adds the libraries').

    Besides the options ``register_opts`` registers: ``[mdev_<type>]``,
    the example of the groups the mdev driver registers per enabled type
    once the configuration is read (Nova 34 documents its
    ``[mdev_$(MDEV_TYPE)]`` in the help of ``[devices]
    enabled_mdev_types`` only, nova/conf/devices.py), and the password
    plugin's options in ``[keystone_authtoken]``, which keystonemiddleware
    registers only when it loads ``auth_type = password``.
    """
    return [
        ('DEFAULT', DEFAULT_OPTS),
        (API_GROUP, API_OPTS),
        ('database', DATABASE_OPTS),
        (PLACEMENT_GROUP, _ks_opts('placement')),
        (NOVA_GROUP, NOVA_OPTS + _ks_opts('nova')),
        (DISCOVERY_GROUP, DISCOVERY_OPTS),
        (BINDING_GROUP, BINDING_OPTS),
        (CLEANING_GROUP, CLEANING_OPTS),
        (AUDIT_GROUP, AUDIT_OPTS),
        (metrics.GROUP, metrics.OPTS),
        (nvidia_vgpu.GROUP, nvidia_vgpu.OPTS),
        (conductor.GROUP, conductor.OPTS),
        (upgrade_levels.GROUP, upgrade_levels.OPTS),
        (taints.GROUP, taints.OPTS),
        (discovery.MDEV_TYPE_EXAMPLE_GROUP, discovery.MDEV_TYPE_OPTS),
        (_AUTHTOKEN_GROUP,
         ks_loading.get_auth_plugin_conf_options('password')),
    ]
