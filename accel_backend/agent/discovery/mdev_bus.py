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

"""Mediated-device parents that are not PCI functions, read from
``/sys/class/mdev_bus``.

The kernel links every device registered with the mdev core under
``/sys/class/mdev_bus/<name>`` (Linux 6.1,
``Documentation/driver-api/vfio-mediated-device.rst``).  A GPU's link
leads under ``/sys/devices/pci...`` and the PCI scan reads it; a virtual
parent's leads to ``/sys/devices/virtual/<class>/<name>``: the kernel's
``mtty`` sample (``samples/vfio-mdev/mtty.c``) registers
``/sys/devices/virtual/mtty/mtty``, offering ``mtty-1`` (24 instances)
and ``mtty-2`` (12).  libvirt 9.0 names such a parent node device
``<class>_<name>`` (``mtty_mtty``, the form Nova 34's ``[mdev_<type>]
device_addresses`` accepts for it, ``nova/virt/libvirt/driver.py``
``_validate_device_address``) and each of its mediated devices
``mdev_<uuid, '-' as '_'>_<name>`` with ``<parent_addr>`` ``<name>``
(seen with ``virsh nodedev-dumpxml`` on the nested compute node).
"""

import dataclasses
import os
import re

from accel_backend.agent.discovery import sysfs

#: ``[mdev_<type>] device_addresses`` values naming a virtual parent
#: (``mtty_mtty``) rather than a PCI address pattern (which has a ``:``).
_NAME_RE = re.compile(r'[a-z][a-z0-9-]*_[A-Za-z0-9_.-]+')


def is_parent_name(value):
    """Whether ``value`` (str) is a virtual parent's node device name
    (``mtty_mtty``), not a PCI address pattern."""
    return bool(_NAME_RE.fullmatch(value))


def default_path(sysfs_root):
    """``class/mdev_bus`` of the sysfs whose PCI functions are under
    ``sysfs_root`` (``/sys/bus/pci/devices`` -> ``/sys/class/mdev_bus``).
    """
    sys_dir = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.normpath(sysfs_root))))
    return os.path.join(sys_dir, 'class', 'mdev_bus')


@dataclasses.dataclass(frozen=True)
class VirtualParent:
    """One virtual mdev parent.

    :ivar name: libvirt's node device name (``mtty_mtty``).
    :ivar parent_addr: the device's own name, libvirt's ``parent_addr``
        of its mediated devices (``mtty``).
    :ivar path: the device's directory (str).
    :ivar types: its ``sysfs.MdevType`` list, sorted by type id.
    """

    name: str
    parent_addr: str
    path: str
    types: tuple


def virtual_parents(mdev_bus):
    """The virtual parents under ``mdev_bus`` (the ``class/mdev_bus``
    directory), sorted by name; PCI parents and entries whose types
    cannot be read are left out.

    :returns: list of ``VirtualParent`` ([] when the directory is
        missing: no mdev core loaded).
    """
    try:
        entries = sorted(os.listdir(mdev_bus))
    except OSError:
        return []
    found = []
    for entry in entries:
        real = os.path.realpath(os.path.join(mdev_bus, entry))
        klass = os.path.dirname(real)
        if os.path.basename(os.path.dirname(klass)) != 'virtual':
            continue
        types = sysfs.mdev_types(mdev_bus, entry)
        if types:
            found.append(VirtualParent(
                name='%s_%s' % (os.path.basename(klass),
                                os.path.basename(real)),
                parent_addr=os.path.basename(real), path=real,
                types=tuple(types)))
    return found
