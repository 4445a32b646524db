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

"""Base classes of the nova-accel tempest tests."""

import json
import time

from tempest.api.compute import base as compute_base
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc
from tempest import test

from accel_common import arq_states

CONF = config.CONF

#: States Nova treats as resolved.
RESOLVED = arq_states.RESOLVED_STATES


class AcceleratorMixin:
    """Device profile and ARQ helpers over ``cls.accel_admin``; skips the
    tests when no accelerator service is available."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.accelerator:
            raise cls.skipException('accelerator service not available')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.accel_admin = cls.accel_client(cls.os_admin)

    @classmethod
    def accel_client(cls, manager, microversion=None):
        return manager.accelerator.AcceleratorClient(
            microversion=microversion)

    @classmethod
    def profile_group(cls):
        return json.loads(CONF.accelerator.device_profile_group)

    def create_profile(self, groups=None, name=None):
        """A device profile deleted at cleanup; returns it (dict)."""
        name = name or data_utils.rand_name(
            prefix='nova-accel', name='dp').replace('.', '-')
        dp = self.accel_admin.create_device_profile(
            name, groups if groups is not None else [self.profile_group()])
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.accel_admin.delete_device_profile, dp['uuid'])
        return dp

    def arqs_of(self, instance_uuid):
        return self.accel_admin.list_arqs(instance=instance_uuid)['arqs']

    def wait_for_arqs(self, instance_uuid, count, state=arq_states.BOUND):
        """Wait until the instance has ``count`` ARQs, all in ``state``."""
        deadline = time.monotonic() + CONF.accelerator.build_timeout
        while True:
            arqs = self.arqs_of(instance_uuid)
            if len(arqs) == count and all(a['state'] == state
                                          for a in arqs):
                return arqs
            if time.monotonic() > deadline:
                raise lib_exc.TimeoutException(
                    'instance %s: ARQs %s, expected %d %s' % (
                        instance_uuid,
                        [(a['uuid'], a['state']) for a in arqs], count,
                        state))
            time.sleep(CONF.accelerator.build_interval)


class AcceleratorAPITest(AcceleratorMixin, test.BaseTestCase):
    """accel_backend's API as an administrator, a project member and a
    project reader."""

    credentials = ['primary', 'admin', 'project_reader']

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.accel_admin_22 = cls.accel_client(cls.os_admin, '2.2')
        cls.accel = cls.accel_client(cls.os_primary)
        cls.accel_reader = cls.accel_client(cls.os_project_reader)


class ServerAcceleratorTest(AcceleratorMixin,
                            compute_base.BaseV2ComputeTest):
    """Servers with ``accel:device_profile`` flavors, booted by a project
    member (``--nic none``: no network ports are made, though Nova 34
    still asks the network service for the server's ports on show and
    delete, so the cloud needs a network endpoint)."""

    credentials = ['primary', 'admin']
    # networks='none'.
    min_microversion = '2.37'

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.admin_flavors = cls.os_admin.flavors_client
        cls.admin_servers = cls.os_admin.servers_client
        cls.placement = cls.os_admin.placement_client

    def create_accel_flavor(self, profile_name, ram=128):
        """A flavor asking for device profile ``profile_name``, with
        ``ram`` MiB (deleted at cleanup)."""
        flavor = self.admin_flavors.create_flavor(
            name=data_utils.rand_name(prefix='nova-accel', name='flavor'),
            ram=ram, vcpus=1, disk=1)['flavor']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.admin_flavors.delete_flavor, flavor['id'])
        self.admin_flavors.set_flavor_extra_spec(
            flavor['id'], **{'accel:device_profile': profile_name})
        return flavor

    def boot(self, flavor, wait_until='ACTIVE'):
        """Boot a server (deleted at cleanup); returns it as shown."""
        server = self.servers_client.create_server(
            name=data_utils.rand_name(prefix='nova-accel', name='server'),
            imageRef=CONF.compute.image_ref, flavorRef=flavor['id'],
            networks='none')['server']
        self.addCleanup(self.delete_and_check, server['id'])
        if wait_until:
            waiters.wait_for_server_status(self.servers_client, server['id'],
                                           wait_until)
        return self.admin_servers.show_server(server['id'])['server']

    def delete_and_check(self, server_id):
        """Delete the server (if still there) and check that neither ARQs
        nor Placement allocations are left."""
        try:
            self.servers_client.delete_server(server_id)
        except lib_exc.NotFound:
            pass
        waiters.wait_for_server_termination(self.servers_client, server_id)
        self.assert_nothing_left(server_id)

    def assert_nothing_left(self, server_id):
        self.assertEqual([], self.arqs_of(server_id),
                         'ARQs left behind by server %s' % server_id)
        self.assertEqual({}, self.allocations(server_id),
                         'allocations left behind by server %s' % server_id)

    def allocations(self, consumer):
        return self.placement.list_allocations(consumer)['allocations']

    def accelerator_allocation(self, server_id):
        """Units of ``[accelerator] resource_class`` allocated to it."""
        rc = CONF.accelerator.resource_class
        return sum(a['resources'].get(rc, 0)
                   for a in self.allocations(server_id).values())

    def assert_has_accelerator(self, server, units=1):
        """Bound ARQs on the server's host and the allocation to match."""
        arqs = self.wait_for_arqs(server['id'], units)
        host = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
        for arq in arqs:
            self.assertEqual(host, arq['hostname'])
            self.assertEqual(server['id'], arq['instance_uuid'])
            self.assertTrue(arq['device_rp_uuid'])
            self.assertIsNotNone(arq['attach_handle_type'])
        self.assertEqual(units, self.accelerator_allocation(server['id']))
        # Every ARQ's device provider holds the server's allocation.
        providers = set(self.allocations(server['id']))
        self.assertLessEqual({a['device_rp_uuid'] for a in arqs}, providers)
        return arqs
