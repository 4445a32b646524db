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

``devstack/plugin.sh`` is sourced by bash for each devstack phase, as
devstack does, with the devstack functions it calls replaced by the stubs
of ``devstack_stubs.sh`` (the ini functions write real files); the tests
then read the nova.conf, nova-cpu.conf and accel-backend.conf it produced
and the devstack calls it made (accounts, catalog, processes).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.aio import ini_tool

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = ['devstack/plugin.sh', 'devstack/lib/nova-accel',
           'devstack/settings']
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


class TestDevstackPlugin(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='devstack-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.calls = os.path.join(self.tmp, 'calls')
        bindir = os.path.join(self.tmp, 'bin')
        os.makedirs(bindir)
        # Programs the plugin runs (not devstack functions).
        for prog in ('accel-backend', 'accel-backend-agent',
                     'accel-backend-manage'):
            path = os.path.join(bindir, prog)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\necho "%s $*" >> %s\n' % (
                    prog, self.calls))
            os.chmod(path, 0o755)
        self.conf_dir = os.path.join(self.tmp, 'etc', 'accel-backend')
        self.nova_conf = os.path.join(self.tmp, 'nova.conf')
        self.nova_cpu_conf = os.path.join(self.tmp, 'nova-cpu.conf')
        self.tempest_conf = os.path.join(self.tmp, 'tempest.conf')
        self.env = {
            'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
            'STUB_DIR': HERE, 'STUB_CALLS': self.calls,
            'NOVA_ACCEL_REPO': REPO,
            'DEST': os.path.join(self.tmp, 'opt'),
            'DATA_DIR': os.path.join(self.tmp, 'data'),
            'SERVICE_HOST': '192.0.2.10',
            'STACK_USER': subprocess.check_output(
                ['id', '-un'], text=True).strip(),
            'NOVA_CONF': self.nova_conf,
            'NOVA_CPU_CONF': self.nova_cpu_conf,
            'TEMPEST_CONFIG': self.tempest_conf,
            'KEYSTONE_SERVICE_URI': 'http://192.0.2.10/identity',
            'SERVICE_PASSWORD': 'secretpw',
            'SERVICE_PROJECT_NAME': 'service',
            'SERVICE_DOMAIN_NAME': 'Default',
            'REGION_NAME': 'RegionOne',
            'ACCEL_BACKEND_CONF_DIR': self.conf_dir,
            'HOME': self.tmp,
            # devstack's $PYTHON: the Python with Nova and this bundle (the
            # test's own, where tox installed the shim already).
            'PYTHON': sys.executable,
            # A single-node devstack with nova-accel's API and tempest.
            'ENABLED_SERVICES': 'key,n-api,n-cpu,n-cond,n-sch,placement-api,'
                                'rabbit,mysql,tempest,accel-api',
        }

    def devstack(self, *phases, **env):
        """Run the plugin for each phase (``'stack post-config'``...) in
        one bash, as devstack does (settings first, then plugin.sh)."""
        lines = ['set -eu',
                 'source "$STUB_DIR/devstack_stubs.sh"',
                 'NOVA_ACCEL_DIR=$NOVA_ACCEL_REPO',
                 'source "$NOVA_ACCEL_DIR/devstack/settings"']
        lines += ['source "$NOVA_ACCEL_DIR/devstack/plugin.sh" %s' % phase
                  for phase in phases]
        full_env = dict(self.env, **env)
        proc = subprocess.run(['bash', '-c', '\n'.join(lines)],
                              env=full_env, capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        return self.recorded()

    def run_bash(self, *lines, **env):
        """Run ``lines`` after the stubs, in the test's environment."""
        script = ['set -eu', 'source "$STUB_DIR/devstack_stubs.sh"']
        proc = subprocess.run(['bash', '-c', '\n'.join(script + list(lines))],
                              env=dict(self.env, **env),
                              capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)

    def recorded(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as f:
            return [line.rstrip('\n') for line in f]

    def ini(self, path):
        self.assertTrue(os.path.exists(path), path)
        return ini_tool.read(path)

    @staticmethod
    def value(ini, section, key):
        values = [v for k, v in ini.get(section, []) if k == key]
        return values[-1] if values else None

    def test_settings(self):
        calls = self.devstack()
        self.assertIn('define_plugin nova-accel', calls)
        # Placement is devstack's own service, no plugin to require.
        self.assertFalse([c for c in calls
                          if c.startswith('plugin_requires')])
        self.assertIn('enable_service accel-api', calls)

    def test_post_config_writes_accel_backend_conf(self):
        specs = '%s;%s' % (json.dumps(T4), json.dumps(FPGA))
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
            ACCEL_BACKEND_BINDING_MODE='agents')
        conf_path = os.path.join(self.conf_dir, 'accel-backend.conf')
        conf = self.ini(conf_path)
        self.assertEqual('agents', self.value(conf, 'binding', 'mode'))
        self.assertEqual('rabbit://stackrabbit:secret@192.0.2.10:5672/',
                         self.value(conf, 'DEFAULT', 'transport_url'))
        # No database credentials on a compute node.
        self.assertIsNone(self.value(conf, 'database', 'connection'))
        self.assertIn('run_process accel-agent %s --config-file %s' % (
            os.path.join(self.tmp, 'bin', 'accel-backend-agent'),
            conf_path), calls)
        # The API node owns the accounts, the catalog and the schema.
        self.assertFalse([c for c in calls if c.startswith((
            'create_service_user', 'get_or_create_endpoint',
            'recreate_database', 'accel-backend-manage',
            'run_process accel-api'))])
        self.run_bash('devstack_start_nova_compute_conf')
        self.assertEqual('accel.LibvirtDriver', self.value(
            self.ini(self.nova_cpu_conf), 'DEFAULT', 'compute_driver'))

    def test_nothing_when_no_service_is_enabled(self):
        calls = self.devstack('stack install', 'stack post-config',
                              ENABLED_SERVICES='key,n-api')
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
        self.assertIn('run_process accel-api %s --config-file %s' % (
            os.path.join(self.tmp, 'bin', 'accel-backend'), conf), calls)
        self.assertIn('stop_process accel-api', calls)
        # clean removes the config and state directories.
        self.assertFalse(os.path.exists(self.conf_dir))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'data',
                                                     'accel-backend')))
