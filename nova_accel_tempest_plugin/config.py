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

"""Tempest options of nova-accel: ``[accelerator]`` and
``[service_available] accelerator``."""

from oslo_config import cfg

service_available_group = cfg.OptGroup(
    name='service_available', title='Available OpenStack Services')

ServiceAvailableGroup = [
    cfg.BoolOpt('accelerator', default=True,
                help='Whether an accelerator (Cyborg v2 API) service, such '
                     'as accel_backend, is expected to be available.'),
]

accelerator_group = cfg.OptGroup(
    name='accelerator', title='Accelerator service (nova-accel) options')

AcceleratorGroup = [
    cfg.StrOpt('catalog_type', default='accelerator',
               help='Catalog type of the accelerator service.'),
    cfg.StrOpt('region', default='',
               help='Region of the accelerator endpoint; empty: '
                    '[identity] region.'),
    cfg.StrOpt('endpoint_type', default='publicURL',
               choices=['public', 'admin', 'internal', 'publicURL',
                        'adminURL', 'internalURL'],
               help='Endpoint type of the accelerator service.'),
    cfg.IntOpt('build_interval', default=1,
               help='Seconds between status checks.'),
    cfg.IntOpt('build_timeout', default=300,
               help='Seconds to wait for an ARQ or server state.'),
    cfg.StrOpt('device_profile_group',
               default='{"resources:FPGA": "1", '
                       '"trait:CUSTOM_FAKE_DEVICE": "required"}',
               help='JSON object: the device profile group the scenario '
                    'tests boot servers with; the compute hosts must have '
                    'free accelerators matching it (the default matches '
                    'accel_backend\'s fake discovery driver).'),
    cfg.StrOpt('resource_class', default='FPGA',
               help='Resource class that device_profile_group asks for.'),
    cfg.IntOpt('accelerators_per_host', default=16,
               help='Accelerators of resource_class on the compute host.'),
    cfg.IntOpt('arq_binding_timeout', default=300,
               help='Nova\'s [DEFAULT] arq_binding_timeout.'),
    cfg.StrOpt('guest_pci_id', default='',
               help='The accelerator\'s PCI id as the guest prints it on '
                    'its console ("0x1234:0x11e8"). Set it where the '
                    'compute nodes pass real devices through and the '
                    'image\'s init lists the guest\'s PCI functions on the '
                    'console as "guest-pci <address> <vendor:device>" lines '
                    'between "guest: PCI functions" and "guest: done" (the '
                    'all-in-one cloud\'s nested compute node does): the '
                    'guest scenarios then require the device inside each '
                    'guest. Empty: the guest scenarios are skipped.'),
    cfg.IntOpt('guest_timeout', default=900,
               help='Seconds for a guest to list its PCI functions on its '
                    'console after the server is ACTIVE (minutes under '
                    'nested emulation).'),
    cfg.StrOpt('hotplug_command', default='',
               help='The nova-accel command line the hot-add scenario '
                    'runs, with its options ("nova-accel --config-file '
                    '/etc/nova/nova.conf"); it gets "attach-accelerator '
                    '--server <uuid> --device-profile <name>" appended. '
                    'Empty: the guest scenario does not hot-add.'),
    cfg.StrOpt('service_token_role', default='service',
               help='Role of the service token Nova sends with '
                    '"[service_user] send_service_user_token" (the '
                    'accelerator API binds, unbinds and deletes bound ARQs '
                    'only for a request whose X-Service-Token has it: '
                    'policy rule "service_token_api"). The bind failure '
                    'scenario gets a user with this role (dynamic or '
                    'pre-provisioned credentials) and sends its token as '
                    'X-Service-Token to hold a device as Nova would. '
                    'Empty: that scenario is skipped.'),
    cfg.StrOpt('metrics_url', default='',
               help='The Prometheus endpoint of the accel_backend process '
                    'that binds ARQs on the compute hosts '
                    '("http://host:port/metrics"); the bind failure '
                    'scenario then also requires its accel_bind_failures '
                    'counter of reason no_free_handle to grow. Empty: not '
                    'checked.'),
]
