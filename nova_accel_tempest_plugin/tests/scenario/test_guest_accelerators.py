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

"""The accelerator inside a real guest: what the guest's own kernel lists
on its console, not only API states.

These run where compute nodes pass real PCI functions through (the
all-in-one cloud's nested compute node runs them in ``tox -e nested``);
``[accelerator] guest_pci_id`` says which id the guest must list.
"""

import json
import shlex
import subprocess
import time

from tempest.common import waiters
from tempest import config
from tempest.lib import decorators

from nova_accel_tempest_plugin import guest_console
from nova_accel_tempest_plugin.tests import base

CONF = config.CONF


class GuestScenarioTest(base.ServerAcceleratorTest):
    """What the guest scenarios share: skipped without ``[accelerator]
    guest_pci_id``; the guest's listing, hot-add, the wait for a device
    to be offered again.  Holds no test of its own."""

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.accelerator.guest_pci_id:
            raise cls.skipException('[accelerator] guest_pci_id is not '
                                    'set: no guest lists its devices')

    def guest_devices(self, server_id, count, after_boot=None):
        """Wait until the guest's last listing has ``count`` functions of
        ``[accelerator] guest_pci_id``; returns that listing.

        :param after_boot: a boot id (``guest_console.boot_id``) the
            listing must not come from: the guest must have booted
            again since (a rebuild, an unshelve).
        :raises AssertionError: not within ``guest_timeout`` seconds.
        """
        want = CONF.accelerator.guest_pci_id
        deadline = time.monotonic() + CONF.accelerator.guest_timeout
        while True:
            console = self.admin_servers.get_console_output(
                server_id)['output']
            seen = guest_console.count(console, want)
            fresh = after_boot is None or guest_console.boot_id(
                console) not in (None, after_boot)
            if seen == count and fresh:
                return guest_console.listing(console)
            self.assertLess(time.monotonic(), deadline,
                            'the guest (boot %s, not %s) lists %d of %s, '
                            'not %d:\n%s' % (
                                guest_console.boot_id(console), after_boot,
                                seen, want, count, console[-2000:]))
            time.sleep(5)

    def boot_of(self, server_id):
        """The id of the guest's last boot on its console (str)."""
        return guest_console.boot_id(self.admin_servers.get_console_output(
            server_id)['output'])

    def hot_add(self, server_id, profile_name):
        argv = shlex.split(CONF.accelerator.hotplug_command) + [
            'attach-accelerator', '--server', server_id,
            '--device-profile', profile_name]
        done = subprocess.run(argv, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL,
                              timeout=CONF.accelerator.guest_timeout)
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)

    def wait_offered(self, rp_uuid):
        """Wait until provider ``rp_uuid`` has no usage and nothing
        reserved of ``[accelerator] resource_class``."""
        rc = CONF.accelerator.resource_class
        deadline = time.monotonic() + CONF.accelerator.build_timeout
        while True:
            _, body = self.placement.get(
                '/resource_providers/%s/usages' % rp_uuid)
            used = json.loads(body)['usages'].get(rc, 0)
            _, body = self.placement.get(
                '/resource_providers/%s/inventories' % rp_uuid)
            reserved = json.loads(body)['inventories'][rc]['reserved']
            if not used and not reserved:
                return
            self.assertLess(time.monotonic(), deadline, 'provider %s: %d '
                            'used, %d reserved' % (rp_uuid, used, reserved))
            time.sleep(CONF.accelerator.build_interval)

    def wait_nothing_left(self, server_id):
        """``assert_nothing_left`` once Nova's clean-up of a failed build
        (which may end after the server shows ERROR) is done, or at
        ``build_timeout`` seconds."""
        deadline = time.monotonic() + CONF.accelerator.build_timeout
        while (self.arqs_of(server_id) or self.allocations(server_id)) and \
                time.monotonic() < deadline:
            time.sleep(CONF.accelerator.build_interval)
        self.assert_nothing_left(server_id)


class GuestAcceleratorTest(GuestScenarioTest):
    """One server through its life, each step seen from inside the guest
    and in the ARQs and Placement: boot, rebuild, shelve-offload then
    unshelve onto a released and cleaned device, hot-add, delete."""

    @decorators.attr(type='scenario')
    @decorators.idempotent_id('3c0f2a76-54b1-4f0e-8b7e-2d6a3f1c9e01')
    def test_boot_rebuild_shelve_unshelve_hot_add_and_delete(self):
        dp = self.create_profile()
        # A guest that boots a real kernel: 256 MiB.
        flavor = self.create_accel_flavor(dp['name'], ram=256)
        server = self.boot(flavor)
        arq, = self.assert_has_accelerator(server)
        self.guest_devices(server['id'], 1)

        # Rebuilt (same host, same image): Nova keeps the ARQ bound and
        # its allocation; the new guest lists the device.
        boot = self.boot_of(server['id'])
        self.servers_client.rebuild_server(server['id'],
                                           CONF.compute.image_ref)
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        again, = self.assert_has_accelerator(server)
        self.assertEqual((arq['uuid'], arq['device_rp_uuid']),
                         (again['uuid'], again['device_rp_uuid']))
        self.guest_devices(server['id'], 1, after_boot=boot)

        # Shelved and offloaded (shelved_offload_time 0): Nova deletes the
        # ARQ and frees the allocation; the device is released, cleaned
        # and offered again (nothing used, nothing reserved).
        boot = self.boot_of(server['id'])
        self.servers_client.shelve_server(server['id'])
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'SHELVED_OFFLOADED')
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual(0, self.accelerator_allocation(server['id']))
        self.wait_offered(arq['device_rp_uuid'])

        # Unshelved: the conductor creates and binds a new ARQ; the guest
        # boots again and lists a device.
        self.servers_client.unshelve_server(server['id'])
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        server = self.admin_servers.show_server(server['id'])['server']
        unshelved, = self.assert_has_accelerator(server)
        self.assertNotEqual(arq['uuid'], unshelved['uuid'])
        self.guest_devices(server['id'], 1, after_boot=boot)

        if CONF.accelerator.hotplug_command:
            self.hot_add(server['id'], dp['name'])
            self.assert_has_accelerator(server, units=2)
            self.guest_devices(server['id'], 2)
        self.delete_and_check(server['id'])
