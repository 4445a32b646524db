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

"""Driver mixins: hot-plugged ARQs kept in rebuilt guests, freed on delete,
RPC server life cycle."""

import types
from unittest import mock

import fixtures
from nova.compute import task_states
from nova.compute import vm_states
from nova import exception as nova_exception
from nova.virt import fake as nova_fake
import testtools

from nova_accel.hotplug import state
from nova_accel.virt import fake
from nova_accel.virt import hotplug_mixins
from tests.unit.virt import base

NODE = 'node1'


def _arq(uuid, state_='Bound', hostname=NODE, bus='af'):
    return dict(base.PCI_ARQ, uuid=uuid, state=state_, hostname=hostname,
                attach_handle_info={'domain': '0000', 'bus': bus,
                                    'device': '00', 'function': '0'})


def _instance(task_state=None, vm_state=vm_states.ACTIVE):
    flavor = types.SimpleNamespace(vcpus=1, memory_mb=512, root_gb=1,
                                   extra_specs={})
    return types.SimpleNamespace(
        uuid='0e9a2c1b-1111-4222-8333-944455556666', name='inst',
        flavor=flavor, image_meta=None, node=NODE, system_metadata={},
        task_state=task_state, vm_state=vm_state)


class MixinTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.drv = fake.FakeDriver(nova_fake.FakeVirtAPI())
        self.client = mock.Mock()
        self.useFixture(fixtures.MockPatch(
            'nova_accel.hotplug.clients.accel_client',
            return_value=self.client))

    def test_plain_instance_never_asks_the_accelerator_service(self):
        inst = _instance()
        self.drv.spawn(None, inst, None, None, None, None, accel_info=[])
        self.drv.destroy(None, _instance(task_state=task_states.DELETING),
                         None)
        self.assertEqual([], self.client.mock_calls)

    def test_spawn_adds_hotplugged_bound_arqs_of_this_node(self):
        inst = _instance()
        state.record(inst, 'gpu', [('h1', 'rp1', {'PGPU': 1})])
        state.record(inst, 'gpu', [('h2', 'rp2', {'PGPU': 1})])
        state.record(inst, 'gpu', [('h3', 'rp3', {'PGPU': 1})])
        flavor_arq = _arq('f1', bus='3b')
        self.client.get_arqs_for_instance.return_value = [
            flavor_arq, _arq('h1', bus='d8'),
            _arq('h2', hostname='elsewhere'),   # evacuated: left out
            _arq('h3', state_='BindFailed')]    # not Bound: left out
        self.drv.spawn(None, inst, None, None, None, None,
                       accel_info=[flavor_arq])
        xmls = self.drv.guest_hostdevs[inst.uuid]
        self.assertEqual(2, len(xmls))
        self.assertIn('0x3b', xmls[0])
        self.assertIn('0xd8', xmls[1])

    def test_hard_reboot_respawn_keeps_hotplugged(self):
        inst = _instance(task_state=task_states.REBOOTING_HARD)
        state.record(inst, 'gpu', [('h1', 'rp1', {'PGPU': 1})])
        self.client.get_arqs_for_instance.return_value = [_arq('h1')]
        self.drv.reboot(None, inst, None, 'HARD', accel_info=[])
        self.assertEqual(1, len(self.drv.guest_hostdevs[inst.uuid]))

    def test_delete_frees_hotplugged_arqs(self):
        for task_state, vm_state in (
                (task_states.DELETING, vm_states.ACTIVE),
                (None, vm_states.SOFT_DELETED),
                (task_states.SHELVING_OFFLOADING, vm_states.SHELVED)):
            self.client.reset_mock()
            inst = _instance(task_state=task_state, vm_state=vm_state)
            state.record(inst, 'gpu', [('h1', 'rp1', {'PGPU': 1}),
                                       ('h2', 'rp1', None)])
            self.drv.destroy(None, inst, None)
            self.client.delete_arqs.assert_called_once_with(['h1', 'h2'])
            self.assertFalse(state.has_hotplugged(inst))

    def test_other_destroys_keep_them(self):
        for task_state in (task_states.REBOOTING_HARD,
                           task_states.REBUILDING, None):
            inst = _instance(task_state=task_state)
            state.record(inst, 'gpu', [('h1', 'rp1', {'PGPU': 1})])
            self.drv.destroy(None, inst, None)
            self.assertTrue(state.has_hotplugged(inst))
        self.client.delete_arqs.assert_not_called()

    def test_delete_failure_does_not_fail_the_delete(self):
        self.client.delete_arqs.side_effect = RuntimeError('down')
        inst = _instance(task_state=task_states.DELETING)
        state.record(inst, 'gpu', [('h1', 'rp1', {'PGPU': 1})])
        self.drv.destroy(None, inst, None)
        self.assertTrue(state.has_hotplugged(inst))

    def test_rpc_server_life_cycle(self):
        server = mock.Mock()
        with mock.patch('nova_accel.hotplug.rpc.start_server',
                        return_value=server) as start:
            self.drv.init_host('host1')
        start.assert_called_once()
        self.assertEqual('host1', start.call_args[0][0])
        self.drv.cleanup_host('host1')
        server.stop.assert_called_once_with()
        server.wait.assert_called_once_with()

    def test_no_rpc_without_nova_rpc(self):
        with mock.patch('nova.rpc.TRANSPORT', None):
            self.drv.init_host('host1')
        self.assertIsNone(self.drv._accel_hotplug_server)
        self.drv.cleanup_host('host1')


class _Base(object):
    def check_can_live_migrate_source(self, context, instance,
                                      dest_check_data,
                                      block_device_info=None):
        return 'checked'

    def migrate_disk_and_power_off(self, context, instance, dest, flavor,
                                   network_info, block_device_info=None,
                                   timeout=0, retry_interval=0):
        return 'moved'


class _Libvirt(hotplug_mixins.LibvirtHotplugMixin, _Base):
    pass


class MoveRefusedTest(testtools.TestCase):

    def test_moves_refused_only_with_hotplugged_devices(self):
        drv = _Libvirt()
        plain = _instance()
        self.assertEqual('checked', drv.check_can_live_migrate_source(
            None, plain, None))
        self.assertEqual('moved', drv.migrate_disk_and_power_off(
            None, plain, 'h2', None, None))
        inst = _instance()
        state.record(inst, 'gpu', [('h1', 'rp1', {'PGPU': 1})])
        exc = self.assertRaises(
            nova_exception.MigrationPreCheckError,
            drv.check_can_live_migrate_source, None, inst, None)
        self.assertIn('hot-plugged accelerators', str(exc))
        exc = self.assertRaises(
            nova_exception.InstanceFaultRollback,
            drv.migrate_disk_and_power_off, None, inst, 'h2', None, None)
        self.assertIsInstance(exc.inner_exception, nova_exception.ResizeError)
