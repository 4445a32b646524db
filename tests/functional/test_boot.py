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

"""End to end: boot a server with an accelerator, delete it."""


from tests.functional import base


class BootWithAcceleratorTest(base.AccelServersTestBase):

    def test_boot_and_delete(self):
        rps = self.device_rps()
        self.assertEqual(['0000:af:00.0', '0000:d8:00.0'], sorted(rps))
        self.create_device_profile('gpu', [{'resources:PGPU': '1',
                                            'trait:CUSTOM_NVIDIA_T4':
                                                'required'}])
        flavor = self.accel_flavor('gpu')

        server = self._create_server(flavor_id=flavor, networks='none')

        # The guest got exactly one of the discovered GPUs ...
        addresses = base.hostdev_addresses(self.guest_xml(server['id']))
        self.assertEqual(1, len(addresses))
        address = addresses[0]
        self.assertIn(address, rps)
        # ... the allocation is on that GPU's resource provider ...
        allocs = self.placement.get(
            '/allocations/%s' % server['id']).body['allocations']
        self.assertEqual({'PGPU': 1}, allocs[rps[address]]['resources'])
        # ... and accel_backend shows the ARQ bound to it.
        arq = self.assert_one_bound_arq(server['id'], rps[address])
        self.assertEqual('PCI', arq['attach_handle_type'])

        self._delete_server(server)

        self.assertEqual([], self.arqs_of(server['id']))
        allocs = self.placement.get(
            '/allocations/%s' % server['id']).body['allocations']
        self.assertEqual({}, allocs)
        usages = self.placement.get(
            '/resource_providers/%s/usages' % rps[address]).body['usages']
        self.assertEqual({'PGPU': 0}, usages)

        # The freed GPU serves the next servers: two of them get the two
        # GPUs, one each, and a third finds no host.
        first = self._create_server(flavor_id=flavor, networks='none')
        second = self._create_server(flavor_id=flavor, networks='none')
        got = [base.hostdev_addresses(self.guest_xml(s['id']))[0]
               for s in (first, second)]
        self.assertEqual(sorted(rps), sorted(got))
        third = self._create_server(flavor_id=flavor, networks='none',
                                    expected_state='ERROR')
        self.assertIn('No valid host', third['fault']['message'])
        self.assertEqual([], self.arqs_of(third['id']))


class BootFailureTest(base.AccelServersTestBase):
    """Failure modes: the build ends in ERROR and leaves nothing behind."""

    ARQ_BINDING_TIMEOUT = 2

    def _boot_expecting_error(self):
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])
        server = self._create_server(flavor_id=self.accel_flavor('gpu'),
                                     networks='none',
                                     expected_state='ERROR')
        return server

    def _assert_nothing_left(self, server):
        # Nova's compute sets ERROR, then removes the allocations and
        # deletes the ARQs in the same build thread: give it a moment.
        import time
        deadline = time.monotonic() + 20
        while True:
            arqs = self.arqs_of(server['id'])
            allocs = self.placement.get(
                '/allocations/%s' % server['id']).body['allocations']
            if (not arqs and not allocs) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual([], arqs)
        self.assertEqual({}, allocs)

    def test_bind_fails(self):
        rps = self.device_rps()
        # Both GPUs vanish from the host after they were reported:
        # Placement still offers them, so the scheduler picks one, but
        # accel_backend has no device left to bind the ARQ to.
        from accel_backend.conductor import host_sync
        with self.accel.db.transaction() as session:
            host_sync.sync(session, self.COMPUTE, [])

        server = self._boot_expecting_error()

        self.assertEqual(2, len(rps))
        # The compute refused to spawn with an unbound ARQ (Nova alone
        # would have booted the guest without its GPU), and with no other
        # host the build ended in ERROR.
        self.assertIn('Exhausted all hosts', server['fault']['message'])
        conn = self.computes[self.COMPUTE].driver._host.get_connection()
        self.assertEqual([], conn.listAllDomains())
        self._assert_nothing_left(server)

    def test_binding_timeout(self):
        # A device that never finishes binding (a hung host agent): the
        # ARQ stays BindStarted and no event reaches Nova.
        release = self.hang_binding()

        server = self._boot_expecting_error()
        release()

        fault = server['fault']
        self.assertIn('Failure getting accelerator requests',
                      fault['message'])
        # Nova's compute manager owns this wait (arq_binding_timeout); the
        # fault details name the timeout that aborted the build.
        self.assertIn('nova.exception.InstanceEventTimeout',
                      fault['details'])
        self.assertIn('_get_bound_arq_resources', fault['details'])
        self._assert_nothing_left(server)
