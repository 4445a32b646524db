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

"""Every instance operation on a server with an accelerator.

For a server booted with the GPU profile each test records, before and
after the operation:

- the PCI ``<hostdev>`` addresses of the guest in fake libvirt (``None``
  when no guest is defined on the compute),
- the server's ARQs as accel_backend reports them
  (``GET /v2/accelerator_requests?instance=``),
- the server's Placement allocations.

Operations Nova 34 allows with accelerators (reboot, stop/start, pause,
lock, rebuild, shelve/unshelve, delete) must keep (or, for shelve and
delete, free and re-create) the device; the ones it rejects (resize, cold
and live migration, suspend) must answer 400 and change nothing.
"""

import os

import nova.conf

from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.api import client as api_client

from tests.functional import base

CONF = nova.conf.CONF

# The message of nova.exception.ForbiddenWithAccelerators (Nova 34).
FORBIDDEN = 'Feature not supported with instances that have accelerators.'
# An image of Nova's GlanceFixture other than the one servers boot from.
OTHER_IMAGE = 'a2459075-d96c-40d5-893e-577ff92e721c'


class InstanceOpsTestBase(base.AccelServersTestBase):

    def setUp(self):
        super().setUp()
        self.rps = self.device_rps()
        self.addr_of_rp = {rp: addr for addr, rp in self.rps.items()}
        self.create_device_profile('gpu', [{'resources:PGPU': '1',
                                            'trait:CUSTOM_NVIDIA_T4':
                                                'required'}])
        self.flavor = self.accel_flavor('gpu')

    # -- observations ----------------------------------------------------

    def guest_addresses(self, server_id):
        """The guest's hostdev addresses, or None when no guest exists."""
        conn = self.computes[self.COMPUTE].driver._host.get_connection()
        flags = (fakelibvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE |
                 fakelibvirt.VIR_CONNECT_LIST_DOMAINS_INACTIVE)
        if server_id not in [d.UUIDString() for d in
                             conn.listAllDomains(flags)]:
            return None
        return base.hostdev_addresses(self.guest_xml(server_id))

    def guest_state(self, server_id):
        conn = self.computes[self.COMPUTE].driver._host.get_connection()
        return conn.lookupByUUIDString(server_id).info()[0]

    def allocations(self, server_id):
        """``{rp_uuid: resources}`` of the server in Placement."""
        allocs = self.placement.get(
            '/allocations/%s' % server_id).body['allocations']
        return {rp: a['resources'] for rp, a in allocs.items()}

    def observe(self, server_id):
        """What the guest, accel_backend and Placement say right now."""
        return {'guest': self.guest_addresses(server_id),
                'arqs': self.arqs_of(server_id),
                'allocations': self.allocations(server_id)}

    def assert_has_one_gpu(self, server_id, seen):
        """The guest (when given), the ARQ and the allocation agree on
        one GPU; returns its PCI address."""
        self.assertEqual(1, len(seen['arqs']), seen['arqs'])
        arq = seen['arqs'][0]
        self.assertEqual('Bound', arq['state'])
        self.assertEqual(server_id, arq['instance_uuid'])
        self.assertEqual(self.COMPUTE, arq['hostname'])
        self.assertEqual('PCI', arq['attach_handle_type'])
        rp = arq['device_rp_uuid']
        address = self.addr_of_rp[rp]
        info = arq['attach_handle_info']
        self.assertEqual(address, '%s:%s:%s.%s' % (
            info['domain'], info['bus'], info['device'], info['function']))
        self.assertEqual({'PGPU': 1}, seen['allocations'][rp])
        gpu_rps = [r for r, res in seen['allocations'].items()
                   if 'PGPU' in res]
        self.assertEqual([rp], gpu_rps)
        if seen['guest'] is not None:
            self.assertEqual([address], seen['guest'])
        return address

    def assert_nothing_held(self, server_id):
        self.assertEqual([], self.arqs_of(server_id))
        self.assertEqual({}, self.allocations(server_id))
        self.assertIsNone(self.guest_addresses(server_id))
        for rp in self.rps.values():
            usages = self.placement.get(
                '/resource_providers/%s/usages' % rp).body['usages']
            self.assertEqual({'PGPU': 0}, usages)

    def boot(self):
        server = self._create_server(flavor_id=self.flavor, networks='none')
        before = self.observe(server['id'])
        self.assertIsNotNone(before['guest'])
        self.assert_has_one_gpu(server['id'], before)
        return server, before

    def assert_unchanged(self, server, before):
        after = self.observe(server['id'])
        self.assertEqual(before, after)
        self.assert_has_one_gpu(server['id'], after)
        return after


class AllowedOpsTest(InstanceOpsTestBase):
    """Operations Nova allows: the server keeps its GPU."""

    def test_soft_reboot(self):
        server, before = self.boot()
        self._reboot_server(server, hard=False)
        self.assert_unchanged(server, before)

    def test_hard_reboot(self):
        server, before = self.boot()
        self._reboot_server(server, hard=True)
        # The guest XML is regenerated from the ARQs: same device.
        self.assert_unchanged(server, before)
        self.assertEqual(1, self.guest_state(server['id']))  # running

    def test_stop_start(self):
        server, before = self.boot()
        server = self._stop_server(server)
        stopped = self.assert_unchanged(server, before)
        self.assertEqual(5, self.guest_state(server['id']))  # shut off
        server = self._start_server(server)
        self.assertEqual(stopped, self.assert_unchanged(server, before))
        self.assertEqual(1, self.guest_state(server['id']))

    def test_pause_unpause(self):
        server, before = self.boot()
        self.api.post_server_action(server['id'], {'pause': {}})
        server = self._wait_for_state_change(server, 'PAUSED')
        self.assert_unchanged(server, before)
        self.assertEqual(3, self.guest_state(server['id']))  # paused
        self.api.post_server_action(server['id'], {'unpause': {}})
        server = self._wait_for_state_change(server, 'ACTIVE')
        self.assert_unchanged(server, before)

    def test_lock_unlock(self):
        server, before = self.boot()
        self.api.post_server_action(server['id'], {'lock': {}})
        self.assertTrue(self._show_server(server)['locked'])
        self.assert_unchanged(server, before)
        self.api.post_server_action(server['id'], {'unlock': {}})
        self.assertFalse(self._show_server(server)['locked'])
        self.assert_unchanged(server, before)

    def test_rebuild(self):
        server, before = self.boot()
        server = self._rebuild_server(server, OTHER_IMAGE)
        self.assertEqual(OTHER_IMAGE, server['image']['id'])
        after = self.observe(server['id'])
        # Same ARQ, still bound to the same GPU; new guest with it.
        self.assertEqual(before, after)
        self.assert_has_one_gpu(server['id'], after)

    def test_shelve_offload_unshelve(self):
        server, before = self.boot()
        old_arq = before['arqs'][0]['uuid']

        self._shelve_server(server)  # shelved_offload_time 0: offloaded

        # Offload destroys the guest, Nova deletes the ARQs and frees the
        # allocations (device RP included).
        self.assert_nothing_held(server['id'])

        server = self._unshelve_server(server)
        after = self.observe(server['id'])
        # The conductor created and bound new ARQs on the unshelve host.
        self.assert_has_one_gpu(server['id'], after)
        self.assertIsNotNone(after['guest'])
        self.assertNotEqual(old_arq, after['arqs'][0]['uuid'])
        # Offloaded before: no ARQ of the old round survives anywhere.
        every = self.accel_request('GET', '/v2/accelerator_requests')['arqs']
        self.assertEqual([after['arqs'][0]['uuid']],
                         [a['uuid'] for a in every])

    def test_delete_while_shutoff(self):
        server, before = self.boot()
        server = self._stop_server(server)
        self.assert_unchanged(server, before)
        self._delete_server(server)
        self.assert_nothing_held(server['id'])

    def test_delete_in_error_after_reset_state(self):
        # A server that holds a bound GPU but is in ERROR (os-resetState).
        server, before = self.boot()
        self.api.post_server_action(server['id'],
                                    {'os-resetState': {'state': 'error'}})
        server = self._wait_for_server_parameter(
            server, {'status': 'ERROR'}, wait_for_fault_key=False)
        self.assert_unchanged(server, before)
        self._delete_server(server)
        self.assert_nothing_held(server['id'])


class DeleteFailedBuildTest(InstanceOpsTestBase):
    """A build that failed (as in test_boot.BootFailureTest) is deletable."""

    ARQ_BINDING_TIMEOUT = 2

    def test_delete_in_error(self):
        # The GPUs vanish after they were reported: the bind fails, the
        # compute refuses to spawn and the build ends in ERROR.
        from accel_backend.conductor import host_sync
        with self.accel.db.transaction() as session:
            host_sync.sync(session, self.COMPUTE, [])
        server = self._create_server(flavor_id=self.flavor, networks='none',
                                     expected_state='ERROR')
        self.assertIn('Exhausted all hosts', server['fault']['message'])
        # Before the delete: the failed build already gave everything back.
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
        self.assertIsNone(self.guest_addresses(server['id']))

        self._delete_server(server)

        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
        self.assertEqual(
            [], self.accel_request('GET', '/v2/accelerator_requests')['arqs'])


class RejectedOpsTest(InstanceOpsTestBase):
    """Operations Nova 34 rejects for servers with accelerators."""

    def setUp(self):
        super().setUp()
        # A second compute, so a migration would have somewhere to go.
        self.start_compute(hostname='compute2')
        self.other_flavor = self._create_flavor(
            memory_mb=1024, extra_spec={'accel:device_profile': 'gpu'})

    def _assert_rejected(self, action):
        server, before = self.boot()
        ex = self.assertRaises(api_client.OpenStackApiException,
                               self.api.post_server_action, server['id'],
                               action)
        self.assertEqual(400, ex.response.status_code)
        self.assertEqual(FORBIDDEN,
                         ex.response.json()['badRequest']['message'])
        server = self._show_server(server)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(self.COMPUTE, server['OS-EXT-SRV-ATTR:host'])
        self.assertIsNone(server['OS-EXT-STS:task_state'])
        self.assert_unchanged(server, before)
        self.assertEqual([], self.api.api_get(
            '/os-migrations?instance_uuid=%s' % server['id']
        ).body['migrations'])

    def test_resize(self):
        self._assert_rejected({'resize': {'flavorRef': self.other_flavor}})

    def test_cold_migrate(self):
        self._assert_rejected({'migrate': None})

    def test_cold_migrate_to_host(self):
        self._assert_rejected({'migrate': {'host': 'compute2'}})

    def test_live_migrate(self):
        self._assert_rejected({'os-migrateLive': {'host': None,
                                                  'block_migration': 'auto'}})

    def test_suspend(self):
        self._assert_rejected({'suspend': {}})


class UnboundBehindNovasBackTest(InstanceOpsTestBase):
    """The ARQ was unbound in the accelerator service behind Nova's back
    (an operator, a device taken out): starting the guest again must not
    drop the device silently.

    Nova 34's compute manager reads the instance's ARQs before it powers
    on or hard reboots; an unbound ARQ no longer names the instance, so
    Nova refuses with ``AcceleratorRequestOpFailed`` before the driver
    runs. (Nova's harness runs RPC casts as calls, so the refusal also
    reaches the API client as a 500; a real deployment answers 202 and
    records the instance fault.)
    """

    def _unbind(self, arq_uuid):
        self.accel_request(
            'PATCH', '/v2/accelerator_requests',
            {arq_uuid: [{'path': '/hostname', 'op': 'remove'},
                        {'path': '/device_rp_uuid', 'op': 'remove'},
                        {'path': '/instance_uuid', 'op': 'remove'}]},
            expect=(202,))

    def _assert_refused(self, server, action):
        ex = self.assertRaises(api_client.OpenStackApiException,
                               self.api.post_server_action, server['id'],
                               action)
        self.assertIn('AcceleratorRequestOpFailed', ex.response.text)

    def test_start(self):
        server, before = self.boot()
        server = self._stop_server(server)
        self._unbind(before['arqs'][0]['uuid'])

        self._assert_refused(server, {'os-start': None})

        server = self._show_server(server)
        self.assertEqual('SHUTOFF', server['status'])
        self.assertIsNone(server['OS-EXT-STS:task_state'])
        self.assertEqual(5, self.guest_state(server['id']))  # still off
        self.assertEqual(before['guest'], self.guest_addresses(server['id']))

    def test_hard_reboot(self):
        server, before = self.boot()
        self._unbind(before['arqs'][0]['uuid'])

        self._assert_refused(server, {'reboot': {'type': 'HARD'}})

        # The guest was not touched: still running with its hostdev.
        self.assertEqual(1, self.guest_state(server['id']))
        self.assertEqual(before['guest'], self.guest_addresses(server['id']))


class MoreAllowedOpsTest(InstanceOpsTestBase):
    """Snapshot and rescue, which Nova 34 also allows (evacuate needs a
    second host with the same accelerators, which this harness's single
    accel_backend does not give)."""

    def test_snapshot(self):
        server, before = self.boot()
        self._snapshot_server(server, 'snap')
        server = self._wait_for_state_change(server, 'ACTIVE')
        self._wait_for_server_parameter(server,
                                        {'OS-EXT-STS:task_state': None})
        self.assert_unchanged(server, before)

    def test_rescue_unrescue(self):
        server, before = self.boot()
        # Test-harness only: libvirt's rescue writes unrescue.xml into the
        # instance directory, which the fake image backend never made.
        os.makedirs(os.path.join(CONF.instances_path, server['id']),
                    exist_ok=True)
        self._rescue_server(server)
        server = self._wait_for_state_change(server, 'RESCUE')

        rescued = self.observe(server['id'])
        # Nova 34's compute manager gives the driver no accel_info for
        # rescue: the rescue guest boots without the GPU ...
        self.assertEqual([], rescued['guest'])
        # ... which stays the server's: ARQ bound, allocation kept.
        self.assertEqual(before['arqs'], rescued['arqs'])
        self.assertEqual(before['allocations'], rescued['allocations'])

        self._unrescue_server(server)
        server = self._wait_for_state_change(server, 'ACTIVE')
        # Unrescue restores the saved guest, hostdev included.
        self.assert_unchanged(server, before)
