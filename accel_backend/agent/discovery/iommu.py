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

"""IOMMU groups: which PCI functions can be given to a guest on their own.

VFIO assigns a whole IOMMU group to one guest: every function of the group
must then be bound to a VFIO driver, to ``pci-stub`` or to no driver, and
functions whose header is not a normal endpoint header (bridges) may stay
on any driver (Linux 6.1, ``drivers/vfio/group.c``,
``vfio_dev_driver_allowed``).  From that follow the rules discovery
applies:

* the other endpoint functions of a device's own slot in its group that
  are free for VFIO, and a GPU's own functions on host drivers (its
  HDMI audio function ``.1`` on ``snd_hda_intel`` beside the GPU's
  ``.0``), are its companions: the device is assigned with them as one
  unit (libvirt's ``managed='yes'`` moves each to vfio-pci before QEMU
  opens the group), and the guest sees them in one slot
  (``companions()``; the attach handle names them,
  ``common.discovered.FUNCTIONS_KEY``);
* a device whose group holds another endpoint the host uses (bound to a
  host driver, e.g. a NIC behind the same switch without ACS, or the
  chipset's SATA controller beside its SMBus function) cannot be
  assigned at all: it is reported unhealthy (its inventory is reserved,
  so Placement never offers it) with a reason that says which function
  blocks it;
* two devices of one group cannot go to two guests: only one is
  reported, the others are withheld with a warning (``exclusive()``):
  the one a guest holds now (on a ``vfio`` driver), else the first by
  PCI address, so that a sibling that comes back (a rescan after a
  surprise removal) never displaces the device under a guest.

The members of a group are the functions of the scan whose
``iommu_group`` link names the same group: every PCI function of the host
is listed under ``/sys/bus/pci/devices``, so this is the PCI part of
``/sys/kernel/iommu_groups/<N>/devices``, read from the same tree (the
recorded trees of the tests included).
"""

import collections

from oslo_log import log as logging

LOG = logging.getLogger(__name__)
#: Withheld devices already warned about (one warning per device, not one
#: per discovery pass).
_WARNED = set()
#: PCI base class 06 (bridge) with a bridge header: PCI-to-PCI (0604) and
#: CardBus (0607) bridges, which VFIO lets stay on any driver.
BRIDGE_CLASSES = ('0604', '0607')
#: Drivers that leave a function free for VFIO besides the ``vfio*`` ones.
FREE_DRIVERS = ('pci-stub',)
#: PCI base class of display controllers (GPUs), whose own functions on
#: host drivers go with them.
GPU_CLASS = '03'


def is_bridge(fn):
    """True for a bridge function (``sysfs.PCIFunction``)."""
    return fn.class_code[:4] in BRIDGE_CLASSES


def is_free_for_vfio(fn):
    """True when ``fn``'s driver does not keep its group from VFIO: no
    driver, ``pci-stub``, or a VFIO driver (``vfio-pci`` and its variant
    drivers, e.g. ``mlx5_vfio_pci``)."""
    return (fn.driver is None or fn.driver in FREE_DRIVERS or
            'vfio' in fn.driver)


class Groups:
    """The IOMMU groups of one scan.

    :param functions: list of ``sysfs.PCIFunction`` (one scan of a host).
    """

    def __init__(self, functions):
        self._members = collections.defaultdict(list)
        for fn in functions:
            if fn.iommu_group is not None:
                self._members[fn.iommu_group].append(fn)

    def peers(self, fn):
        """The other functions of ``fn``'s group, by address ([] when
        ``fn`` has no IOMMU group or is alone in it)."""
        if fn.iommu_group is None:
            return []
        return [m for m in self._members[fn.iommu_group]
                if m.address != fn.address]

    def companions(self, fn):
        """The functions assigned with ``fn`` as one unit: the endpoint
        functions of ``fn``'s group in ``fn``'s own slot (same domain,
        bus and device), bridges and SR-IOV VFs left out, that are free
        for VFIO or, for a GPU (display class 03), its own functions on
        a host driver (same vendor: HDMI audio, USB-C, UCSI); by address,
        [] when there are none.  A chipset's functions on host drivers
        (``ahci`` beside an SMBus controller) are never taken: they
        block (``blocker``)."""
        slot = fn.address.rsplit('.', 1)[0]
        gpu = fn.class_code[:2] == GPU_CLASS
        return [p for p in self.peers(fn)
                if p.address.rsplit('.', 1)[0] == slot and
                not is_bridge(p) and not p.physfn and
                (is_free_for_vfio(p) or
                 (gpu and p.vendor_id == fn.vendor_id))]

    def blocker(self, fn):
        """Why ``fn`` cannot be assigned to a guest, or None.

        :returns: a sentence naming the first endpoint of ``fn``'s group
            outside its unit (``companions``) that a host driver holds,
            e.g. ``IOMMU group 14 also holds 0000:18:00.0 (driver
            e1000e)...``.
        """
        unit = {c.address for c in self.companions(fn)}
        for peer in self.peers(fn):
            if (is_bridge(peer) or is_free_for_vfio(peer) or
                    peer.address in unit):
                continue
            return ('IOMMU group %s also holds %s (driver %s), which the '
                    'host uses; bind it to vfio-pci (or unbind it) to offer '
                    'this device' % (fn.iommu_group, peer.address,
                                     peer.driver))
        return None


def exclusive(deployables):
    """Keep one device per IOMMU group among whole-function deployables.

    Deployables whose attach handles are ``PCI`` functions (passthrough)
    and whose ``std_board_info`` names an IOMMU group are grouped; in a
    group with several devices, the lowest address is kept and the
    others are withheld with a warning (they would otherwise be sold to
    two guests, and the second assignment would fail); a device on a
    ``vfio`` driver (a guest holds it) is kept before the lowest address,
    so a sibling that comes back does not make it vanish from under its
    guest.  Mediated devices
    and functions without an IOMMU group pass unchanged.

    :param deployables: list of ``drivers.DiscoveredDeployable``.
    :returns: the kept deployables, in their order.
    """
    first = {}
    for dep in sorted(deployables, key=lambda d: (
            not str(d.std_board_info.get('driver') or '').startswith(
                'vfio'), d.address)):
        group = _group_of(dep)
        if group is not None:
            first.setdefault(group, dep.address)
    kept = []
    for dep in deployables:
        group = _group_of(dep)
        if group is not None and first[group] != dep.address:
            log = LOG.debug if dep.address in _WARNED else LOG.warning
            _WARNED.add(dep.address)
            log('Device %s shares IOMMU group %s with device %s: '
                'a group goes to one guest, so only %s is '
                'reported (enable ACS or use a slot with its own '
                'group to offer both)', dep.address, group,
                first[group], first[group])
            continue
        kept.append(dep)
    return kept


def _group_of(dep):
    if not any(kind == 'PCI' for kind, _ in dep.attach_handles):
        return None
    return dep.std_board_info.get('iommu_group')
