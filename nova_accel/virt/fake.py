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

"""Fake compute driver that records the accelerator hostdevs it would add.

Enable with ``[DEFAULT] compute_driver = accel.FakeDriver``.

It subclasses ``nova.virt.fake.SmallFakeDriver`` (2 VCPU, 8192 MB RAM,
1028 GB disk per node), the driver Nova's own accelerator functional tests
use with Placement: small, fixed inventories make the Placement usages a
test checks predictable, while ``FakeDriver``'s 1000 VCPU / 800000 MB are
meant for "never full" tests.

For every spawned instance the XML of each composed ``<hostdev>`` (from
:mod:`nova_accel.virt.hostdev`, the same composer the libvirt driver uses)
is kept in ``self.guest_hostdevs[instance.uuid]`` so functional tests can
check what a real guest would have received.
"""

from nova.virt import fake as nova_fake
from oslo_log import log as logging

from nova_accel.arq_binding import waiter
from nova_accel.virt import hostdev
from nova_accel.virt import hotplug_mixins

LOG = logging.getLogger(__name__)


class FakeDriver(hotplug_mixins.FakeHotplugMixin, nova_fake.SmallFakeDriver):
    """``SmallFakeDriver`` plus composed accelerator hostdevs per instance.

    :ivar guest_hostdevs: dict ``{instance_uuid (str): [hostdev XML (str)]}``
        filled by :meth:`spawn` (and a hard reboot that respawns), emptied
        for an instance by :meth:`destroy`.
    """

    capabilities = dict(nova_fake.SmallFakeDriver.capabilities,
                        supports_accelerators=True)

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only=read_only)
        self.guest_hostdevs = {}

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        """Spawn the fake guest, composing hostdevs from ``accel_info``.

        :param accel_info: list of bound ARQ dicts, or None.
        :raises ARQBindingFailed: an ARQ is not ``Bound``.
        :raises InvalidAttachHandle: a malformed attach handle; composed
            before the fake guest exists, so a failed build leaves nothing.
        """
        # Hot-plugged ARQs first, so they are composed (and recorded) too.
        accel_info = self._accel_with_hotplugged(context, instance,
                                                 accel_info)
        waiter.require_bound(instance.uuid, accel_info)
        elements = [elem for arq in accel_info or []
                    for elem in hostdev.compose_unit(arq)]
        super().spawn(context, instance, image_meta, injected_files,
                      admin_password, allocations, network_info=network_info,
                      block_device_info=block_device_info, power_on=power_on,
                      accel_info=accel_info)
        self.guest_hostdevs[instance.uuid] = [
            hostdev.to_string(e) for e in elements]
        # The one place a running cloud (tools/aio) can see them: a fake
        # guest has no domain XML to dump.
        LOG.info('Guest hostdevs of instance %s (%d): %s', instance.uuid,
                 len(elements), ' '.join(self.guest_hostdevs[instance.uuid]))

    def reboot(self, context, instance, network_info, reboot_type,
               block_device_info=None, bad_volumes_callback=None,
               accel_info=None, share_info=None):
        """Reboot; a hard reboot of a missing guest respawns with accel_info.

        Nova's fake driver respawns without ``accel_info``, which would
        drop the recorded hostdevs; the libvirt driver rebuilds the guest
        XML with them, so this driver does too.
        """
        if (instance.uuid not in self.instances and
                reboot_type.lower() == 'hard'):
            self.spawn(context, instance, instance.image_meta, None, None,
                       None, network_info=network_info,
                       block_device_info=block_device_info,
                       accel_info=accel_info)
            return
        super().reboot(context, instance, network_info, reboot_type,
                       block_device_info=block_device_info,
                       bad_volumes_callback=bad_volumes_callback,
                       accel_info=accel_info, share_info=share_info)

    def destroy(self, context, instance, *args, **kwargs):
        """Destroy the fake guest and forget its recorded hostdevs.

        Nova's ``ComputeDriver.destroy(context, instance, network_info,
        block_device_info=None, destroy_disks=True, destroy_secrets=True)``
        (Nova 34, ``nova/virt/driver.py``); the arguments after
        ``instance`` pass through to the next class unchanged.
        """
        super().destroy(context, instance, *args, **kwargs)
        self.guest_hostdevs.pop(instance.uuid, None)
