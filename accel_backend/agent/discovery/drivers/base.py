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

"""What every PCI discovery driver shares."""

import os

import os_traits
from oslo_log import log as logging

from accel_backend.agent.discovery import interrupts
from accel_backend.agent.discovery import iommu
from accel_backend.agent.discovery import nova_pci
from accel_backend.agent.discovery import pci_ids
from accel_backend.agent.discovery import sysfs
from accel_backend.common import aer
from accel_backend.common import discovered

LOG = logging.getLogger(__name__)
#: The health reason of a function without an IOMMU group.
NO_IOMMU = ('no IOMMU group: the host\'s IOMMU is off (VT-d/AMD-Vi in the '
            'firmware, intel_iommu=on or amd_iommu=on on the kernel command '
            'line); vfio-pci cannot assign the function')
CLEANING_METHODS = ('flr', 'command', 'vgpu', 'mdev', 'none')


def numa_trait(numa_node):
    """``CUSTOM_NUMA_NODE_<N>`` (os-traits has no per-node trait; its
    ``HW_NUMA_ROOT`` marks NUMA node providers themselves), None when the
    device has no NUMA affinity."""
    return None if numa_node is None else 'CUSTOM_NUMA_NODE_%d' % numa_node


#: Trait of a deployable that is an SR-IOV virtual function (os-traits has
#: SR-IOV traits for NICs only).
VF_TRAIT = 'CUSTOM_PCI_VF'


def pci_traits(fn):
    """Traits every PCI deployable gets: owner, vendor/product, NUMA, and
    ``CUSTOM_PCI_VF`` for an SR-IOV virtual function."""
    traits = {os_traits.OWNER_CYBORG,
              'CUSTOM_PCI_VENDOR_%s' % fn.vendor_id.upper(),
              'CUSTOM_PCI_PRODUCT_%s_%s' % (fn.vendor_id.upper(),
                                            fn.product_id.upper())}
    numa = numa_trait(fn.numa_node)
    if numa:
        traits.add(numa)
    if fn.physfn:
        traits.add(VF_TRAIT)
    return traits


def board_info(fn, **extra):
    """``std_board_info`` of a device record."""
    info = {'class': fn.class_code, 'iommu_group': fn.iommu_group,
            'numa_node': fn.numa_node, 'driver': fn.driver,
            'reset_method': ' '.join(fn.reset_methods) or 'none'}
    if fn.physfn:
        info['physfn'] = fn.physfn
    info.update(extra)
    return info


class PCIDriverBase:
    """Base of the sysfs drivers.

    :param conf: accel_backend ``ConfigOpts``.
    :raises ValueError: an unknown ``[cleaning] methods`` value.
    """

    name = None
    #: Passthrough drivers assign whole functions, hence whole IOMMU
    #: groups (``agent.discovery.iommu``); the mdev driver does not.
    assigns_iommu_group = True

    def __init__(self, conf):
        self.conf = conf
        self.root = conf.discovery.sysfs_root
        self.nova = nova_pci.NovaClaims.from_conf(conf)
        self.cleaning = conf.cleaning.methods.get(self.name, 'none')
        if self.cleaning not in CLEANING_METHODS:
            raise ValueError('[cleaning] methods: %s for driver %s is not '
                             'one of %s' % (self.cleaning, self.name,
                                            CLEANING_METHODS))
        for method, driver in (('vgpu', 'nvidia_vgpu'), ('mdev', 'mdev')):
            if self.cleaning == method and self.name != driver:
                raise ValueError('[cleaning] methods: %s is for the %s '
                                 'driver only, not %s' % (method, driver,
                                                          self.name))
        self.health_check = conf.discovery.health_check
        self._no_reset_warned = set()
        self._slow_link_warned = set()
        #: Addresses the last pass found without an IOMMU group.
        self.no_iommu = set()
        #: Addresses the last pass held back for the host's lack of
        #: interrupt remapping, and its verdict
        #: (``agent.discovery.interrupts``).
        self.no_intremap = set()
        self.intremap = None
        self._ids = None
        self._slots = None
        self._groups = iommu.Groups([])
        self._vfs = {}

    @property
    def pci_ids(self):
        if self._ids is None:
            self._ids = pci_ids.PCIIds(self.conf.discovery.pci_ids_path)
        return self._ids

    def functions(self):
        """Every PCI function under the sysfs root (a new pass: the slots
        are read again)."""
        self._slots = None
        self.no_iommu = set()
        self.no_intremap = set()
        found = sysfs.scan(self.root)
        self.intremap = interrupts.check(
            self.root, self.conf.discovery.allow_unsafe_interrupts)
        self._groups = iommu.Groups(found)
        self._vfs = {}
        for fn in found:
            if fn.physfn:
                self._vfs.setdefault(fn.physfn, []).append(fn.address)
        return found

    def vfs_of(self, fn):
        """Addresses of the SR-IOV VFs of ``fn`` that the last pass
        (``functions()``) saw enabled (list, [] for a VF or a PF without
        VFs).  A PF whose VFs are enabled is never assigned whole: the
        guest would own the device its VFs live on, and a function level
        reset of the PF, which vfio-pci does at open and close, resets
        its VFs too (PCI-SIG, Single Root I/O Virtualization and Sharing
        specification)."""
        return list(self._vfs.get(fn.address, ()))

    @property
    def config_problems(self):
        """Configuration this driver works around by withholding devices
        (list of str): Nova ``[pci] device_spec`` values that do not
        parse (``nova_pci.NovaClaims.problems``)."""
        return self.nova.problems

    def refused(self, fn):
        """True (with a warning, once) when Nova's PCI passthrough claims
        ``fn``, which this driver would otherwise take."""
        return self.nova.refuse(fn, self.name)

    def health(self, fn):
        """``(health, reason)`` of a function from what sysfs shows: a
        function without an IOMMU group (the host's IOMMU is off: vfio-pci
        cannot assign it, every boot onto it would fail in QEMU; recorded
        in ``no_iommu``), or on a host without interrupt remapping
        (``agent.discovery.interrupts``: VFIO refuses it, or it would be
        unsafe;
        recorded in ``no_intremap``), or whose IOMMU group holds an
        endpoint the host uses (``iommu.Groups.blocker``), or that answers
        config reads with all ones, cannot be assigned.  Fatal AER errors
        are judged on the new ones by ``common.aer`` (the count goes in
        ``std_board_info``)."""
        if self.assigns_iommu_group:
            if fn.iommu_group is None:
                self.no_iommu.add(fn.address)
                return discovered.UNHEALTHY, NO_IOMMU
            if self.intremap is not None and self.intremap.reason:
                self.no_intremap.add(fn.address)
                return discovered.UNHEALTHY, self.intremap.reason
            blocker = self._groups.blocker(fn)
            if blocker:
                return discovered.UNHEALTHY, blocker
        if sysfs.config_space_gone(self.root, fn.address):
            return discovered.UNHEALTHY, (
                'the function answers config reads with 0xffffffff: it '
                'fell off the bus')
        return discovered.HEALTHY, None

    def link(self, fn):
        """The function's PCIe link as text for ``std_board_info``
        (``16.0 GT/s PCIe x16``, with ``(max ...)`` when it runs below its
        maximum), or None when sysfs does not show it.

        A link narrower than its maximum trained badly (a riser, a slot,
        a bad seat): logged as a warning, once.  A lower speed alone is
        not: GPUs lower their link speed while idle to save power.
        """
        found = sysfs.link(self.root, fn.address)
        if found is None:
            return None
        (speed, width), (max_speed, max_width) = found
        text = '%s x%s' % (speed, width)
        if (speed, width) == (max_speed, max_width):
            return text
        if width != max_width and fn.address not in self._slow_link_warned:
            self._slow_link_warned.add(fn.address)
            LOG.warning('%s: the PCIe link of %s trained narrower than its '
                        'maximum: x%s, not x%s (a riser, a slot or a bad '
                        'seat); it is offered, slower', self.name,
                        fn.address, width, max_width)
        return '%s (max %s x%s)' % (text, max_speed, max_width)

    def cleaning_of(self, fn):
        """The cleaning step of ``fn``: ``[cleaning] methods`` of this
        driver, except that ``flr`` becomes ``none`` (with a warning, once
        per function) when the kernel offers no reset for the function
        (``sysfs.reset_methods``): writing ``reset`` would fail after
        every tenant and lock the device out.  vfio-pci still resets the
        function when a guest opens and closes it where a method exists;
        a scrub of the device's memory is ``[cleaning] methods`` =
        ``command``."""
        if self.cleaning != 'flr' or fn.reset_methods:
            return self.cleaning
        if fn.address not in self._no_reset_warned:
            self._no_reset_warned.add(fn.address)
            LOG.warning('%s: the kernel offers no reset for %s (no sysfs '
                        'reset_method); it is not reset between tenants '
                        '(cleaning none); set [cleaning] methods to '
                        'command to scrub it', self.name, fn.address)
        return 'none'

    def slot(self, fn):
        """The physical slot name of ``fn`` (``[discovery]
        pci_slots_path``), or None."""
        if self._slots is None:
            path = self.conf.discovery.pci_slots_path or os.path.join(
                os.path.dirname(os.path.normpath(self.root)), 'slots')
            self._slots = sysfs.slots(path)
        return sysfs.slot_of(self._slots, fn.address)

    def deployable(self, fn, **kw):
        """A ``DiscoveredDeployable`` for ``fn`` with the shared fields
        filled in (keywords override or add)."""
        health, reason = self.health(fn)
        info = board_info(fn)
        trained = self.link(fn)
        if trained:
            info['link'] = trained
        if self.health_check:
            fatal = sysfs.fatal_aer_errors(self.root, fn.address)
            if fatal is not None:
                info[aer.TOTAL] = fatal
        slot = self.slot(fn)
        if slot is not None:
            info['slot'] = slot
        values = dict(
            address=fn.address, vendor_id=fn.vendor_id,
            product_id=fn.product_id,
            model=self.pci_ids.model(fn.vendor_id, fn.product_id),
            driver_name=self.name, numa_node=fn.numa_node,
            std_board_info=info, cleaning=self.cleaning_of(fn),
            health=health, health_reason=reason)
        values.update(kw)
        functions = self.unit_functions(fn)
        if functions:
            info[discovered.FUNCTIONS_KEY] = functions
            values['attach_handles'] = [
                (kind, dict(hinfo, **{discovered.FUNCTIONS_KEY: functions})
                 if kind == 'PCI' and hinfo == fn.address_parts else hinfo)
                for kind, hinfo in values.get('attach_handles', ())]
        return discovered.DiscoveredDeployable(**values)

    def companions(self, fn):
        """The functions assigned with ``fn`` as one unit
        (``iommu.Groups.companions`` of this pass); [] for a driver that
        assigns no IOMMU group."""
        if not self.assigns_iommu_group:
            return []
        return self._groups.companions(fn)

    def unit_functions(self, fn):
        """The functions of ``fn``'s slot that go to a guest with it
        (``iommu.Groups.companions``) as the attach handle's
        ``discovered.FUNCTIONS_KEY`` value, e.g. ``'0,1'``; None for a
        function assigned alone (or a driver that assigns no IOMMU
        group)."""
        companions = self.companions(fn)
        if not companions:
            return None
        return ','.join(sorted(
            f.address.rsplit('.', 1)[1] for f in [fn] + companions))
