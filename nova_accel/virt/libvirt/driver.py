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

"""Nova libvirt driver whose accelerator ``<hostdev>`` XML is ours.

Enable with ``[DEFAULT] compute_driver = accel.LibvirtDriver`` (Nova imports
``nova.virt.accel``, the shim this bundle installs, which re-exports this
class).

Upstream contract (nova-cyborg-interaction spec, "The Nova virt driver uses
the attach handles to generate the necessary XML"): Nova 34's
``LibvirtDriver._get_guest_config`` sorts the bound ARQs (``accel_info``) by
attach handle type, logs and drops unsupported types, and passes the ``PCI``
ones to ``_guest_add_accel_pci_devices(guest, pci_arqs)``.  ``MDEV`` ARQs
take another path: ``_allocate_cyborg_mdevs`` creates the mediated devices
and ``_guest_add_mdevs`` adds them; this driver creates those of parents
that are not PCI functions itself (:mod:`nova_accel.virt.mdevs`)
and leaves the others to Nova.  It overrides the PCI hook so that
:mod:`nova_accel.virt.hostdev` (validated addresses, ignored handle types
from ``[nova_accel] ignored_attach_handle_types``) writes those
elements.  Hot-adding accelerators to a running guest, and keeping them
across hard reboots, rebuilds and delete, comes from
:class:`nova_accel.virt.hotplug_mixins.LibvirtHotplugMixin`.
"""

import libvirt
from nova.virt.libvirt import driver as libvirt_driver
from oslo_log import log as logging

from nova_accel.arq_binding import waiter
import nova_accel.conf
from nova_accel.virt import hostdev
from nova_accel.virt import hotplug_mixins
from nova_accel.virt.libvirt import numa
from nova_accel.virt.libvirt import slots
from nova_accel.virt import mdevs

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF


class LibvirtDriver(hotplug_mixins.LibvirtHotplugMixin,
                    libvirt_driver.LibvirtDriver):
    """``nova.virt.libvirt.LibvirtDriver`` composing accelerator hostdevs.

    Capabilities are Nova's, with ``supports_accelerators`` kept ``True``
    (so the compute node reports the ``COMPUTE_ACCELERATORS`` trait that
    Nova's ``accelerators_filter`` asks for).
    """

    capabilities = dict(libvirt_driver.LibvirtDriver.capabilities,
                        supports_accelerators=True)

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        """Nova's spawn, after checking every ARQ in ``accel_info`` is
        ``Bound``.

        :raises ARQBindingFailed: an ARQ failed to bind (see
            :func:`nova_accel.arq_binding.waiter.require_bound`).
        """
        waiter.require_bound(instance.uuid, accel_info)
        return super().spawn(context, instance, image_meta, injected_files,
                             admin_password, allocations,
                             network_info=network_info,
                             block_device_info=block_device_info,
                             power_on=power_on, accel_info=accel_info)

    def _allocate_cyborg_mdevs(self, accel_info):
        """Nova's, except for ``MDEV`` handles of a parent that is not a
        PCI function (``mdevs.on_virtual_parent``), whose mediated device
        this creates as Nova creates the others: looked up by its node
        device name, created and defined (``_create_mdev``) when libvirt
        does not know it.

        :param accel_info: list of bound ARQ dicts.
        :returns: the mediated device UUIDs (list of str), in ARQ order.
        :raises InvalidAttachHandle: a malformed virtual-parent handle.
        :raises libvirt.libvirtError: libvirt failed to look up or create.
        """
        uuids = []
        for arq in accel_info or []:
            if not mdevs.on_virtual_parent(arq):
                uuids.extend(super()._allocate_cyborg_mdevs([arq]))
                continue
            mdev_uuid, parent, mdev_type, name = mdevs.creation(arq)
            try:
                self._host.device_lookup_by_name(name)
            except libvirt.libvirtError as e:
                if e.get_error_code() != libvirt.VIR_ERR_NO_NODE_DEVICE:
                    raise
                LOG.info('Creating mediated device %s of type %s on %s',
                         mdev_uuid, mdev_type, parent)
                self._create_mdev(parent, mdev_type, uuid=mdev_uuid)
            uuids.append(mdev_uuid)
        return uuids

    def _guest_add_accel_pci_devices(self, guest, accel_info):
        """Add one ``<hostdev>`` per bound ARQ to the guest config.

        :param guest: ``nova.virt.libvirt.config.LibvirtConfigGuest`` being
            built by ``_get_guest_config``.
        :param accel_info: list of bound ARQ dicts; Nova 34 passes only the
            ``PCI`` ones here, but any type :mod:`nova_accel.virt.hostdev`
            composes is accepted.
        :raises InvalidAttachHandle: an ARQ's attach handle is malformed;
            the build then fails with that message as the instance fault.

        With ``[nova_accel] guest_numa_affinity`` (default) and a guest
        NUMA topology, PCI hostdevs go on an expander bus of the guest
        cell placed on their host NUMA node
        (:mod:`nova_accel.virt.libvirt.numa`).  The functions of a
        multi-function unit (``"functions"`` in the attach handle) share
        one guest slot (:mod:`nova_accel.virt.libvirt.slots`); a unit of
        several host slots (``"addresses"``: an HGX board) gets one guest
        slot per host slot, each on its own host NUMA node's cell.
        """
        numa_guest = (CONF.nova_accel.guest_numa_affinity and
                      bool(numa.guest_cells_by_host_node(guest)))
        placed = []
        for arq in accel_info or []:
            units = hostdev.compose_slots(arq)
            for unit in units:
                node = None
                if numa_guest and \
                        arq.get('attach_handle_type') == hostdev.PCI:
                    node = numa.host_numa_node(
                        arq if len(units) == 1 else numa.slot_arq(unit),
                        self._nodedev_numa_node)
                placed.append((unit, node))
        controllers = numa.place(guest, placed) if numa_guest else []
        for ctrl in controllers:
            guest.add_device(ctrl)
        for ctrl in slots.place(guest, [unit for unit, _ in placed]):
            controllers.append(ctrl)
            guest.add_device(ctrl)
        for ctrl in controllers:
            LOG.debug('Adding accelerator bus %s',
                      hostdev.to_string(ctrl.format_dom()))
        for unit, _node in placed:
            for elem in unit:
                LOG.debug('Adding accelerator hostdev %s',
                          hostdev.to_string(elem))
                guest.add_device(hostdev.HostdevConfig(elem))

    def _nodedev_numa_node(self, name):
        """NUMA node of libvirt node device ``name``, None if unknown."""
        dev = self._host.device_lookup_by_name(name)
        return None if dev is None else numa.nodedev_numa_node(
            dev.XMLDesc(0))
