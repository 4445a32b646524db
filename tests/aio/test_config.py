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

"""The all-in-one launcher's configuration (``tools.aio.config``,
``client_config``, ``devices``), its Neutron stub and its process handling
- nothing here starts the cloud."""

import configparser
import io
import json
import os
import subprocess
import tempfile
import time
import unittest
import wsgiref.util

from accel_backend import conf as accel_conf
from tools.aio import client_config
from tools.aio import cloud
from tools.aio import config
from tools.aio import devices
from tools.aio import neutron_stub
from tools.aio import procs

RUN = '/tmp/nova-accel-aio-test'
VENV = '/cache/venv'
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def layout(**kw):
    values = dict(run_dir=RUN, venv=VENV, repo=REPO,
                  ports={name: 20000 + i
                         for i, name in enumerate(config.PORT_NAMES)},
                  passwords={'admin': 'adminpw', 'service': 'servicepw'})
    values.update(kw)
    return config.Layout(**values)


def parse(ini):
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str
    parser.read_string(ini.render())
    return parser


class TestIni(unittest.TestCase):

    def test_render_set_add(self):
        ini = config.Ini()
        ini.set('DEFAULT', 'debug', False).set('a', 'x', 1).set('a', 'x', 2)
        ini.add('b', 'spec', '{"a": 1}').add('b', 'spec', '{"b": 2}')
        ini.set('b', 'drivers', ['one', 'two'])
        self.assertEqual(
            '[DEFAULT]\ndebug = false\n\n[a]\nx = 2\n\n'
            '[b]\nspec = {"a": 1}\nspec = {"b": 2}\ndrivers = one,two\n',
            ini.render())
        self.assertEqual(['{"a": 1}', '{"b": 2}'], ini.get_all('b', 'spec'))
        self.assertEqual('2', ini.get('a', 'x'))
        self.assertIsNone(ini.get('a', 'y'))


class TestLayout(unittest.TestCase):

    def test_db_urls(self):
        pg = layout()
        self.assertEqual('postgresql+psycopg2://postgres@127.0.0.1:%d/nova_api'
                         % pg.ports['postgres'], pg.db_url('nova_api'))
        lite = layout(db='sqlite')
        self.assertEqual('sqlite:///%s/db/keystone.sqlite' % RUN,
                         lite.db_url('keystone'))
        self.assertRaises(ValueError, pg.db_url, 'nova')
        self.assertRaises(ValueError, layout(db='mysql').db_url, 'keystone')

    def test_catalog(self):
        lay = layout()
        endpoints = {stype: url for _, stype, url in lay.endpoints()}
        self.assertEqual({'identity', 'compute', 'placement', 'image',
                          'accelerator', 'network'}, set(endpoints))
        self.assertEqual('http://127.0.0.1:%d/v2' % lay.ports['accel'],
                         endpoints['accelerator'])
        self.assertEqual('http://127.0.0.1:%d/v2.1' % lay.ports['nova_api'],
                         endpoints['compute'])
        self.assertEqual(lay.auth_url, endpoints['identity'])

    def test_every_path_is_inside_the_run_dir_venv_or_repo(self):
        # What `down` removes (the run dir) is all the cloud writes.
        lay = layout()
        confs = dict(config.all_configs(lay))
        confs['tempest'] = client_config.tempest_conf(lay, 'img', '1', '2')
        for name, ini in confs.items():
            for section, items in ini.sections.items():
                for key, value in items:
                    if value.startswith('/'):
                        self.assertTrue(value.startswith((RUN, VENV, REPO)),
                                        '%s [%s] %s = %s' % (
                                            name, section, key, value))
        env, _ = config.rabbitmq(lay)
        for key, value in env.items():
            if value.startswith('/'):
                self.assertTrue(value.startswith(RUN), key)


class TestServiceConfigs(unittest.TestCase):

    def setUp(self):
        self.layout = layout()

    def test_all_parse_as_ini(self):
        for name, ini in config.all_configs(self.layout).items():
            parse(ini)  # raises on duplicates or syntax errors

    def test_nova_conf(self):
        nova = parse(config.nova_conf(self.layout))
        self.assertEqual('accel.FakeDriver',
                         nova['DEFAULT']['compute_driver'])
        self.assertEqual('aio-compute', nova['DEFAULT']['host'])
        self.assertEqual('rabbit://guest:guest@127.0.0.1:%d/' %
                         self.layout.ports['rabbit'],
                         nova['DEFAULT']['transport_url'])
        self.assertEqual('120', nova['DEFAULT']['arq_binding_timeout'])
        self.assertEqual(self.layout.db_url('nova_api'),
                         nova['api_database']['connection'])
        self.assertEqual(self.layout.db_url('nova_cell1'),
                         nova['database']['connection'])
        # Nova sends service tokens: accel_backend binds only for them.
        service_user = nova['service_user']
        self.assertEqual('true', service_user['send_service_user_token'])
        self.assertEqual(('password', 'nova', 'servicepw', 'service'),
                         (service_user['auth_type'],
                          service_user['username'],
                          service_user['password'],
                          service_user['project_name']))
        self.assertEqual('accelerator', nova['cyborg']['service_type'])
        # The scheduler filters NUMA-local accelerator groups.
        self.assertEqual(
            ('ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,'
             'ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,'
             'AcceleratorNumaFitFilter',
             'nova_accel.scheduler.filters.all_filters'),
            (nova['filter_scheduler']['enabled_filters'],
             nova['filter_scheduler']['available_filters']))
        self.assertEqual('RegionOne', nova['cyborg']['region_name'])
        self.assertEqual('placement', nova['placement']['username'])
        self.assertEqual('nova', nova['keystone_authtoken']['username'])
        self.assertEqual(os.path.join(VENV, 'etc', 'nova', 'api-paste.ini'),
                         nova['wsgi']['api_paste_config'])
        self.assertEqual('-1', nova['scheduler'][
            'discover_hosts_in_cells_interval'])

    def test_nova_cpu_conf_has_no_database(self):
        cpu = parse(config.nova_cpu_conf(self.layout))
        self.assertFalse(cpu.has_section('database'))
        self.assertFalse(cpu.has_section('api_database'))
        self.assertEqual('accel.FakeDriver', cpu['DEFAULT']['compute_driver'])
        self.assertEqual('true',
                         cpu['service_user']['send_service_user_token'])

    def test_keystone_conf(self):
        ks = parse(config.keystone_conf(self.layout))
        self.assertEqual('fernet', ks['token']['provider'])
        self.assertEqual(RUN + '/keystone/fernet-keys',
                         ks['fernet_tokens']['key_repository'])
        self.assertEqual(self.layout.db_url('keystone'),
                         ks['database']['connection'])

    def test_placement_and_glance(self):
        placement = parse(config.placement_conf(self.layout))
        self.assertEqual('keystone', placement['api']['auth_strategy'])
        self.assertEqual(self.layout.db_url('placement'),
                         placement['placement_database']['connection'])
        glance = parse(config.glance_conf(self.layout))
        self.assertEqual(self.layout.url('glance'),
                         glance['DEFAULT']['worker_self_reference_url'])
        self.assertEqual('fs:file', glance['DEFAULT']['enabled_backends'])
        self.assertEqual(RUN + '/glance/images/',
                         glance['fs']['filesystem_store_datadir'])
        self.assertEqual('keystone', glance['paste_deploy']['flavor'])

    def write(self, ini):
        tmp = tempfile.NamedTemporaryFile('w', suffix='.conf', delete=False)
        self.addCleanup(os.unlink, tmp.name)
        with tmp:
            tmp.write(ini.render())
        return tmp.name

    def test_accel_backend_conf_loads_in_accel_backend(self):
        # Loaded with accel_backend's own options: names and types check.
        conf = accel_conf.new_conf(config_files=[self.write(
            config.accel_backend_conf(self.layout))])
        self.assertEqual('aio-compute', conf.host)
        self.assertEqual(('127.0.0.1', self.layout.ports['accel'],
                          'keystone'),
                         (conf.api.host_ip, conf.api.port,
                          conf.api.auth_strategy))
        self.assertEqual(['generic_pci', 'fake'],
                         conf.discovery.enabled_drivers)
        self.assertTrue(os.path.isdir(conf.discovery.sysfs_root))
        self.assertEqual([devices.GPU_SPEC],
                         [json.loads(s) for s in conf.discovery.device_spec])
        self.assertEqual('aio-compute',
                         conf.discovery.resource_provider_name)
        self.assertEqual(self.layout.db_url('accel_backend'),
                         conf.database.connection)
        for group in ('placement', 'nova'):
            # (username & co. are options of the password plugin, which
            # registers them when it loads.)
            self.assertEqual('password', conf[group].auth_type)

    def test_accel_backend_discovery_choices(self):
        fake = config.accel_backend_conf(layout(discovery=['fake']))
        self.assertEqual('fake', fake.get('discovery', 'enabled_drivers'))
        self.assertIsNone(fake.get('discovery', 'sysfs_root'))
        self.assertEqual([], fake.get_all('discovery', 'device_spec'))
        self.assertRaises(ValueError, config.accel_backend_conf,
                          layout(discovery=['nope']))
        self.assertRaises(ValueError, config.accel_backend_conf,
                          layout(discovery=[]))

    def test_groups_and_totals(self):
        both = layout()
        self.assertEqual('1', devices.demo_group(both)['resources:PGPU'])
        self.assertEqual('1', devices.tempest_group(both)['resources:FPGA'])
        self.assertEqual(18, devices.accelerator_total(both))
        self.assertEqual(16, devices.accelerator_total(
            both, devices.tempest_group(both)))
        self.assertEqual(3, devices.expected_deployables(both))
        gpus = layout(discovery=['generic_pci'])
        self.assertEqual('1', devices.tempest_group(gpus)['resources:PGPU'])
        self.assertEqual(2, devices.accelerator_total(gpus))

    def test_rabbitmq(self):
        env, text = config.rabbitmq(self.layout)
        port = self.layout.ports['rabbit']
        self.assertIn('listeners.tcp.default = 127.0.0.1:%d' % port, text)
        self.assertEqual(str(port), env['RABBITMQ_NODE_PORT'])
        self.assertEqual(str(self.layout.ports['epmd']), env['ERL_EPMD_PORT'])
        self.assertEqual('127.0.0.1', env['ERL_EPMD_ADDRESS'])
        self.assertEqual(RUN + '/rabbitmq', env['HOME'])

    def test_clouds_and_openrc(self):
        clouds = client_config.clouds_yaml(self.layout)['clouds']
        self.assertEqual(('admin', 'adminpw', self.layout.auth_url),
                         (clouds['aio-admin']['auth']['username'],
                          clouds['aio-admin']['auth']['password'],
                          clouds['aio-admin']['auth']['auth_url']))
        rc = client_config.openrc(self.layout)
        self.assertIn('export OS_CLOUD=aio-admin', rc)
        self.assertIn(RUN + '/clouds.yaml', rc)

    def test_tempest_conf(self):
        conf = parse(client_config.tempest_conf(self.layout, 'img-1', 'f1',
                                                'f2'))
        accel = conf['accelerator']
        self.assertEqual('accelerator', accel['catalog_type'])
        self.assertEqual(devices.tempest_group(self.layout),
                         json.loads(accel['device_profile_group']))
        self.assertEqual(('FPGA', '16', '120'),
                         (accel['resource_class'],
                          accel['accelerators_per_host'],
                          accel['arq_binding_timeout']))
        self.assertEqual('true', conf['service_available']['accelerator'])
        self.assertEqual('false', conf['service_available']['neutron'])
        self.assertEqual(('img-1', 'f1', 'f2'),
                         (conf['compute']['image_ref'],
                          conf['compute']['flavor_ref'],
                          conf['compute']['flavor_ref_alt']))
        self.assertEqual(self.layout.auth_url, conf['identity']['uri_v3'])
        self.assertEqual('adminpw', conf['auth']['admin_password'])


class TestNeutronStub(unittest.TestCase):

    def call(self, method, path):
        environ = {'REQUEST_METHOD': method, 'PATH_INFO': path.split('?')[0],
                   'QUERY_STRING': path.partition('?')[2],
                   'HTTP_HOST': '127.0.0.1:9696', 'wsgi.input': io.BytesIO()}
        wsgiref.util.setup_testing_defaults(environ)
        got = {}

        def start_response(status, headers):
            got['status'] = status

        body = b''.join(neutron_stub.app(environ, start_response))
        return int(got['status'].split()[0]), (json.loads(body)
                                               if body else None)

    def test_answers(self):
        status, body = self.call('GET', '/')
        self.assertEqual(200, status)
        self.assertEqual('http://127.0.0.1:9696/v2.0/',
                         body['versions'][0]['links'][0]['href'])
        self.assertEqual((200, {'ports': []}),
                         self.call('GET', '/v2.0/ports?device_id=x'))
        self.assertEqual((200, {'security_groups': []}),
                         self.call('GET', '/v2.0/security-groups'))
        self.assertEqual(404, self.call('GET', '/v2.0/ports/abc')[0])
        self.assertEqual(404, self.call('POST', '/v2.0/ports')[0])
        self.assertEqual((204, None), self.call('DELETE', '/v2.0/ports/a'))


class TestProcs(unittest.TestCase):

    def test_spawn_and_stop_a_process_group(self):
        logs = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(['rm', '-rf', logs]))
        # The shell's child is in the same group: stop() ends both.
        rec = procs.spawn('sleeper', ['sh', '-c', 'sleep 60 & wait'], logs)
        self.assertTrue(procs.alive(rec))
        self.assertTrue(procs.stop(rec, timeout=5))
        self.assertFalse(procs.alive(rec))
        # Nothing of the group is left (zombies waiting for init to reap
        # them do not count).
        deadline = time.monotonic() + 5
        while True:
            out = subprocess.run(['ps', '-o', 'pid=,stat=', '-g',
                                  str(rec['pid'])],
                                 capture_output=True, text=True).stdout
            left = [line for line in out.splitlines()
                    if not line.split()[1].startswith('Z')]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual([], left)
        self.assertFalse(procs.stop(rec))

    def test_reused_pid_is_not_ours(self):
        rec = {'pid': os.getpid(), 'start': -1}
        self.assertFalse(procs.alive(rec))
        self.assertIsNone(procs.start_time(2 ** 22 + 12345))


class TestPorts(unittest.TestCase):

    def test_distinct_ports(self):
        ports = cloud.pick_ports()
        self.assertEqual(set(config.PORT_NAMES), set(ports))
        self.assertEqual(len(ports), len(set(ports.values())))
