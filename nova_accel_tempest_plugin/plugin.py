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

"""The tempest plugin: ``tempest.test_plugins = nova_accel =
nova_accel_tempest_plugin.plugin:NovaAccelTempestPlugin``."""

import os

from tempest import config
from tempest.test_discover import plugins

from nova_accel_tempest_plugin import config as accel_config


class NovaAccelTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = os.path.join('nova_accel_tempest_plugin', 'tests')
        return os.path.join(base_path, test_dir), base_path

    def register_opts(self, conf):
        config.register_opt_group(conf, accel_config.service_available_group,
                                  accel_config.ServiceAvailableGroup)
        config.register_opt_group(conf, accel_config.accelerator_group,
                                  accel_config.AcceleratorGroup)

    def get_opt_lists(self):
        return [
            (accel_config.accelerator_group.name,
             accel_config.AcceleratorGroup),
            (accel_config.service_available_group.name,
             accel_config.ServiceAvailableGroup),
        ]

    def get_service_clients(self):
        params = {
            'name': 'accelerator',
            'service_version': 'accelerator',
            'module_path': 'nova_accel_tempest_plugin.services',
            'client_names': ['AcceleratorClient'],
        }
        params.update(config.service_client_config('accelerator'))
        return [params]
