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

"""Interrupt remapping: whether a guest given a PCI function can inject
interrupts into the host.

Without interrupt remapping an assigned device can write any MSI it likes
and so raise any interrupt of the host or of another guest.  VFIO's type1
IOMMU backend therefore refuses to attach an IOMMU group whose IOMMU does
not isolate MSIs ("No interrupt remapping support.  Use the module param
"allow_unsafe_interrupts" to enable VFIO IOMMU support on this
platform", Linux 6.8, ``drivers/vfio/vfio_iommu_type1.c``,
``vfio_iommu_type1_attach_group``), unless its module parameter
``allow_unsafe_interrupts`` is set, and then the host is open to that
injection.  Either way a boot onto such a function fails or is unsafe
between tenants.  Mediated devices (vGPUs) are not concerned: their
emulated IOMMU groups are attached before that check.

What sysfs shows, read under the sysfs top (``sysfs_top``):

* Intel VT-d units: ``class/iommu/dmar<N>/intel-iommu/ecap``, the unit's
  Extended Capability Register in hex without ``0x`` (Linux 6.8,
  ``drivers/iommu/intel/iommu.c``, ``ecap_show``); bit 3 (IR) says the
  unit supports interrupt remapping (``ecap_ir_support``, Linux 6.8,
  ``drivers/iommu/intel/iommu.h``; Intel VT-d specification, Extended
  Capability Register).  Linux enables interrupt remapping only when every unit
  supports it (Linux 6.8, ``drivers/iommu/intel/irq_remapping.c``,
  ``intel_prepare_irq_remapping``), so one unit without IR leaves the
  whole host without it.
* AMD-Vi units: ``class/iommu/ivhd<N>/amd-iommu/{cap,features}``
  (Linux 6.8, ``drivers/iommu/amd/init.c``).  Interrupt remapping is part
  of every AMD IOMMU, with no capability bit for it: whether the kernel
  enabled it (``irq_remapping_enabled``, ``drivers/iommu/amd/iommu.c``)
  is not in sysfs, so AMD units are not judged.
* ``module/vfio_iommu_type1/parameters/allow_unsafe_interrupts``: ``Y``
  or ``N`` (absent while the module is not loaded: ``N``).
* The kernel command line, ``/proc/cmdline`` beside ``/sys`` (a tree's
  ``proc/cmdline``): ``intremap=off`` (values separated by commas, the
  last ``on`` or ``off`` wins) or ``nointremap`` turns interrupt
  remapping off on every IOMMU, Intel's and AMD's, whatever the units
  support (Linux 6.8, ``drivers/iommu/irq_remapping.c``,
  ``setup_irqremap``, ``setup_nointremap``).

The rule: a host whose kernel command line turns interrupt remapping
off, or with at least one Intel unit lacking IR, has no interrupt
remapping.  Otherwise a host showing no Intel unit (no ``class/iommu``
at all, as in trees recorded before this was read, or only IOMMUs of
other kinds: AMD-Vi, virtio-iommu, ARM SMMU, whose MSI isolation lives
in the interrupt controller) is not judged.  Not seen: VFIO through
iommufd, whose own ``allow_unsafe_interrupts`` parameter is not read.
"""

import dataclasses
import os

from oslo_log import log as logging

from accel_backend.agent.discovery import sysfs

LOG = logging.getLogger(__name__)
#: ``ecap_ir_support``: bit 3 of the VT-d Extended Capability Register.
ECAP_IR = 1 << 3
#: Where the PCI functions live below the sysfs top.
DEVICES = os.path.join('bus', 'pci', 'devices')
UNSAFE_PARAM = os.path.join('module', 'vfio_iommu_type1', 'parameters',
                            'allow_unsafe_interrupts')
#: Whether the warning about offering devices anyway was logged (once
#: per process, not once per discovery pass).
_WARNED = []


def sysfs_top(root):
    """The sysfs mount holding ``root``: ``/sys`` for the default
    ``[discovery] sysfs_root`` ``/sys/bus/pci/devices`` (any root ending
    in ``bus/pci/devices``); any other root is a recorded or generated
    tree, which holds ``class/`` and ``module/`` beside its functions.

    :param root: the sysfs root of the PCI functions (str).
    :returns: a directory path (str).
    """
    root = os.path.normpath(root)
    if root.endswith(os.sep + DEVICES):
        return root[:-len(DEVICES) - 1] or os.sep
    return root


def units_without_ir(top):
    """Intel VT-d units of the host and which of them lack interrupt
    remapping.

    :param top: the sysfs top (``sysfs_top``).
    :returns: None when sysfs shows no Intel unit (not judged), else the
        sorted names (``dmar<N>``) of the units whose ``ecap`` lacks IR
        ([] when all have it).  An ``ecap`` that is not hex counts as
        lacking IR.
    """
    base = os.path.join(top, 'class', 'iommu')
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return None
    intel, without = False, []
    for name in names:
        ecap = sysfs.read_value(os.path.join(base, name, 'intel-iommu',
                                             'ecap'))
        if ecap is None:
            continue
        intel = True
        try:
            has_ir = bool(int(ecap, 16) & ECAP_IR)
        except ValueError:
            has_ir = False
        if not has_ir:
            without.append(name)
    return without if intel else None


def cmdline_path(top):
    """The kernel command line's file for the sysfs top ``top``:
    ``/proc/cmdline`` beside a mount named ``sys``, else ``proc/cmdline``
    inside the tree (str)."""
    if os.path.basename(os.path.normpath(top)) == 'sys':
        return os.path.join(os.path.dirname(os.path.normpath(top)), 'proc',
                            'cmdline')
    return os.path.join(top, 'proc', 'cmdline')


def cmdline_turns_ir_off(text):
    """Whether a kernel command line turns interrupt remapping off, as
    the kernel parses it: ``nointremap``, or ``intremap=`` whose last
    ``on``/``off`` value (comma-separated, in order) is ``off``.

    :param text: the command line (str), None when unknown (False).
    """
    off = False
    for token in (text or '').split():
        if token == 'nointremap':
            off = True
        elif token.startswith('intremap='):
            for value in token[len('intremap='):].split(','):
                if value.startswith('on'):
                    off = False
                elif value.startswith('off'):
                    off = True
    return off


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A host without interrupt remapping.

    :ivar units: names of the Intel units lacking it (tuple of str).
    :ivar unsafe_allowed: vfio_iommu_type1's ``allow_unsafe_interrupts``
        is ``Y``: VFIO attaches the groups, unsafely.
    :ivar offered: the operator accepts that (``[discovery]
        allow_unsafe_interrupts``) and VFIO allows it: the functions are
        offered.
    :ivar cmdline_off: the kernel command line turned it off
        (``cmdline_turns_ir_off``).
    """

    units: tuple
    unsafe_allowed: bool
    offered: bool
    cmdline_off: bool = False

    @property
    def cause(self):
        """Why the host has no interrupt remapping, in short (str):
        ``Intel VT-d unit dmar1 lacks it`` or ``intremap=off on the
        kernel command line``."""
        if self.cmdline_off:
            return 'intremap=off on the kernel command line'
        return 'Intel VT-d unit %s lacks it' % ', '.join(self.units)

    @property
    def reason(self):
        """The health reason of a passthrough function (str), None when
        it is offered anyway."""
        if self.offered:
            return None
        if self.cmdline_off:
            cause = ('interrupt remapping turned off on the kernel command '
                     'line (intremap=off or nointremap); remove it and '
                     'reboot')
        else:
            cause = ('interrupt remapping unsupported: Intel VT-d unit %s '
                     'of the host lacks it (ecap bit 3 clear), so the '
                     'kernel leaves it off' % ', '.join(self.units))
        if self.unsafe_allowed:
            return cause + (
                '; vfio_iommu_type1 allow_unsafe_interrupts=Y would let a '
                'guest inject interrupts into the host and other guests '
                '([discovery] allow_unsafe_interrupts offers it anyway)')
        return cause + ('; vfio_iommu_type1 refuses to attach the '
                        'function\'s IOMMU group')


def check(root, allow_unsafe=False):
    """Judge the host of ``root``: each PCI driver reads it once per
    discovery pass, beside its scan (``PCIDriverBase.functions``).

    :param root: ``[discovery] sysfs_root`` (str).
    :param allow_unsafe: ``[discovery] allow_unsafe_interrupts`` (bool).
    :returns: None when the host remaps interrupts or is not judged
        (``units_without_ir``), else a ``Verdict``.  When it is offered
        anyway, a warning is logged once per process.
    """
    top = sysfs_top(root)
    off = cmdline_turns_ir_off(sysfs.read_value(cmdline_path(top)))
    without = units_without_ir(top)
    if not without and not off:
        return None
    param = sysfs.read_value(os.path.join(top, UNSAFE_PARAM)) or 'N'
    unsafe = param[:1] in 'Yy1'
    verdict = Verdict(tuple(without or ()), unsafe, unsafe and allow_unsafe,
                      cmdline_off=off)
    if verdict.offered and not _WARNED:
        _WARNED.append(True)
        LOG.warning('%s lacks interrupt remapping and '
                    'vfio_iommu_type1 allow_unsafe_interrupts is set: '
                    'passthrough devices are offered because [discovery] '
                    'allow_unsafe_interrupts is true; a guest can inject '
                    'interrupts into the host and other guests',
                    'The host (intremap=off on its kernel command line)'
                    if off else
                    'Intel VT-d unit ' + ', '.join(verdict.units))
    return verdict
