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

"""Servers with an accelerator through their life, and boots that fail.

Every server is deleted at cleanup, and the cleanup checks that no ARQ and
no Placement allocation of it is left.
"""

from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from accel_common import arq_states
from nova_accel_tempest_plugin.tests import base

CONF = config.CONF


class ServerAcceleratorLifecycleTest(base.ServerAcceleratorTest):

    def setUp(self):
        super().setUp()
        self.dp = self.create_profile()
        self.flavor = self.create_accel_flavor(self.dp['name'])

    @decorators.attr(type='scenario')
    @decorators.idempotent_id('7d2f8c58-6b8e-4a2d-9b2b-5e3e9f9e3c01')
    def test_boot_reboot_rebuild_delete(self):
        server = self.boot(self.flavor)
        arqs = self.assert_has_accelerator(server)

        for reboot_type in ('SOFT', 'HARD'):
            self.servers_client.reboot_server(server['id'],
                                              type=reboot_type)
            waiters.wait_for_server_status(self.servers_client,
                                           server['id'], 'ACTIVE')
            # The same ARQs, still bound.
            self.assertEqual(sorted(a['uuid'] for a in arqs), sorted(
                a['uuid'] for a in self.assert_has_accelerator(server)))

        self.servers_client.rebuild_server(server['id'],
                                           CONF.compute.image_ref)
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        self.assert_has_accelerator(server)

        self.servers_client.delete_server(server['id'])
        waiters.wait_for_server_termination(self.servers_client,
                                            server['id'])
        self.assert_nothing_left(server['id'])

    @decorators.attr(type='scenario')
    @decorators.idempotent_id('7d2f8c58-6b8e-4a2d-9b2b-5e3e9f9e3c02')
    def test_shelve_unshelve(self):
        server = self.boot(self.flavor)
        self.assert_has_accelerator(server)

        self.servers_client.shelve_server(server['id'])
        # shelved_offload_time 0 (Nova's default): offloaded at once, which
        # frees the host's resources and the accelerator.
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'SHELVED_OFFLOADED')
        self.assertEqual(0, self.accelerator_allocation(server['id']))
        self.assertEqual([], [a for a in self.arqs_of(server['id'])
                              if a['state'] == arq_states.BOUND])

        self.servers_client.unshelve_server(server['id'])
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        server = self.admin_servers.show_server(server['id'])['server']
        self.assert_has_accelerator(server)

    @decorators.attr(type='scenario')
    @decorators.idempotent_id('7d2f8c58-6b8e-4a2d-9b2b-5e3e9f9e3c03')
    def test_resize_is_refused(self):
        server = self.boot(self.flavor)
        other = self.create_accel_flavor(self.dp['name'])
        # Nova 34 refuses to resize or migrate servers with accelerators.
        self.assertRaises(lib_exc.BadRequest,
                          self.servers_client.resize_server,
                          server['id'], other['id'])
        self.assert_has_accelerator(server)


class ServerAcceleratorFailureTest(base.ServerAcceleratorTest):

    @decorators.attr(type='scenario')
    @decorators.attr(type='negative')
    @decorators.idempotent_id('7d2f8c58-6b8e-4a2d-9b2b-5e3e9f9e3c11')
    def test_missing_device_profile_is_a_clear_fault(self):
        missing = data_utils.rand_name('nova-accel-missing').replace('.', '-')
        flavor = self.create_accel_flavor(missing)
        # nova-api looks the profile up before it creates anything.
        error = self.assertRaises(
            lib_exc.BadRequest, self.servers_client.create_server,
            name=data_utils.rand_name('nova-accel-server'),
            imageRef=CONF.compute.image_ref, flavorRef=flavor['id'],
            networks='none')
        self.assertIn(missing, str(error))
        # Nothing was created anywhere.
        self.assertEqual([], [
            a for a in self.accel_admin.list_arqs()['arqs']
            if a['device_profile_name'] == missing])
        servers = self.servers_client.list_servers()['servers']
        self.assertEqual([], servers)

    @decorators.attr(type='scenario')
    @decorators.attr(type='negative')
    @decorators.idempotent_id('7d2f8c58-6b8e-4a2d-9b2b-5e3e9f9e3c12')
    def test_no_host_has_the_device(self):
        group = dict(self.profile_group())
        group['trait:CUSTOM_NOVA_ACCEL_NOWHERE'] = 'required'
        dp = self.create_profile(groups=[group])
        flavor = self.create_accel_flavor(dp['name'])
        server = self.boot(flavor, wait_until=None)
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ERROR', raise_on_error=False)
        fault = self.admin_servers.show_server(
            server['id'])['server'].get('fault', {})
        self.assertIn('No valid host', fault.get('message', ''))
        # Scheduling failed before any ARQ was made or any resource held.
        self.assert_nothing_left(server['id'])
