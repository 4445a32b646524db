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

"""The devstack plugin: shellcheck, and the configuration it writes.

``devstack/settings`` and ``devstack/plugin.sh`` are sourced by bash for
each devstack phase, as devstack does, with the devstack functions they
call replaced by the stand-ins of ``devstack_stubs.sh`` (the ini functions
write real files); the tests then read the nova.conf, nova-cpu.conf,
nova_cellN.conf, accel-backend.conf and systemd units it produced and the
devstack calls it made (accounts, catalog, databases, tempest plugins).
``tests.devstack_checkout`` runs the same tests with a devstack
checkout's own functions instead of the stand-ins.
"""

import json
import os
import shutil
import subprocess
import unittest

from tests.aio import devstack_harness
from tests.aio import ini_tool

REPO = devstack_harness.REPO
SCRIPTS = ['devstack/plugin.sh', 'devstack/lib/nova-accel',
           'devstack/settings', 'tests/aio/devstack_stubs.sh']
T4 = {'vendor_id': '10de', 'product_id': '1eb8', 'resource_class': 'PGPU',
      'traits': ['CUSTOM_NVIDIA_T4']}
FPGA = {'vendor_id': '10ee', 'product_id': '5000', 'resource_class': 'FPGA'}


class TestShellcheck(unittest.TestCase):

    def test_scripts_are_shellcheck_clean(self):
        shellcheck = shutil.which('shellcheck')
        self.assertIsNotNone(shellcheck,
                             'shellcheck is not installed (bindep.txt: test)')
        proc = subprocess.run([shellcheck] + SCRIPTS, cwd=REPO,
                              capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)


class TestDevstackPlugin(devstack_harness.DevstackPluginTestCase):

    def test_settings(self):
        calls = self.devstack()
        self.assertIn('define_plugin nova-accel', calls)
        # Placement is devstack's own service, no plugin to require.
        self.assertFalse([c for c in calls
                          if c.startswith('plugin_requires')])
        self.assertIn('accel-api',
                      self.vars['ENABLED_SERVICES'].split(','))

    def test_settings_keep_disable_service(self):
        # local.conf's disable_service accel-api (a compute node) wins.
        self.devstack(ENABLED_SERVICES='n-cpu,accel-agent',
                      DISABLED_SERVICES='accel-api')
        self.assertEqual(['n-cpu', 'accel-agent'],
                         self.vars['ENABLED_SERVICES'].split(','))

    def test_post_config_writes_accel_backend_conf(self):
        # An empty one (";;") is no spec.
        specs = '%s;;%s' % (json.dumps(T4), json.dumps(FPGA))
        self.devstack('stack post-config', ACCEL_BACKEND_DEVICE_SPECS=specs)
        conf = self.ini(os.path.join(self.conf_dir, 'accel-backend.conf'))
        hostname = subprocess.check_output(['hostname'], text=True).strip()
        self.assertEqual(hostname, self.value(conf, 'DEFAULT', 'host'))
        self.assertEqual(os.path.join(self.tmp, 'data', 'accel-backend'),
                         self.value(conf, 'DEFAULT', 'state_path'))
        self.assertTrue(os.path.isdir(self.value(conf, 'DEFAULT',
                                                 'state_path')))
        self.assertEqual(('192.0.2.10', '6666'),
                         (self.value(conf, 'api', 'host_ip'),
                          self.value(conf, 'api', 'port')))
        self.assertEqual(
            'mysql+pymysql://root:secret@127.0.0.1/accel_backend?charset=utf8',
            self.value(conf, 'database', 'connection'))
        self.assertEqual('accelerator',
                         self.value(conf, 'keystone_authtoken', 'username'))
        for section in ('placement', 'nova'):
            self.assertEqual({
                'auth_type': 'password',
                'auth_url': 'http://192.0.2.10/identity',
                'username': 'accelerator', 'password': 'secretpw',
                'project_name': 'service', 'user_domain_name': 'Default',
                'project_domain_name': 'Default',
                'region_name': 'RegionOne'}, dict(conf[section]), section)
        # One device_spec line per spec (MultiStrOpt), JSON intact.
        specs = [json.loads(v) for k, v in conf['discovery']
                 if k == 'device_spec']
        self.assertEqual([T4, FPGA], specs)

    def test_no_device_specs_no_device_spec_lines(self):
        self.devstack('stack post-config')
        conf = self.ini(os.path.join(self.conf_dir, 'accel-backend.conf'))
        self.assertEqual(['enabled_drivers'],
                         [k for k, _ in conf['discovery']])

    def test_post_config_points_nova_at_the_backend(self):
        calls = self.devstack('stack post-config',
                              'stack extra',
                              NOVA_ACCEL_ARQ_BINDING_TIMEOUT='120')
        # devstack's start_nova_compute then copies nova.conf over
        # nova-cpu.conf: what nova-compute reads must survive it.
        self.run_bash('devstack_start_nova_compute_conf')
        cpu = self.ini(self.nova_cpu_conf)
        self.assertEqual('accel.LibvirtDriver',
                         self.value(cpu, 'DEFAULT', 'compute_driver'))
        self.assertEqual('120', self.value(cpu, 'DEFAULT',
                                           'arq_binding_timeout'))
        self.assertEqual('False', self.value(cpu, 'nova_accel',
                                             'replace_failed'))
        for conf in (self.ini(self.nova_conf), cpu):
            self.assertEqual('accelerator',
                             self.value(conf, 'cyborg', 'service_type'))
            self.assertEqual('RegionOne',
                             self.value(conf, 'cyborg', 'region_name'))
            # Binding ARQs needs Nova's service token.
            self.assertEqual('True', self.value(
                conf, 'service_user', 'send_service_user_token'))
            self.assertEqual('nova', self.value(conf, 'service_user',
                                                'username'))
            self.assertEqual('password', self.value(conf, 'service_user',
                                                    'auth_type'))
        self.assertIn('create_service_user accelerator admin', calls)
        self.assertIn('get_or_add_user_project_role service accelerator '
                      'service', calls)
        self.assertIn('get_or_create_service accelerator accelerator '
                      'Accelerator service (nova-accel)', calls)
        self.assertIn('get_or_create_endpoint accelerator RegionOne '
                      'http://192.0.2.10:6666/v2', calls)

    def test_the_scheduler_gets_the_numa_fit_filter(self):
        for before, want in (
                ((), 'ComputeFilter,ComputeCapabilitiesFilter,'
                     'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
                     'ServerGroupAffinityFilter,AcceleratorNumaFitFilter'),
                # lib/nova wrote $NOVA_FILTERS before post-config.
                (('iniset "$NOVA_CONF" filter_scheduler enabled_filters '
                  'ComputeFilter,SameHostFilter',),
                 'ComputeFilter,SameHostFilter,AcceleratorNumaFitFilter')):
            if os.path.exists(self.nova_conf):
                os.remove(self.nova_conf)
            # Twice: a second stack adds nothing.
            self.devstack('stack post-config', 'stack post-config',
                          before=before)
            conf = self.ini(self.nova_conf)
            self.assertEqual(want, self.value(conf, 'filter_scheduler',
                                              'enabled_filters'))
            self.assertEqual(
                ['nova_accel.scheduler.filters.all_filters'],
                [v for k, v in conf['filter_scheduler']
                 if k == 'available_filters'])

    def test_compute_driver_can_be_the_fake_one(self):
        # A devstack without KVM (VIRT_DRIVER=fake): Nova's fake driver
        # with accelerators, in what nova-compute reads.
        self.devstack('stack post-config', 'stack extra',
                      NOVA_ACCEL_COMPUTE_DRIVER='accel.FakeDriver')
        self.run_bash('devstack_start_nova_compute_conf')
        for conf in (self.nova_conf, self.nova_cpu_conf):
            self.assertEqual('accel.FakeDriver', self.value(
                self.ini(conf), 'DEFAULT', 'compute_driver'))

    def test_fake_virt_driver_serves_the_fake_compute_host(self):
        # devstack's fake computes are ${HOSTNAME}1..N (lib/nova,
        # start_nova_compute): the devices go under the provider of the
        # first, not under one named after the node.
        self.devstack('stack post-config', VIRT_DRIVER='fake',
                      HOSTNAME='node7')
        conf = self.ini(os.path.join(self.conf_dir, 'accel-backend.conf'))
        self.assertEqual('node71', self.value(conf, 'DEFAULT', 'host'))
        self.devstack('stack post-config', VIRT_DRIVER='fake',
                      HOSTNAME='node7', ACCEL_BACKEND_HOST='node72')
        conf = self.ini(os.path.join(self.conf_dir, 'accel-backend.conf'))
        self.assertEqual('node72', self.value(conf, 'DEFAULT', 'host'))

    def test_default_discovery_offers_the_fake_fpgas(self):
        # What the tempest scenarios ask for by default (FPGA).
        self.devstack('stack post-config')
        conf = self.ini(os.path.join(self.conf_dir, 'accel-backend.conf'))
        self.assertEqual('generic_pci,fake',
                         self.value(conf, 'discovery', 'enabled_drivers'))
        self.assertEqual('inline', self.value(conf, 'binding', 'mode'))
        self.assertIsNone(self.value(conf, 'DEFAULT', 'transport_url'))

    def test_compute_node_runs_the_agent(self):
        calls = self.devstack(
            'stack post-config', 'stack extra',
            ENABLED_SERVICES='n-cpu,placement-client,accel-agent',
            DISABLED_SERVICES='accel-api',
            ACCEL_BACKEND_BINDING_MODE='agents')
        conf_path = os.path.join(self.conf_dir, 'accel-backend.conf')
        conf = self.ini(conf_path)
        self.assertEqual('agents', self.value(conf, 'binding', 'mode'))
        self.assertEqual('rabbit://stackrabbit:secret@192.0.2.10:5672/',
                         self.value(conf, 'DEFAULT', 'transport_url'))
        # No database credentials on a compute node.
        self.assertIsNone(self.value(conf, 'database', 'connection'))
        # As root (etc/systemd/accel-backend-agent.service): it writes
        # the devices' sysfs reset when it cleans them.
        unit = self.unit('accel-agent')
        self.assertEqual('root', unit['User'])
        self.assertEqual('%s --config-file %s' % (
            os.path.join(self.tmp, 'bin', 'accel-backend-agent'),
            conf_path), unit['ExecStart'])
        self.assertIsNone(self.unit('accel-api'))
        # The API node owns the accounts, the catalog and the schema.
        self.assertFalse([c for c in calls if c.startswith((
            'create_service_user', 'get_or_create_endpoint',
            'recreate_database', 'accel-backend-manage'))])
        # No cell conductor here: no nova_cellN.conf either.
        self.assertFalse(os.path.exists(
            os.path.join(self.tmp, 'nova_cell1.conf')))
        self.run_bash('devstack_start_nova_compute_conf')
        self.assertEqual('accel.LibvirtDriver', self.value(
            self.ini(self.nova_cpu_conf), 'DEFAULT', 'compute_driver'))

    def test_nothing_when_no_service_is_enabled(self):
        calls = self.devstack('stack install', 'stack post-config',
                              ENABLED_SERVICES='key,n-api',
                              DISABLED_SERVICES='accel-api')
        self.assertFalse([c for c in calls if not c.startswith((
            'define_plugin', 'enable_service'))])
        self.assertFalse(os.path.exists(self.conf_dir))

    def test_test_config_writes_tempest_conf(self):
        group = json.dumps({'resources:PGPU': '1',
                            'trait:CUSTOM_NVIDIA_T4': 'required'})
        self.devstack('stack test-config', NOVA_ACCEL_TEMPEST_GROUP=group,
                      NOVA_ACCEL_TEMPEST_RESOURCE_CLASS='PGPU')
        tempest = self.ini(self.tempest_conf)
        self.assertEqual('True', self.value(tempest, 'service_available',
                                            'accelerator'))
        self.assertEqual('True', self.value(tempest, 'service_available',
                                            'cyborg'))
        self.assertEqual(group, self.value(tempest, 'accelerator',
                                           'device_profile_group'))
        self.assertEqual('PGPU', self.value(tempest, 'accelerator',
                                            'resource_class'))
        self.assertEqual('True', self.value(tempest, 'cyborg_policy',
                                            'enforce_new_defaults'))

    def test_install_extra_unstack_clean(self):
        self.devstack('stack post-config')
        calls = self.devstack('stack install', 'stack extra', 'unstack',
                              'clean')
        conf = os.path.join(self.conf_dir, 'accel-backend.conf')
        self.assertIn('setup_package %s' % REPO, calls)
        # The shim step ran for real with $PYTHON (idempotent): Nova of
        # that Python now loads compute_driver = accel.LibvirtDriver.
        from nova_accel import driver_shim
        self.assertEqual('installed', driver_shim.status())
        self.assertIn('recreate_database accel_backend', calls)
        self.assertIn('accel-backend-manage --config-file %s db sync' % conf,
                      calls)
        self.assertEqual('%s --config-file %s' % (
            os.path.join(self.tmp, 'bin', 'accel-backend'), conf),
            self.unit('accel-api')['ExecStart'])
        self.assertIn('systemctl start devstack@accel-api.service', calls)
        self.assertIn('systemctl stop devstack@accel-api.service', calls)
        # clean removes the config and state directories.
        self.assertFalse(os.path.exists(self.conf_dir))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'data',
                                                     'accel-backend')))

    def test_ipv6_service_host(self):
        # SERVICE_IP_VERSION=6: stackrc brackets $SERVICE_HOST for URLs.
        self.devstack('stack post-config', SERVICE_HOST='[fd00::1]')
        path = os.path.join(self.conf_dir, 'accel-backend.conf')
        self.assertEqual('fd00::1',
                         self.value(self.ini(path), 'api', 'host_ip'))
        # What accel-backend reads of it (oslo.config HostAddressOpt).
        from accel_backend import conf as accel_conf
        self.assertEqual('fd00::1', accel_conf.new_conf(
            config_files=[path]).api.host_ip)
        # The endpoint is a URL: brackets kept.
        self.assertIn('get_or_create_endpoint accelerator RegionOne '
                      'http://[fd00::1]:6666/v2', self.recorded())

    def test_cell_conductors_send_the_service_token(self):
        # configure_nova (before the install phase) wrote the conductors'
        # nova_cellN.conf; they run with it alone and bind the ARQs of a
        # rescheduled server.
        cells = [os.path.join(self.tmp, 'nova_cell%d.conf' % i)
                 for i in (1, 2)]
        for i, path in enumerate(cells, 1):
            ini_tool.write(path, {'database': [(
                'connection', 'mysql+pymysql://root@127.0.0.1/nova_cell%d'
                % i)]})
        self.devstack('stack post-config', NOVA_NUM_CELLS='2')
        for i, path in enumerate(cells, 1):
            conf = self.ini(path)
            self.assertEqual('True', self.value(
                conf, 'service_user', 'send_service_user_token'), path)
            self.assertEqual(('password', 'nova', 'secretpw'), tuple(
                self.value(conf, 'service_user', key)
                for key in ('auth_type', 'username', 'password')))
            self.assertEqual(('accelerator', 'RegionOne'), (
                self.value(conf, 'cyborg', 'service_type'),
                self.value(conf, 'cyborg', 'region_name')))
            self.assertEqual(
                'mysql+pymysql://root@127.0.0.1/nova_cell%d' % i,
                self.value(conf, 'database', 'connection'))

    @staticmethod
    def tempest_installs(calls):
        """What lib/tempest pip installed into tempest's venv (the
        arguments after ``-c <constraints>``), one str per install."""
        prefix = 'tox -evenv-tempest -- pip install -c '
        return [c[len(prefix):].split(' ', 1)[1] for c in calls
                if c.startswith(prefix)]

    def test_tempest_plugin_goes_into_tempests_venv(self):
        calls = self.devstack('stack test-config',
                              after=['install_tempest_plugins'])
        self.assertEqual([REPO], self.tempest_installs(calls))

    def test_tempest_plugins_of_local_conf_are_kept(self):
        cyborg = os.path.join(self.tmp, 'opt', 'cyborg-tempest-plugin')
        self.devstack(TEMPEST_PLUGINS=cyborg)
        self.assertEqual('%s %s' % (cyborg, REPO),
                         self.vars['TEMPEST_PLUGINS'])
        # Listed already (as Zuul's tempest_plugins writes it): once.
        self.devstack(TEMPEST_PLUGINS='%s %s' % (REPO, cyborg))
        self.assertEqual('%s %s' % (REPO, cyborg),
                         self.vars['TEMPEST_PLUGINS'])

    def test_tempest_plugin_can_be_left_out(self):
        calls = self.devstack('stack test-config',
                              after=['install_tempest_plugins'],
                              NOVA_ACCEL_INSTALL_TEMPEST_PLUGIN='False')
        self.assertEqual('0', self.vars['TEMPEST_PLUGINS'])
        self.assertEqual([], self.tempest_installs(calls))

    def test_subnode_keeps_the_controllers_database(self):
        # A compute node that left accel-api enabled (no database
        # service here: its connection URL is the controller's).
        calls = self.devstack('stack post-config', 'stack extra',
                              ENABLED_SERVICES='n-cpu,placement-client')
        self.assertFalse([c for c in calls if c.startswith((
            'recreate_database', 'accel-backend-manage'))])

    def test_accel_api_runs_as_root(self):
        # The embedded service cleans (sysfs reset) and creates mdevs.
        self.devstack('stack post-config', 'stack extra')
        self.assertEqual('root', self.unit('accel-api')['User'])
        user = self.env['STACK_USER']
        self.devstack('stack extra', ACCEL_BACKEND_USER=user)
        self.assertEqual(user, self.unit('accel-api')['User'])

    def localrc(self, sample):
        """The bash lines of the ``[[local|localrc]]`` section of
        ``devstack/<sample>``, to run before the source phase."""
        with open(os.path.join(REPO, 'devstack', sample)) as f:
            text = f.read()
        section = text.split('[[local|localrc]]\n', 1)[1].split('\n[[')[0]
        return section.splitlines()

    def test_aio_sample(self):
        calls = self.devstack('stack post-config', 'stack extra',
                              before=self.localrc('local.conf.aio.sample'))
        self.assertIn('accel-api', self.vars['ENABLED_SERVICES'].split(','))
        self.assertEqual(REPO, self.vars['TEMPEST_PLUGINS'])
        self.assertEqual('root', self.unit('accel-api')['User'])
        self.assertIn('recreate_database accel_backend', calls)

    def test_multinode_samples(self):
        self.devstack('stack post-config', 'stack extra',
                      before=self.localrc('local.conf.controller.sample'))
        conf = os.path.join(self.conf_dir, 'accel-backend.conf')
        self.assertEqual('agents',
                         self.value(self.ini(conf), 'binding', 'mode'))
        self.assertIsNotNone(self.unit('accel-api'))
        shutil.rmtree(self.systemd_dir)
        os.remove(self.calls)
        calls = self.devstack(
            'stack post-config', 'stack extra',
            before=self.localrc('local.conf.subnode.sample'))
        self.assertEqual('n-cpu,placement-client,ovn-controller,'
                         'ovs-vswitchd,ovsdb-server,q-ovn-metadata-agent,'
                         'accel-agent', self.vars['ENABLED_SERVICES'])
        self.assertIsNone(self.value(self.ini(conf), 'database',
                                     'connection'))
        self.assertEqual('agents',
                         self.value(self.ini(conf), 'binding', 'mode'))
        self.assertEqual('root', self.unit('accel-agent')['User'])
        self.assertIsNone(self.unit('accel-api'))
        self.assertFalse([c for c in calls if c.startswith((
            'recreate_database', 'accel-backend-manage'))])
