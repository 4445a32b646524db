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

"""``tests.aio.test_devstack`` with devstack's own functions."""

import os

from tests.aio import test_devstack

DIR_ENV = 'NOVA_ACCEL_DEVSTACK_DIR'


class TestDevstackPluginInDevstack(test_devstack.TestDevstackPlugin):
    """Every test of the plugin, in the devstack of ``$%s``.""" % DIR_ENV

    def setUp(self):
        path = os.environ.get(DIR_ENV, '')
        self.assertTrue(
            path and os.path.isfile(os.path.join(path, 'functions-common')),
            '%s=%r is not a devstack checkout (git clone '
            'https://opendev.org/openstack/devstack)' % (DIR_ENV, path))
        self.devstack_dir = os.path.abspath(path)
        super().setUp()

    def test_devstacks_own_functions_run(self):
        # Not the stand-ins of devstack_stubs.sh: the checkout's files.
        where = os.path.join(self.tmp, 'where')
        names = ('ipv6_unquote', 'iniset', 'iniadd_literal', 'inidelete',
                 'is_service_enabled', 'enable_service', 'disable_service',
                 'run_process', 'conductor_conf', 'configure_keystoneauth',
                 'configure_keystone_authtoken_middleware', 'run_phase',
                 'run_plugins', 'install_tempest_plugins')
        self.devstack(after=[
            'shopt -s extdebug',
            'declare -F %s > %s' % (' '.join(names), where)])
        with open(where) as f:
            found = {line.split()[0]: line.split()[2] for line in f}
        self.assertEqual(set(names), set(found))
        for name, path in found.items():
            self.assertTrue(path.startswith(self.devstack_dir + os.sep),
                            '%s from %s' % (name, path))
