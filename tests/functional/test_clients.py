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

"""Real OpenStack clients against a running ``accel-backend`` process.

Placement (gunicorn), a Nova stub and ``accel-backend`` itself run as
servers on loopback ports (``tests.functional.fixtures.servers``); the
tests drive them with:

* the ``openstack`` program (python-openstackclient 10.x), whose own
  ``openstack accelerator ...`` commands are the active ones even with
  python-cyborgclient installed (a few commands as separate processes,
  the lifecycle through the same shell entry point in one process, see
  ``tests.functional.fixtures.cli``);
* python-cyborgclient's command set, loaded into the osc shell instead of
  osc's own;
* openstacksdk's accelerator proxy, in this process.

One set of servers per test process (they take a few seconds to start);
every test uses its own device profile and instance and frees the GPU it
bound, so the tests do not depend on each other's order.
"""

import warnings

from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from openstack import connection
from openstack import exceptions as sdk_exc

from tests.functional.fixtures import cli
from tests.functional.fixtures import clients as clients_fx
from tests.functional.fixtures.clients import ClientsTestCase
from tests.functional.fixtures.clients import T4_GROUP
from tests.functional.fixtures import servers


setUpModule = clients_fx.start_servers
tearDownModule = clients_fx.stop_servers


class TestOpenStackProgram(ClientsTestCase):
    """The installed ``openstack`` program, one process per command."""

    def setUp(self):
        super().setUp()
        self.openstack = self.useFixture(cli.OpenStackProgram(
            self.accel.endpoint, self.nova.endpoint))

    def test_osc_own_commands_are_active(self):
        # osc's bind looks <server> up in Nova; cyborgclient's takes
        # <instance_uuid> <device_rp_uuid> <project_id>.
        usage = self.openstack('accelerator', 'arq', 'bind', '--help',
                               fmt=None)
        self.assertIn('<server>', usage)
        self.assertNotIn('<project_id>', usage)

    def test_lists(self):
        self.assertEqual(2, len(self.openstack(
            'accelerator', 'device', 'list')))
        self.assertIsInstance(self.openstack(
            'accelerator', 'device', 'profile', 'list'), list)
        self.assertIsInstance(self.openstack(
            'accelerator', 'arq', 'list'), list)


class TestOpenStackClientCommands(ClientsTestCase):
    """python-openstackclient's own ``openstack accelerator`` commands."""

    def setUp(self):
        super().setUp()
        self.osc = self.useFixture(cli.OpenStackShell(
            self.accel.endpoint, self.nova.endpoint, 'osc'))
        # A member of project-a (noauth, Placement's noauth2 tokens).
        self.user_osc = self.useFixture(cli.OpenStackShell(
            self.accel.endpoint, self.nova.endpoint, 'osc',
            token='alice:project-a'))

    def test_device_profile_and_arq_lifecycle(self):
        name = self.profile_name()
        instance = self.new_instance()
        gpu = self.stack.gpus['0000:af:00.0']

        dp = self.osc('accelerator', 'device', 'profile', 'create', name,
                      '--group', 'resources:PGPU=1,'
                      'trait:CUSTOM_NVIDIA_T4=required',
                      '--description', 'one T4')
        self.assertEqual((name, [T4_GROUP], 'one T4'),
                         (dp['name'], dp['groups'], dp['description']))
        listed = self.osc('accelerator', 'device', 'profile', 'list')
        self.assertIn(dp['uuid'], [p['uuid'] for p in listed])
        self.assertEqual(dp, self.osc('accelerator', 'device', 'profile',
                                      'show', dp['uuid']))
        # By name needs microversion 2.2; osc asks for the base version
        # unless told.
        self.assertEqual(dp['uuid'], self.osc(
            '--os-accelerator-api-version', '2.2', 'accelerator', 'device',
            'profile', 'show', name)['uuid'])

        arq = self.user_osc('accelerator', 'arq', 'create', name)
        self.assertEqual(('Initial', name), (arq['state'],
                                             arq['device_profile_name']))
        self.assertIn(arq['uuid'], [a['uuid'] for a in self.user_osc(
            'accelerator', 'arq', 'list')])
        # Another project does not see it.
        self.assertNotIn(arq['uuid'], [a['uuid'] for a in self.useFixture(
            cli.OpenStackShell(self.accel.endpoint, self.nova.endpoint,
                               'osc', token='bob:project-b'))(
            'accelerator', 'arq', 'list')])

        # A token without the service token may not bind, unbind or
        # delete a bound ARQ, not even an admin's (Cyborg 17, its fix of
        # CVE-2026-40214): binding is Nova's. <accelerator_request>
        # <hostname> <server> <resource_provider>
        self.assert_refused(self.osc, 'accelerator', 'arq', 'bind',
                            arq['uuid'], servers.HOST, instance,
                            gpu['rp_uuid'])
        self.assertEqual('Initial', self.user_osc(
            'accelerator', 'arq', 'show', arq['uuid'])['state'])
        self.bind_as_nova(arq['uuid'], instance, gpu['rp_uuid'])
        shown = self.user_osc('accelerator', 'arq', 'show', arq['uuid'])
        self.assertEqual(
            ('Bound', servers.HOST, gpu['rp_uuid'], instance, 'PCI',
             {'domain': '0000', 'bus': 'af', 'device': '00',
              'function': '0'}),
            (shown['state'], shown['hostname'], shown['device_rp_uuid'],
             shown['instance_uuid'], shown['attach_handle_type'],
             shown['attach_handle_info']))
        self.assert_bound_event(instance, arq['uuid'])
        for run in (self.osc, self.user_osc):
            self.assert_refused(run, 'accelerator', 'arq', 'unbind',
                                arq['uuid'])
            self.assert_refused(run, 'accelerator', 'arq', 'delete',
                                arq['uuid'])
        self.assertEqual('Bound', self.user_osc(
            'accelerator', 'arq', 'show', arq['uuid'])['state'])

        # The server is deleted: Nova deletes its ARQs with its service
        # token; the user deletes an ARQ that holds no device.
        self.accel.request('DELETE', '/v2/accelerator_requests?instance=' +
                           instance, expect=(204,), service_token=True)
        self.accel.request('GET', '/v2/accelerator_requests/' + arq['uuid'],
                           expect=(404,))
        self.assert_cli_deletes(self.user_osc, self.osc, name, dp['uuid'])

    def test_devices_and_deployables(self):
        self.assert_device_lists(self.osc)


class TestCyborgClientCommands(ClientsTestCase):
    """python-cyborgclient's ``openstack accelerator`` command set."""

    def setUp(self):
        super().setUp()
        self.cyborg = self.useFixture(cli.OpenStackShell(
            self.accel.endpoint, self.nova.endpoint, 'cyborgclient'))

    def test_cyborgclient_commands_are_loaded(self):
        usage = self.cyborg('accelerator', 'arq', 'bind', '--help',
                            fmt=None)
        self.assertIn('<instance_uuid> <device_rp_uuid> <project_id>',
                      usage)

    def test_device_profile_and_arq_lifecycle(self):
        name = self.profile_name()
        instance = self.new_instance()
        gpu = self.stack.gpus['0000:d8:00.0']

        dp = self.cyborg('accelerator', 'device', 'profile', 'create', name,
                         '[{"resources:PGPU": "1", '
                         '"trait:CUSTOM_NVIDIA_T4": "required"}]')
        self.assertEqual((name, [T4_GROUP]), (dp['name'], dp['groups']))
        self.assertIn(name, [p['name'] for p in self.cyborg(
            'accelerator', 'device', 'profile', 'list')])
        # cyborgclient asks for microversion 2.3: show by name works.
        self.assertEqual(dp['uuid'], self.cyborg(
            'accelerator', 'device', 'profile', 'show', name)['uuid'])
        self.assertEqual(name, self.cyborg(
            'accelerator', 'device', 'profile', 'show', dp['uuid'])['name'])

        arq = self.cyborg('accelerator', 'arq', 'create', name)
        self.assertEqual('Initial', arq['state'])
        self.assertIn(arq['uuid'], [a['uuid'] for a in self.cyborg(
            'accelerator', 'arq', 'list', '--long')])

        # The <project_id> argument is required and ignored by the client;
        # the admin's token alone may not bind (a service token must).
        self.assert_refused(self.cyborg, 'accelerator', 'arq', 'bind',
                            arq['uuid'], servers.HOST, instance,
                            gpu['rp_uuid'], 'ignored')
        self.bind_as_nova(arq['uuid'], instance, gpu['rp_uuid'])
        shown = self.cyborg('accelerator', 'arq', 'show', arq['uuid'])
        self.assertEqual(
            (gpu['rp_uuid'], instance, 'PCI', 'd8'),
            (shown['device_rp_uuid'], shown['instance_uuid'],
             shown['attach_handle_type'], shown['attach_handle_info']['bus']))
        self.assert_bound_event(instance, arq['uuid'])
        self.assert_refused(self.cyborg, 'accelerator', 'arq', 'unbind',
                            arq['uuid'])
        self.assert_refused(self.cyborg, 'accelerator', 'arq', 'delete',
                            arq['uuid'])
        self.accel.request('DELETE', '/v2/accelerator_requests?instance=' +
                           instance, expect=(204,), service_token=True)
        self.assert_cli_deletes(self.cyborg, self.cyborg, name, dp['uuid'])

    def test_devices_and_deployables(self):
        self.assert_device_lists(self.cyborg)


class TestOpenStackSDK(ClientsTestCase):
    """openstacksdk's accelerator proxy (``Connection.accelerator``)."""

    def setUp(self):
        super().setUp()
        conn = connection.Connection(
            auth_type='admin_token',
            auth={'endpoint': self.accel.endpoint, 'token': 'admin'})
        self.addCleanup(conn.close)
        self.acc = conn.accelerator
        # What Nova 34's client is: the SDK over a keystoneauth session
        # whose auth adds the service token.
        nova_auth = service_token.ServiceTokenAuthWrapper(
            user_auth=token_endpoint.Token(self.accel.endpoint, 'admin'),
            service_auth=token_endpoint.Token(self.accel.endpoint, 'nova'))
        nova_conn = connection.Connection(
            session=ks_session.Session(auth=nova_auth))
        self.addCleanup(nova_conn.close)
        self.nova_acc = nova_conn.accelerator

    def test_device_profile_and_arq_lifecycle(self):
        name = self.profile_name()
        instance = self.new_instance()
        gpu = self.stack.gpus['0000:af:00.0']

        dp = self.acc.create_device_profile(name=name, groups=[T4_GROUP],
                                            description='sdk')
        self.assertEqual((name, [T4_GROUP], 'sdk'),
                         (dp.name, dp.groups, dp.description))
        self.assertIn(dp.uuid, [p.uuid for p in self.acc.device_profiles()])
        self.assertEqual(name, self.acc.get_device_profile(dp.uuid).name)

        arq = self.acc.create_accelerator_request(device_profile_name=name)
        self.assertEqual(('Initial', name, 0),
                         (arq.state, arq.device_profile_name,
                          arq.device_profile_group_id))
        self.assertIn(arq.uuid,
                      [a.uuid for a in self.acc.accelerator_requests()])

        bind_ops = [
            {'op': 'add', 'path': '/hostname', 'value': servers.HOST},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': gpu['rp_uuid']},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
        # An admin token alone may not bind (Cyborg 17 since
        # CVE-2026-40214); the SDK with the service token Nova sends may.
        self.assertRaises(sdk_exc.ForbiddenException,
                          self.acc.patch_accelerator_request, arq.uuid,
                          bind_ops)
        self.nova_acc.patch_accelerator_request(arq.uuid, bind_ops)
        self.wait_for_state(arq.uuid, 'Bound')
        bound = self.acc.get_accelerator_request(arq.uuid)
        self.assertEqual((servers.HOST, gpu['rp_uuid'], instance, 'PCI'),
                         (bound.hostname, bound.device_rp_uuid,
                          bound.instance_uuid, bound.attach_handle_type))
        self.assert_bound_event(instance, arq.uuid)
        self.assertRaises(sdk_exc.ForbiddenException,
                          self.acc.delete_accelerator_request, arq.uuid)

        with warnings.catch_warnings():
            # The deprecated name python-cyborgclient still calls.
            warnings.simplefilter('ignore')
            self.nova_acc.update_accelerator_request(arq.uuid, [
                {'op': 'remove', 'path': '/hostname'},
                {'op': 'remove', 'path': '/device_rp_uuid'},
                {'op': 'remove', 'path': '/instance_uuid'}])
        self.assertEqual('Unbound',
                         self.acc.get_accelerator_request(arq.uuid).state)

        self.acc.delete_accelerator_request(arq.uuid, ignore_missing=False)
        self.assertRaises(sdk_exc.NotFoundException,
                          self.acc.get_accelerator_request, arq.uuid)
        self.acc.delete_device_profile(dp.uuid, ignore_missing=False)
        self.assertNotIn(name, [p.name for p in self.acc.device_profiles()])
        self.assertRaises(sdk_exc.NotFoundException,
                          self.acc.get_device_profile, dp.uuid)

    def test_devices_and_deployables(self):
        devices = list(self.acc.devices())
        self.assertEqual(2, len(devices))
        self.assertEqual(devices[0].uuid,
                         self.acc.get_device(devices[0].uuid).uuid)
        self.assertEqual({'CPU2 SLOT3', 'CPU2 SLOT5'}, {
            self.acc.get_device(d.uuid).std_board_info['slot']
            for d in devices})
        deployables = {d.id: d for d in self.acc.deployables()}
        self.assertEqual(
            sorted(d['uuid'] for d in self.stack.gpus.values()),
            sorted(deployables))
        gpu = self.stack.gpus['0000:d8:00.0']
        shown = self.acc.get_deployable(gpu['uuid'])
        self.assertEqual((gpu['name'], 1),
                         (shown.name, shown.num_accelerators))
