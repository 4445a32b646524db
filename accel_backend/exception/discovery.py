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

"""Errors of device discovery: device specs, the sysfs root, the
removal guard, Nova's ``[pci] device_spec`` and the IOMMU.  Most are
recorded as a host's status rather than raised to an API caller."""

from accel_backend.exception.base import AccelBackendError
from accel_backend.exception import codes


class DeviceSpecError(AccelBackendError):
    """A ``[discovery] device_spec`` entry is malformed (config error)."""

    code = codes.CONFIG_DEVICE_SPEC
    msg_fmt = 'Invalid device_spec %(spec)r: %(reason)s'


class SysfsRootUnavailable(AccelBackendError):
    """Discovery refuses to act on a sysfs root it cannot read: an absent
    root would look like a host without devices and remove them all."""
    status = 503
    code = codes.DISCOVERY_ROOT_UNAVAILABLE
    msg_fmt = ('Cannot read the PCI devices under %(root)s (%(reason)s): '
               'check [discovery] sysfs_root; nothing was discovered, '
               'reported or removed')


class MassRemovalRefused(AccelBackendError):
    """One discovery or report pass would remove more than
    ``[discovery] max_removal_share`` of a host's devices."""
    status = 409
    code = codes.DISCOVERY_MASS_REMOVAL_REFUSED
    msg_fmt = ('Refusing to remove %(removing)d of the %(total)d '
               '%(what)s of host %(host)s in one pass (more than '
               '[discovery] max_removal_share = %(share)s); kept: '
               '%(kept)s. If they are really gone, run '
               '`accel-backend-manage discovery sync --force`')


class NovaPCIConfigUnusable(AccelBackendError):
    """Nova's ``[pci] device_spec`` cannot be read or holds a line from
    which not even a vendor id can be told: accel_backend cannot know
    which devices Nova's PCI passthrough claims, so it refuses to guess
    (it would offer them twice)."""
    status = 503
    code = codes.DISCOVERY_NOVA_PCI_UNUSABLE
    msg_fmt = ('Nova\'s [pci] device_spec cannot be used (%(reason)s): '
               'fix %(source)s; accel_backend will not guess which devices '
               'Nova claims')


class NovaPCISpecWithheld(AccelBackendError):
    """Some of Nova's ``[pci] device_spec`` values do not parse: the
    devices of the ids they name are left to Nova (withheld), the others
    are reported.  Recorded as the host's status, never raised to a
    caller."""
    status = 503
    code = codes.DISCOVERY_NOVA_PCI_WITHHELD
    msg_fmt = ('%(problems)s; fix Nova\'s [pci] device_spec (the devices '
               'of these ids stay withheld until it parses)')


class NoIOMMU(AccelBackendError):
    """Functions a passthrough driver would offer have no IOMMU group: the
    host's IOMMU is off, vfio-pci cannot assign them, and they are
    reported unhealthy.  Recorded as the host's status, never raised."""
    status = 503
    code = codes.DISCOVERY_NO_IOMMU
    msg_fmt = ('%(addresses)s: no IOMMU group (the IOMMU is off: enable '
               'VT-d or AMD-Vi in the firmware and intel_iommu=on or '
               'amd_iommu=on on the kernel command line); not offered')


class NoInterruptRemapping(AccelBackendError):
    """Functions a passthrough driver would offer sit on a host whose
    IOMMU does not remap interrupts (``agent.discovery.interrupts``): VFIO
    refuses to assign them, or, with vfio_iommu_type1's
    ``allow_unsafe_interrupts``, a guest could inject interrupts into the
    host; they are reported unhealthy.  Recorded as the host's status,
    never raised."""
    status = 503
    code = codes.DISCOVERY_NO_INTERRUPT_REMAPPING
    msg_fmt = ('%(addresses)s: no interrupt remapping (%(cause)s): VFIO '
               'refuses to assign them, or lets a guest inject interrupts '
               'with allow_unsafe_interrupts; not offered')
