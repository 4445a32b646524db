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

"""What the clients of the all-in-one cloud read: ``clouds.yaml`` (the
``aio-admin`` and ``aio-demo`` clouds), the admin's ``openrc`` and
tempest's ``tempest.conf``.

Pure functions of a ``tools.aio.config.Layout``, like ``config``;
``tools.aio.cloud`` writes the first two into the run directory,
``tools.aio.tempest`` and ``tools.aio.conformance`` the third into their
workspaces.
"""

import json
import os

from tools.aio import config
from tools.aio import devices


def clouds_yaml(layout):
    """``clouds.yaml`` data (``aio-admin`` and ``aio-demo`` clouds)."""
    def cloud(user, project, password):
        return {'auth': {'auth_url': layout.auth_url, 'username': user,
                         'password': password, 'project_name': project,
                         'user_domain_name': config.DOMAIN,
                         'project_domain_name': config.DOMAIN},
                'region_name': config.REGION, 'identity_api_version': 3,
                'interface': 'public'}
    return {'clouds': {
        'aio-admin': cloud('admin', 'admin', layout.passwords['admin']),
        'aio-demo': cloud('demo', 'demo', layout.passwords['admin']),
    }}


def openrc(layout):
    """Shell exports for the admin (``source $run_dir/openrc``)."""
    lines = ['# nova-accel all-in-one cloud: admin credentials',
             'export OS_CLOUD=aio-admin',
             'export OS_CLIENT_CONFIG_FILE=%s' % layout.path('clouds.yaml'),
             'export PATH=%s:$PATH' % os.path.join(layout.venv, 'bin')]
    return '\n'.join(lines) + '\n'


def tempest_conf(layout, image_ref, flavor_ref, flavor_ref_alt):
    """tempest.conf for ``tempest run --regex nova_accel``."""
    group = devices.tempest_group(layout)
    ini = config.Ini()
    ini.update('DEFAULT', {'log_file': 'tempest.log', 'debug': True,
                           'use_stderr': False})
    ini.update('auth', {
        'admin_username': 'admin', 'admin_password':
            layout.passwords['admin'],
        'admin_project_name': 'admin', 'admin_domain_name': config.DOMAIN,
        'use_dynamic_credentials': True,
        'create_isolated_networks': False,
    })
    ini.update('identity', {
        'uri_v3': layout.auth_url, 'auth_version': 'v3',
        'region': config.REGION, 'v3_endpoint_type': 'publicURL',
    })
    ini.update('identity-feature-enabled', {'api_v2': False})
    ini.update('compute', {
        'image_ref': image_ref, 'image_ref_alt': image_ref,
        'flavor_ref': flavor_ref, 'flavor_ref_alt': flavor_ref_alt,
        'region': config.REGION, 'build_timeout': 180,
        'min_compute_nodes': 1,
        'min_microversion': '2.1', 'max_microversion': 'latest',
    })
    ini.update('compute-feature-enabled', {
        'resize': False, 'cold_migration': False, 'live_migration': False,
        'shelve': True, 'snapshot': False, 'console_output': False,
        'vnc_console': False, 'spice_console': False,
        'serial_console': False, 'rescue': True,
        'interface_attach': False, 'attach_encrypted_volume': False,
    })
    ini.update('validation', {'run_validation': False,
                              'connect_method': 'fixed'})
    ini.update('network-feature-enabled', {'ipv6': False})
    ini.update('service_available', {
        'nova': True, 'glance': True, 'neutron': False, 'cinder': False,
        'swift': False, 'heat': False, 'horizon': False,
        'accelerator': True,
    })
    ini.update('image', {'region': config.REGION})
    ini.update('placement', {'region': config.REGION})
    ini.update('accelerator', {
        'region': config.REGION, 'catalog_type': 'accelerator',
        'endpoint_type': 'publicURL',
        'device_profile_group': json.dumps(group),
        'resource_class': devices.resource_class(group),
        'accelerators_per_host': devices.accelerator_total(layout, group),
        'arq_binding_timeout': layout.arq_binding_timeout,
    })
    ini.set('oslo_concurrency', 'lock_path', layout.path('tempest', 'lock'))
    return ini
