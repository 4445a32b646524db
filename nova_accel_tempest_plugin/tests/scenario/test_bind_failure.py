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

"""A bind that fails on the compute host, through Nova, with a real guest
afterwards.

The trigger is deterministic: every device matching
``[accelerator] device_profile_group`` is held outside Placement, by ARQs
created and bound directly through the accelerator API (as Nova's
conductor binds, with a service token of ``[accelerator]
service_token_role``) to an instance Nova does not know.  Placement still
offers the devices, so Nova schedules a server onto one of them; the
binder finds its attach handle taken (reason ``no_free_handle``) and
sends the ``accelerator-request-bound`` event with status ``failed``.

What Nova 34 then does depends on when that event arrives
(``nova/compute/manager.py``, ``_build_resources`` and
``_get_bound_arq_resources``, Nova 34.0.0): while the compute manager
waits for it, the failed event aborts the build ("Failure getting
accelerator requests", not rescheduled); before that, the ``BindFailed``
ARQ reaches the driver, ``accel.LibvirtDriver`` refuses to spawn
(``ARQBindingFailed``: "Binding of accelerator requests ... failed") and
Nova reschedules, which with no alternate host ends in ERROR as well (on
the nested compute node the binder answers long before nova-compute
waits: this second path, ERROR about 5 seconds after the boot).  Either
way the server is ERROR with a fault, on no host, without a console, its
ARQs deleted and its allocation gone, and the holders keep their devices.
With ``[accelerator] metrics_url`` the binder's ``accel_bind_failures``
counter of reason ``no_free_handle`` must have grown.  Once the holders
are deleted (and the devices cleaned, where they need it) the same
devices are offered again and a real guest lists the one it gets.

Runs where compute nodes pass real PCI functions through
(``[accelerator] guest_pci_id``), like the guest scenario.
"""

import re
import urllib.request
import uuid

from oslo_serialization import jsonutils
from tempest.common import waiters
from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from nova_accel_tempest_plugin.tests.scenario import test_guest_accelerators

CONF = config.CONF

#: Nova 34's fault for each path (see the module docstring): the failed
#: event while waiting; the driver's refusal, or the rescheduled build
#: that found no other host.
FAULTS = re.compile(r'Failure getting accelerator requests|'
                    r'Exceeded maximum number of retries|'
                    r'No valid host|Binding of accelerator requests')


class BindFailureTest(test_guest_accelerators.GuestScenarioTest):
    """Devices held outside Placement: the boot onto them fails cleanly,
    and once they are released the same devices serve a real guest."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.accelerator.service_token_role:
            raise cls.skipException('[accelerator] service_token_role is '
                                    'empty: no service token to bind ARQs '
                                    'with')

    @classmethod
    def setup_credentials(cls):
        # A user with the service role: its token is the X-Service-Token
        # Nova sends (the role comes from the config, so not at import).
        cls.credentials = cls.credentials + [
            ['accel_service', CONF.accelerator.service_token_role]]
        super().setup_credentials()

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.accel_service = cls.os_admin.accelerator.AcceleratorClient(
            service_token=cls.os_accel_service.auth_provider.get_token)

    def placement_get(self, path, microversion='1.36'):
        """GET ``path`` from Placement at ``microversion``; the body."""
        _, body = self.placement.get(path, headers={
            'OpenStack-API-Version': 'placement %s' % microversion},
            extra_headers=True)
        return jsonutils.loads(body)

    def matching_devices(self):
        """``{device rp_uuid: host}`` of every device Placement offers for
        ``device_profile_group`` (host: its root provider's name, the
        compute node Nova binds ARQs with)."""
        group = self.profile_group()
        query = []
        for key, value in sorted(group.items()):
            kind, _, name = key.partition(':')
            if kind == 'resources':
                query.append('resources=%s:%s' % (name, value))
            elif kind == 'trait':
                query.append('required=%s%s' % (
                    '' if value == 'required' else '!', name))
        found = self.placement_get('/allocation_candidates?' + '&'.join(
            query))['provider_summaries']
        rc = CONF.accelerator.resource_class
        return {rp: self.placement_get('/resource_providers/%s' % s[
            'root_provider_uuid'])['name'] for rp, s in found.items()
            if rc in s['resources']}

    def hold(self, profile_name, devices):
        """Bind one ARQ of ``profile_name`` to each device of ``devices``
        (``{rp_uuid: host}``) for an instance Nova does not know; wait
        until they are Bound; returns that instance's uuid.  Deleted at
        cleanup (bound ARQs: with the service token)."""
        holder = str(uuid.uuid4())
        bindings = {}
        for rp, host in devices.items():
            arq, = self.accel_admin.create_arqs(profile_name)['arqs']
            bindings[arq['uuid']] = {'hostname': host, 'device_rp_uuid': rp,
                                     'instance_uuid': holder}
        self.addCleanup(self.release, holder)
        self.accel_service.bind_arqs(bindings)
        arqs = self.wait_for_arqs(holder, len(devices))
        self.assertEqual(sorted(devices),
                         sorted(a['device_rp_uuid'] for a in arqs))
        return holder

    def release(self, holder):
        try:
            self.accel_service.delete_arqs_of_instance(holder)
        except lib_exc.NotFound:
            pass

    def metric(self, name, **labels):
        """Sum of the samples ``name`` (Prometheus text format) with
        ``labels`` at ``[accelerator] metrics_url``: 0.0 (float) when
        there is none yet (a labelled counter appears on its first
        increment).

        :raises OSError: the endpoint cannot be read (30 s timeout).
        """
        with urllib.request.urlopen(CONF.accelerator.metrics_url,
                                    timeout=30) as resp:
            text = resp.read().decode()
        total = 0.0
        for line in text.splitlines():
            sample, _, value = line.rpartition(' ')
            if (sample == name and not labels) or sample.startswith(
                    name + '{') and all('%s="%s"' % kv in sample
                                        for kv in labels.items()):
                total += float(value)
        return total

    @decorators.attr(type='scenario')
    @decorators.idempotent_id('8a3e5d2c-7f41-4b9a-a6c1-0e5b7d9f2c13')
    def test_bind_failure_then_device_offered_again(self):
        dp = self.create_profile()
        flavor = self.create_accel_flavor(dp['name'], ram=256)
        devices = self.matching_devices()
        self.assertTrue(devices, 'Placement offers no device for %s' %
                        CONF.accelerator.device_profile_group)
        metrics = bool(CONF.accelerator.metrics_url)
        if metrics:
            failures = self.metric('accel_bind_failures_total',
                                   reason='no_free_handle')
        holder = self.hold(dp['name'], devices)
        # Held outside Placement: every device is still free there.
        for rp in devices:
            self.wait_offered(rp)

        server = self.boot(flavor, wait_until=None)
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ERROR', raise_on_error=False)
        shown = self.admin_servers.show_server(server['id'])['server']
        self.assertEqual('ERROR', shown['status'])
        fault = shown.get('fault') or {}
        self.assertRegex(fault.get('message', ''), FAULTS, fault)
        # The guest never ran: the server is on no host and has no console.
        self.assertIsNone(shown['OS-EXT-SRV-ATTR:host'])
        self.assertRaises(lib_exc.Conflict,
                          self.admin_servers.get_console_output, server['id'])
        # The failed build left nothing: no ARQ, no allocation...
        self.wait_nothing_left(server['id'])
        # ... and the binder said why (on the host that binds).
        if metrics:
            self.assertGreater(self.metric('accel_bind_failures_total',
                                           reason='no_free_handle'),
                               failures)
        # The holders were not disturbed, and Placement never counted them.
        self.assertEqual(sorted(devices), sorted(
            a['device_rp_uuid'] for a in self.wait_for_arqs(
                holder, len(devices))))
        for rp in devices:
            self.wait_offered(rp)

        self.release(holder)
        self.assertEqual([], self.arqs_of(holder))
        # Released: free at once, or once cleaned where the devices need
        # cleaning (reserved in Placement meanwhile).
        for rp in devices:
            self.wait_offered(rp)
        # The same devices serve a real guest that lists the one it got.
        again = self.boot(flavor)
        arq, = self.assert_has_accelerator(again)
        self.assertIn(arq['device_rp_uuid'], devices)
        self.guest_devices(again['id'], 1)
        self.servers_client.delete_server(again['id'])
        waiters.wait_for_server_termination(self.servers_client, again['id'])
        self.assert_nothing_left(again['id'])
