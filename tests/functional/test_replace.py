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

"""A device replaced under a running server, on its host
(``nova_accel.hotplug.replace``, RPC ``replace_accelerator``): Nova 34's
harness (API, conductor, scheduler, compute with the bundle's libvirt
driver on fake libvirt, real Placement) and accel_backend in-process.
The operator taints the server's GPU ``NoExecute`` through the API
(microversion 2.5); the compute hot-unplugs it, moves the allocation,
rebinds the same ARQ to the other GPU and hot-plugs that; the failed
GPU's attach handle is quarantined until the taint goes."""

import io
import json

import fixtures
from nova import objects as nova_objects

from accel_backend.objects import device as device_obj
from nova_accel.cmd import hotplug as cmd
from nova_accel.hotplug import exception as hp_exc
from nova_accel.hotplug import failed_devices
from nova_accel.hotplug import replace
from tests.functional import base
from tests.functional.base import hostdev_addresses
from tests.functional import test_hotplug

TAINTS = '/v2/deployables/%s/taints'


class ReplaceTestBase(test_hotplug.HotplugTestBase):

    def setUp(self):
        super().setUp()
        self.flavor = self.accel_flavor('gpu')

    def deployable_of(self, rp):
        deps = self.accel_v25('GET', '/v2/deployables')['deployables']
        return next(d['uuid'] for d in deps if d['rp_uuid'] == rp)

    def taint(self, rp, effect='NoExecute'):
        return self.accel_v25('POST', TAINTS % self.deployable_of(rp), {
            'key': 'failed', 'effect': effect, 'reason': 'GPU fell off'},
            expect=(201,))

    def handle_states(self, rp):
        with self.accel.db.transaction() as session:
            return sorted(h.state for d in device_obj.list_(session)
                          for dep in d.deployables if dep.rp_uuid == rp
                          for h in dep.attach_handles)

    def boot(self):
        """A server with one GPU: ``(server, its GPU's address, the other
        GPU's address, its Bound ARQ)``."""
        server = self._create_server(flavor_id=self.flavor, networks='none')
        (address,) = hostdev_addresses(self.guest_xml(server['id']))
        (other,) = [a for a in self.rps if a != address]
        arq = self.assert_one_bound_arq(server['id'], self.rps[address])
        return server, address, other, arq

    def replace(self, server, arq_uuid):
        return self.hotplug.replace(self.ctxt, server['id'], arq_uuid,
                                    timeout=60)

    def events(self, server):
        actions = self.api_fixture.admin_api.get_instance_actions(
            server['id'])
        (action,) = [a for a in actions
                     if a['action'] == replace.ACTION]
        detail = self.api_fixture.admin_api.api_get(
            '/servers/%s/os-instance-actions/%s' % (
                server['id'], action['request_id'])).body['instanceAction']
        return [(e['event'], e['result']) for e in detail['events']]


class ReplaceTest(ReplaceTestBase):

    def test_replace_a_failed_gpu_under_a_running_server(self):
        server, address, other, arq = self.boot()
        old = self.rps[address]
        self.taint(old)

        result = self.replace(server, arq['uuid'])

        new = self.rps[other]
        self.assertEqual((old, new), (result['old'], result['new']))
        # The guest has the other GPU, the same ARQ is Bound to it, the
        # allocation moved, and the failed GPU's handle is quarantined.
        self.assertEqual([other], hostdev_addresses(
            self.guest_xml(server['id'])))
        self.assertEqual(arq['uuid'], self.assert_one_bound_arq(
            server['id'], new)['uuid'])
        allocs = self.allocations(server['id'])
        self.assertEqual({'PGPU': 1}, allocs[new])
        self.assertNotIn(old, allocs)
        self.assertEqual(['quarantined'], self.handle_states(old))
        self.assertEqual([(replace.EVENT, 'Success')], self.events(server))
        self.assertEqual('ACTIVE', self.api.get_server(server['id'])['status'])
        # What Nova rebuilds the guest from finds the new GPU.
        self._reboot_server(server, hard=True)
        self.assertEqual([other], hostdev_addresses(
            self.guest_xml(server['id'])))
        # The taint goes: the failed GPU is cleaned, then offered again.
        (taint,) = self.accel_v25('GET', TAINTS % self.deployable_of(old))[
            'taints']
        path = TAINTS % self.deployable_of(old) + '/' + taint['uuid']
        self.accel_v25('DELETE', path, expect=(204,))
        self.assertNotEqual(['quarantined'], self.handle_states(old))
        self.accel.cleaner.clean_pending()
        self.assertEqual(['available'], self.handle_states(old))

    def test_no_free_device_leaves_the_server_as_it_is(self):
        server, address, other, arq = self.boot()
        old = self.rps[address]
        # The other GPU is drained: nothing can take the failed one's
        # place.
        self.taint(self.rps[other], effect='NoSchedule')
        self.taint(old)

        err = self.assertRaises(hp_exc.HotplugError, self.replace, server,
                                arq['uuid'])
        self.assertIn('No device can replace %s' % old, str(err))
        self.assertEqual([address], hostdev_addresses(
            self.guest_xml(server['id'])))
        self.assert_one_bound_arq(server['id'], old)
        self.assertEqual({'PGPU': 1}, self.allocations(server['id'])[old])
        self.assertEqual(['bound'], self.handle_states(old))
        self.assertEqual([(replace.EVENT, 'Error')], self.events(server))
        self.assertEqual('ACTIVE', self.api.get_server(server['id'])['status'])
        # The instance fault says why (Nova's API shows faults of ERROR
        # servers only; the fault is stored all the same).
        fault = nova_objects.InstanceFault.get_latest_for_instance(
            self.ctxt, server['id'])
        self.assertIn('No device can replace %s' % old, fault.message)

    def test_command(self):
        """``nova-accel replace-accelerator``, once options are parsed."""
        server = self._create_server(flavor_id=self.flavor, networks='none')
        plain = self.boot_plain()
        arq = self.arqs_of(server['id'])[0]
        # Another server's ARQ: refused, exit status 1 and the reason.
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(1, cmd.run('replace-accelerator', plain['id'],
                                    arq['uuid'], out=out, err=err))
        self.assertIn('not a Bound ARQ of the instance', err.getvalue())
        # Its own: the summary as JSON.
        self.assertEqual(0, cmd.run('replace-accelerator', server['id'],
                                    arq['uuid'], timeout=60, out=out,
                                    err=err))
        result = json.loads(out.getvalue())
        self.assertEqual((arq['uuid'], arq['device_rp_uuid']),
                         (result['arq'], result['old']))
        self.assert_one_bound_arq(server['id'], result['new'])


class FailedDeviceWatchTest(ReplaceTestBase):
    """``[nova_accel] replace_failed``: the compute's watch finds the
    NoExecute-tainted device of its guest and replaces it (``look`` is
    what the watch thread runs every ``replace_failed_interval``)."""

    def watch(self):
        manager = replace.ReplaceManager(
            self.computes[self.COMPUTE].driver, self.COMPUTE)
        return failed_devices.FailedDeviceWatch(manager, self.COMPUTE, 1)

    def test_the_compute_driver_runs_the_watch_when_asked(self):
        driver = self.computes[self.COMPUTE].driver
        self.assertIsNone(driver._accel_failed_watch)
        # The compute's driver again, as nova-compute starts it.
        driver.cleanup_host(self.COMPUTE)
        self.flags(replace_failed=True, replace_failed_interval=30,
                   group='nova_accel')
        driver.init_host(self.COMPUTE)
        watch = driver._accel_failed_watch
        self.assertEqual(30, watch.interval)
        self.assertTrue(watch._thread.is_alive())
        driver.cleanup_host(self.COMPUTE)
        self.assertIsNone(driver._accel_failed_watch)
        self.assertFalse(watch._thread.is_alive())

    def test_a_tainted_device_is_replaced_at_the_next_look(self):
        server, address, other, _ = self.boot()
        old = self.rps[address]
        watch = self.watch()
        self.assertEqual([], watch.look())
        self.taint(old)

        ((instance, arq_uuid, result),) = watch.look()

        self.assertEqual((server['id'], old, self.rps[other]),
                         (instance, result['old'], result['new']))
        self.assertEqual([other], hostdev_addresses(
            self.guest_xml(server['id'])))
        self.assertEqual(['quarantined'], self.handle_states(old))
        # Nothing more to do at the next look.
        self.assertEqual([], watch.look())

    def test_no_free_device_is_tried_again_later_not_every_look(self):
        server, address, other, _ = self.boot()
        self.taint(self.rps[other], effect='NoSchedule')
        self.taint(self.rps[address])
        watch = self.watch()
        ((_, _, err),) = watch.look()
        self.assertIsInstance(err, hp_exc.NoReplacementDevice)
        for _ in range(failed_devices.RETRY_LOOKS - 1):
            self.assertEqual([], watch.look())
        self.assertEqual(1, len(watch.look()))
        self.assertEqual([address], hostdev_addresses(
            self.guest_xml(server['id'])))


class Crash(Exception):
    """nova-compute stopping in the middle of a replacement."""


class ResumeTest(ReplaceTestBase):
    """A replacement interrupted after each of its steps (the plan in the
    instance's ``system_metadata`` says which was begun) is finished by
    the next ask, the watch's look here: one device in the guest, the
    allocation and the ARQ on the new one, the failed one quarantined,
    no plan left."""

    def crash_after(self, step):
        """Raise ``Crash`` once, when the plan is about to say ``step``
        (its predecessor's action is done, not yet recorded)."""
        real = replace.ReplaceManager._step
        crashed = []

        def step_or_crash(manager, instance, arq_uuid, plan, next_step):
            if next_step == step and not crashed:
                crashed.append(step)
                raise Crash(step)
            return real(manager, instance, arq_uuid, plan, next_step)
        self.useFixture(fixtures.MockPatchObject(
            replace.ReplaceManager, '_step', step_or_crash))

    def crash_after_the_plug(self):
        """Raise ``Crash`` once, after the new device is plugged, before
        the plan is forgotten."""
        real = replace.state.move
        crashed = []

        def move_or_crash(instance, arq_uuid, rp_uuid):
            if not crashed:
                crashed.append(rp_uuid)
                raise Crash('plugged')
            return real(instance, arq_uuid, rp_uuid)
        self.useFixture(fixtures.MockPatchObject(replace.state, 'move',
                                                 move_or_crash))

    def check_resumed(self, step):
        server, address, other, arq = self.boot()
        old = self.rps[address]
        self.taint(old)
        if step is None:
            self.crash_after_the_plug()
        else:
            self.crash_after(step)
        self.assertRaises(hp_exc.HotplugError, self.replace, server,
                          arq['uuid'])
        manager = replace.ReplaceManager(
            self.computes[self.COMPUTE].driver, self.COMPUTE)
        instance = nova_objects.Instance.get_by_uuid(
            self.ctxt, server['id'], expected_attrs=['system_metadata'])
        self.assertEqual([arq['uuid']], list(replace.plans(instance)))

        ((_, _, result),) = failed_devices.FailedDeviceWatch(
            manager, self.COMPUTE, 1).look()

        new = self.rps[other]
        self.assertEqual((old, new), (result['old'], result['new']))
        self.assertEqual([other], hostdev_addresses(
            self.guest_xml(server['id'])))
        self.assert_one_bound_arq(server['id'], new)
        allocs = self.allocations(server['id'])
        self.assertEqual(({'PGPU': 1}, False),
                         (allocs[new], old in allocs))
        self.assertEqual(['quarantined'], self.handle_states(old))
        instance.refresh()
        self.assertEqual({}, replace.plans(instance))

    def test_after_the_unplug(self):
        self.check_resumed(replace.MOVE)

    def test_after_the_allocation_moved(self):
        self.check_resumed(replace.REBIND)

    def test_after_the_rebind(self):
        self.check_resumed(replace.PLUG)

    def test_after_the_plug(self):
        # The new device is in the guest already: not plugged twice.
        self.check_resumed(None)


class PoolReplaceTest(ReplaceTestBase):
    """The two GPUs as one pool (``"pool": true``): a failed member is
    replaced by another of the same pool; the allocation stays."""

    DEVICE_SPECS = [dict(base.T4_SPEC, pool=True)]

    def test_replace_within_the_pool(self):
        server = self._create_server(flavor_id=self.flavor, networks='none')
        (address,) = hostdev_addresses(self.guest_xml(server['id']))
        (pool,) = set(self.rps.values())
        arq = self.assert_one_bound_arq(server['id'], pool)
        self.accel_v25('POST', TAINTS % self.deployable_of(pool), {
            'key': 'failed', 'effect': 'NoExecute', 'function': address},
            expect=(201,))
        before = self.allocations(server['id'])

        result = self.replace(server, arq['uuid'])

        self.assertEqual((pool, pool), (result['old'], result['new']))
        (now,) = hostdev_addresses(self.guest_xml(server['id']))
        self.assertNotEqual(address, now)
        self.assertEqual(arq['uuid'], self.assert_one_bound_arq(
            server['id'], pool)['uuid'])
        self.assertEqual(before, self.allocations(server['id']))
        self.assertEqual(['bound', 'quarantined'], self.handle_states(pool))
