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

"""Hot-add / hot-remove accelerators to a running server (nova_accel.hotplug).

Nova 34's harness (real API, conductor, scheduler, compute with the
bundle's libvirt driver on fake libvirt, real Placement) with accel_backend
in-process.  Requests go through :class:`nova_accel.hotplug.rpc.HotplugAPI`
(what the ``nova-accel`` command calls) over Nova's fake message bus, with
an anonymous admin context as the command sends; the compute then talks to
accel_backend with the ``[service_user]`` credentials.
"""

from keystoneauth1 import loading as ks_loading
import nova.conf
from nova import context as nova_context
from nova import service_auth
from nova.tests.functional.api import client

from nova_accel.hotplug import exception as hp_exc
from nova_accel.hotplug import rpc as hotplug_rpc
from tests.functional import base
from tests.functional.base import hostdev_addresses

CONF = nova.conf.CONF


class HotplugTestBase(base.AccelServersTestBase):

    def setUp(self):
        super().setUp()
        # Live detach waits for libvirt's device-removed event, which fake
        # libvirt never sends: do not wait the default 20 s for it.
        self.flags(device_detach_timeout=1, group='libvirt')
        self._service_user_credentials()
        self.hotplug = hotplug_rpc.HotplugAPI()
        self.ctxt = nova_context.get_admin_context()
        self.create_device_profile('gpu', [{'resources:PGPU': '1',
                                            'trait:CUSTOM_NVIDIA_T4':
                                                'required'}])
        self.rps = self.device_rps()
        self.plain_flavor = self._create_flavor()

    def _service_user_credentials(self):
        # accel_backend in noauth mode takes the token "admin" as an
        # administrator with the service role.
        opts = ks_loading.get_auth_plugin_conf_options('admin_token')
        # (Registering the same options again is a no-op; they stay.)
        CONF.register_opts(opts, group='service_user')
        self.flags(auth_type='admin_token', token='admin',
                   endpoint=base.ACCEL_URL + '/v2', group='service_user')
        service_auth.reset_globals()
        self.addCleanup(service_auth.reset_globals)

    # -- helpers ---------------------------------------------------------

    def allocations(self, server_id):
        """``{rp: {RC: n}}`` of a consumer (generations left out)."""
        allocs = self.placement.get(
            '/allocations/%s' % server_id).body['allocations']
        return {rp: a['resources'] for rp, a in allocs.items()}

    def usage(self, rp):
        return self.placement.get(
            '/resource_providers/%s/usages' % rp).body['usages']

    def attach(self, server, profile='gpu'):
        return self.hotplug.attach(self.ctxt, server['id'], profile,
                                   timeout=60)

    def detach(self, server, profile='gpu'):
        return self.hotplug.detach(self.ctxt, server['id'], profile,
                                   timeout=60)

    def boot_plain(self):
        return self._create_server(flavor_id=self.plain_flavor,
                                   networks='none')

    def assert_kept(self, server, address, allocs):
        """The hot-plugged accelerator is still there: the guest's hostdev
        ``address`` (a list), the allocations ``allocs``, one Bound ARQ."""
        self.assertEqual(address,
                         hostdev_addresses(self.guest_xml(server['id'])))
        self.assertEqual(allocs, self.allocations(server['id']))
        self.assertEqual(['Bound'],
                         [a['state'] for a in self.arqs_of(server['id'])])

    def assert_plain(self, server, before_allocs, before_xml=None):
        """Nothing of an accelerator is left on the server."""
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual(before_allocs, self.allocations(server['id']))
        if before_xml is not None:
            self.assertEqual(before_xml, self.guest_xml(server['id']))
        self.assertEqual([], hostdev_addresses(self.guest_xml(server['id'])))
        for rp in self.rps.values():
            self.assertEqual({'PGPU': 0}, self.usage(rp))


class HotplugTest(HotplugTestBase):

    def test_attach_reboot_detach_attach_delete(self):
        server = self.boot_plain()
        before = self.allocations(server['id'])
        self.assertEqual(1, len(before))  # the compute node only
        self.assertEqual([], hostdev_addresses(self.guest_xml(server['id'])))

        result = self.attach(server)

        # The guest now has one of the discovered GPUs ...
        addresses = hostdev_addresses(self.guest_xml(server['id']))
        self.assertEqual(1, len(addresses))
        address = addresses[0]
        rp = self.rps[address]
        self.assertEqual([rp], result['devices'])
        self.assertEqual(1, len(result['hostdevs']))
        # ... its ARQ is Bound to the instance on that GPU's provider ...
        arq = self.assert_one_bound_arq(server['id'], rp)
        self.assertEqual([arq['uuid']], result['arqs'])
        # ... and the allocation grew by PGPU:1 on the device's provider,
        # the compute node's part unchanged.
        allocs = self.allocations(server['id'])
        self.assertEqual(dict(before, **{rp: {'PGPU': 1}}), allocs)
        self.assertEqual({'PGPU': 1}, self.usage(rp))

        # Hard reboot rebuilds the domain XML: the GPU stays.
        self._reboot_server(server, hard=True)
        self.assertEqual([address],
                         hostdev_addresses(self.guest_xml(server['id'])))
        self.assertEqual('Bound', self.arqs_of(server['id'])[0]['state'])

        # Detach: hostdev, ARQ and allocation go.
        result = self.detach(server)
        self.assertEqual([arq['uuid']], result['arqs'])
        self.assert_plain(server, before)
        # A second detach has nothing to remove.
        exc = self.assertRaises(hp_exc.HotplugError, self.detach, server)
        self.assertIn('no hot-plugged accelerator', str(exc))

        # Attach again, then delete the server: the device is free again.
        self.attach(server)
        self.assertEqual(1, len(hostdev_addresses(
            self.guest_xml(server['id']))))
        self._delete_server(server)
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
        for rp in self.rps.values():
            self.assertEqual({'PGPU': 0}, self.usage(rp))

    def test_stop_start_and_rebuild_keep_it(self):
        server = self.boot_plain()
        self.attach(server)
        address = hostdev_addresses(self.guest_xml(server['id']))
        self.assertEqual(1, len(address))
        allocs = self.allocations(server['id'])

        # Power on rebuilds the domain XML (libvirt _hard_reboot) ...
        self._stop_server(server)
        self._start_server(server)
        self.assertEqual(address,
                         hostdev_addresses(self.guest_xml(server['id'])))
        # ... and so does rebuild (destroy, then spawn on this host).
        server = self._rebuild_server(server, server['image']['id'])
        self.assert_kept(server, address, allocs)
        # The hot-plugged device is still detachable after all that.
        self.detach(server)
        self.assertEqual([], hostdev_addresses(self.guest_xml(server['id'])))

    def test_cold_migration_is_refused(self):
        server = self.boot_plain()
        self.attach(server)
        self.start_compute(hostname='compute2')
        address = hostdev_addresses(self.guest_xml(server['id']))
        allocs = self.allocations(server['id'])

        try:
            self.api.post_server_action(server['id'], {'migrate': None})
        except client.OpenStackApiException:
            # This harness turns RPC casts into calls, so the source
            # compute's refusal comes back through the destination's
            # prep_resize, the API call, and sets the server to ERROR; in
            # a deployment the casts return first and Nova's rollback
            # leaves the server ACTIVE.
            pass
        self._wait_for_migration_status(server, ['error'])
        server = self.api.get_server(server['id'])
        self.assertIn('has hot-plugged accelerators',
                      server['fault']['message'])
        if server['status'] == 'ERROR':
            self.api.post_server_action(
                server['id'], {'os-resetState': {'state': 'active'}})
            server = self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual(self.COMPUTE, server['OS-EXT-SRV-ATTR:host'])
        self.assert_kept(server, address, allocs)
        # The refusal left a consistent server: the device detaches.
        self.detach(server)
        self.assertEqual([], self.arqs_of(server['id']))

    def test_shelve_offload_frees_it(self):
        server = self.boot_plain()
        self.attach(server)
        self._shelve_server(server, expected_state='SHELVED_OFFLOADED')
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
        for rp in self.rps.values():
            self.assertEqual({'PGPU': 0}, self.usage(rp))
        # Unshelved without it (nothing of the old attach is left), and a
        # new attach works.
        server = self._unshelve_server(server)
        self.assertEqual([], hostdev_addresses(self.guest_xml(server['id'])))
        self.attach(server)
        self.assertEqual(1, len(hostdev_addresses(
            self.guest_xml(server['id']))))

    def test_attach_two_then_detach_one(self):
        server = self.boot_plain()
        before = self.allocations(server['id'])
        self.attach(server)
        self.attach(server)
        self.assertEqual(sorted(self.rps), sorted(
            hostdev_addresses(self.guest_xml(server['id']))))
        allocs = self.allocations(server['id'])
        for rp in self.rps.values():
            self.assertEqual({'PGPU': 1}, allocs[rp])

        self.detach(server)
        self.assertEqual(1, len(hostdev_addresses(
            self.guest_xml(server['id']))))
        self.assertEqual(1, len(self.arqs_of(server['id'])))
        self.detach(server)
        self.assert_plain(server, before)

    def test_command(self):
        """``nova-accel``'s commands, once options are parsed."""
        import io
        import json

        from nova_accel.cmd import hotplug as cmd

        server = self.boot_plain()
        before = self.allocations(server['id'])
        out, err = io.StringIO(), io.StringIO()
        self.assertEqual(0, cmd.run('attach-accelerator', server['id'],
                                    'gpu', timeout=60, out=out, err=err))
        result = json.loads(out.getvalue())
        self.assertEqual(server['id'], result['instance_uuid'])
        self.assertEqual([a['uuid'] for a in self.arqs_of(server['id'])],
                         result['arqs'])
        self.assertEqual(1, len(hostdev_addresses(
            self.guest_xml(server['id']))))

        out = io.StringIO()
        self.assertEqual(0, cmd.run('detach-accelerator', server['id'],
                                    'gpu', out=out, err=err))
        self.assertEqual(result['arqs'], json.loads(out.getvalue())['arqs'])
        self.assert_plain(server, before)

        # Refusals: exit status 1 and the reason on stderr.
        err = io.StringIO()
        self.assertEqual(1, cmd.run('detach-accelerator', server['id'],
                                    'gpu', out=out, err=err))
        self.assertIn('has no hot-plugged accelerator', err.getvalue())
        err = io.StringIO()
        missing = '00000000-0000-0000-0000-000000000000'
        self.assertEqual(1, cmd.run('attach-accelerator', missing, 'gpu',
                                    out=out, err=err))
        self.assertIn('no such instance', err.getvalue())

    def test_not_active(self):
        server = self.boot_plain()
        self._stop_server(server)
        exc = self.assertRaises(hp_exc.HotplugError, self.attach, server)
        self.assertIn('must be active', str(exc))

    def test_unknown_profile(self):
        server = self.boot_plain()
        before = self.allocations(server['id'])
        exc = self.assertRaises(hp_exc.HotplugError, self.attach, server,
                                'nope')
        self.assertIn('nope', str(exc))
        self.assert_plain(server, before)


class HotplugFailureTest(HotplugTestBase):
    """Every failure leaves the server as it was."""

    ARQ_BINDING_TIMEOUT = 2

    def test_no_free_gpu(self):
        # Both GPUs are taken by servers that booted with them.
        accel = self.accel_flavor('gpu')
        for _ in range(2):
            self._create_server(flavor_id=accel, networks='none')
        server = self.boot_plain()
        before = self.allocations(server['id'])
        xml = self.guest_xml(server['id'])

        exc = self.assertRaises(hp_exc.HotplugError, self.attach, server)

        self.assertIn('No free accelerator for device profile gpu', str(exc))
        self.assertEqual(before, self.allocations(server['id']))
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual(xml, self.guest_xml(server['id']))

    def test_bind_fails(self):
        server = self.boot_plain()
        before = self.allocations(server['id'])
        xml = self.guest_xml(server['id'])
        # Both GPUs vanish from the host after they were reported:
        # Placement still offers them, accel_backend cannot bind.
        from accel_backend.conductor import host_sync
        with self.accel.db.transaction() as session:
            host_sync.sync(session, self.COMPUTE, [])

        exc = self.assertRaises(hp_exc.HotplugError, self.attach, server)

        self.assertIn('ARQBindingFailed', str(exc))
        self.assert_plain(server, before, before_xml=xml)

    def test_binding_timeout(self):
        server = self.boot_plain()
        before = self.allocations(server['id'])
        xml = self.guest_xml(server['id'])
        release = self.hang_binding()

        exc = self.assertRaises(hp_exc.HotplugError, self.attach, server)
        release()

        self.assertIn('ARQBindingTimeout', str(exc))
        self.assert_plain(server, before, before_xml=xml)

    def test_hotplug_into_guest_fails(self):
        server = self.boot_plain()
        before = self.allocations(server['id'])
        xml = self.guest_xml(server['id'])
        driver = self.computes[self.COMPUTE].driver

        def broken(instance, elem):
            raise RuntimeError('libvirt refused the device')

        self.useFixture(base.fixtures.MockPatchObject(
            driver, 'accel_attach_hostdev', broken))

        exc = self.assertRaises(hp_exc.HotplugError, self.attach, server)

        self.assertIn('libvirt refused the device', str(exc))
        self.assert_plain(server, before, before_xml=xml)
