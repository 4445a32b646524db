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

"""Read PCI functions from a sysfs tree (no lspci parsing).

The root is ``[discovery] sysfs_root`` (``/sys/bus/pci/devices``): one
directory (or symlink) per function, named by its address
``DDDD:BB:SS.F``, holding the files ``vendor``, ``device``,
``subsystem_vendor``, ``subsystem_device``, ``class``, ``numa_node`` and
the links ``iommu_group``, ``driver`` and ``physfn`` (VFs only).  Tests
point the root at a recorded tree of plain files and relative links.
"""

import dataclasses
import os

from accel_backend import exception
from accel_common import pci


@dataclasses.dataclass(frozen=True)
class PCIFunction:
    """One PCI function as sysfs shows it.

    Ids are 4 lower-case hex digits without ``0x``; ``class_code`` is 6.
    ``numa_node`` is None when sysfs says -1; ``physfn`` is the PF address
    of an SR-IOV VF, else None.
    """

    address: str
    vendor_id: str
    product_id: str
    class_code: str
    subsystem_vendor_id: str = None
    subsystem_product_id: str = None
    numa_node: int = None
    iommu_group: str = None
    driver: str = None
    physfn: str = None
    #: The reset methods the kernel offers for the function
    #: (``reset_methods()``), a tuple of str; () when it offers none.
    reset_methods: tuple = ()

    @property
    def address_parts(self):
        """``{"domain", "bus", "device", "function"}`` as Cyborg's PCI
        attach handle info wants them (hex strings without ``0x``)."""
        return pci.parse(self.address).handle_info()


def read_value(path):
    """The stripped text of sysfs attribute file ``path`` (str), or None
    when it cannot be read (absent, or the kernel refuses)."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _hex(value, width):
    if not value:
        return None
    return value.lower().replace('0x', '').zfill(width)


def _link_name(path):
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def read_function(root, address):
    """Read one function's attributes.

    :param root: sysfs directory (str).
    :param address: PCI address ``DDDD:BB:SS.F``.
    :returns: ``PCIFunction``, or None when the entry is no PCI function
        (no readable ``vendor``/``device``).
    """
    base = os.path.join(root, address)
    vendor = _hex(read_value(os.path.join(base, 'vendor')), 4)
    product = _hex(read_value(os.path.join(base, 'device')), 4)
    if not vendor or not product:
        return None
    numa = read_value(os.path.join(base, 'numa_node'))
    numa_node = int(numa) if numa and numa.lstrip('-').isdigit() else None
    if numa_node is not None and numa_node < 0:
        numa_node = None
    return PCIFunction(
        address=address, vendor_id=vendor, product_id=product,
        class_code=_hex(read_value(os.path.join(base, 'class')), 6) or '',
        subsystem_vendor_id=_hex(
            read_value(os.path.join(base, 'subsystem_vendor')), 4),
        subsystem_product_id=_hex(
            read_value(os.path.join(base, 'subsystem_device')), 4),
        numa_node=numa_node,
        iommu_group=_link_name(os.path.join(base, 'iommu_group')),
        driver=_link_name(os.path.join(base, 'driver')),
        physfn=_link_name(os.path.join(base, 'physfn')),
        reset_methods=reset_methods(root, address))


def reset_methods(root, address):
    """The reset methods the kernel offers for a function, less a ``bus``
    reset it would refuse.

    Linux (``drivers/pci/pci-sysfs.c``, ``drivers/pci/pci.c``) creates a
    function's ``reset`` file, and since 5.15 its ``reset_method`` file
    (the enabled methods, by priority, e.g. ``flr bus``), only when some
    method exists: FLR, PM reset, a device-specific reset or a secondary
    bus reset the kernel allows.  Many GPUs have none (no FLR, or a quirk
    disabling bus reset).

    A ``bus`` reset is left out while another function shares the
    function's bus (``DDDD:BB`` of the address): the kernel resets a bus
    for one function only when it is alone there (Linux 6.1,
    ``drivers/pci/pci.c``, ``pci_parent_bus_reset`` and
    ``pci_dev_reset_slot_function``), and refuses the write to ``reset``
    otherwise.  It still lists ``bus`` for the first function it found on
    such a bus, because it probes the methods as it adds each function,
    before the next one: a GPU's function 0 beside its audio function,
    the first of two functions behind a PCIe-to-PCI bridge (seen on the
    nested compute node's Debian 6.1 kernel: ``0000:02:01.0`` lists
    ``bus``, ``0000:02:02.0`` nothing, and ``echo 1 > reset`` of the
    first fails with an I/O error).

    :param root: sysfs directory (str).
    :param address: PCI address ``DDDD:BB:SS.F``.
    :returns: tuple of method names from ``reset_method``; ``('reset',)``
        when only ``reset`` exists (kernels before 5.15 name no method);
        ``()`` when the kernel offers no reset it would carry out.
    """
    base = os.path.join(root, address)
    methods = read_value(os.path.join(base, 'reset_method'))
    if methods is None:
        return ('reset',) if os.path.exists(os.path.join(base, 'reset')) \
            else ()
    found = tuple(methods.split())
    if 'bus' in found and _shares_its_bus(root, address):
        found = tuple(m for m in found if m != 'bus')
    return found


def _shares_its_bus(root, address):
    """True when another function under ``root`` is on ``address``'s
    bus (the same ``DDDD:BB``)."""
    bus = address.rsplit(':', 1)[0] + ':'
    try:
        names = os.listdir(root)
    except OSError:
        return False
    return any(n.startswith(bus) and n != address for n in names)


def scan(root):
    """Every PCI function under ``root``, sorted by address.

    :param root: sysfs directory (str).
    :returns: list of ``PCIFunction``.
    :raises SysfsRootUnavailable: ``root`` is absent, not a directory or
        unreadable: never taken for a host without devices.
    """
    try:
        names = sorted(os.listdir(root))
    except OSError as e:
        raise exception.SysfsRootUnavailable(root=root,
                                             reason=e.strerror or str(e))
    functions = []
    for name in names:
        if not pci.ADDRESS_RE.match(name):
            continue
        fn = read_function(root, name)
        if fn is not None:
            functions.append(fn)
    return functions


@dataclasses.dataclass(frozen=True)
class MdevType:
    """One ``mdev_supported_types/<type_id>`` directory of a function.

    ``created`` counts the mediated devices of this type that exist
    already (``devices/``): they are part of the capacity, which sysfs's
    ``available_instances`` no longer includes.  ``max_instance`` is the
    number of such devices one physical GPU can hold when the vendor's
    ``description`` says it (NVIDIA's ``..., max_instance=8``), else None.
    """

    type_id: str
    name: str
    available_instances: int
    device_api: str
    created: int = 0
    max_instance: int = None

    @property
    def capacity(self):
        return self.available_instances + self.created


def mdev_types(root, address):
    """Mediated device types a function supports, sorted by type id.

    :returns: list of ``MdevType`` ([] when the function has no
        ``mdev_supported_types``); types whose ``available_instances``
        cannot be read are skipped.
    """
    base = os.path.join(root, address, 'mdev_supported_types')
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    found = []
    for type_id in names:
        tdir = os.path.join(base, type_id)
        avail = read_value(os.path.join(tdir, 'available_instances'))
        if avail is None or not avail.isdigit():
            continue
        try:
            created = len(os.listdir(os.path.join(tdir, 'devices')))
        except OSError:
            created = 0
        found.append(MdevType(
            type_id=type_id, name=read_value(os.path.join(tdir, 'name')) or
            type_id, available_instances=int(avail),
            device_api=read_value(os.path.join(tdir, 'device_api')) or '',
            created=created,
            max_instance=_max_instance(
                read_value(os.path.join(tdir, 'description')))))
    return found


def _max_instance(description):
    """``max_instance=<N>`` of an mdev type's ``description``
    (comma-separated ``key=value`` pairs), or None."""
    for part in (description or '').split(','):
        key, _, value = part.strip().partition('=')
        if key == 'max_instance' and value.isdigit():
            return int(value)
    return None


def fatal_aer_errors(root, address):
    """Count of fatal PCIe AER errors the kernel saw on a function
    (``aer_dev_fatal``'s ``TOTAL_ERR_FATAL``), None when not shown."""
    text = read_value(os.path.join(root, address, 'aer_dev_fatal'))
    if not text:
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == 'TOTAL_ERR_FATAL' and \
                parts[1].isdigit():
            return int(parts[1])
    return None


def config_space_gone(root, address):
    """True when the function answers config reads with all ones.

    A function that fell off the bus (a link down, a GPU that hung) still
    has its sysfs directory and its ``vendor`` file, which the kernel
    cached at enumeration; a read of its config space (the ``config``
    file, PCI Local Bus specification: a read no function claims returns
    all ones) gives ``0xffffffff`` for the vendor and device ids.

    :returns: bool; False when ``config`` cannot be read (recorded trees
        without it, or no permission: nothing is concluded).
    """
    try:
        with open(os.path.join(root, address, 'config'), 'rb') as f:
            head = f.read(4)
    except OSError:
        return False
    return head == b'\xff\xff\xff\xff'


def link(root, address):
    """The PCIe link of a function: ``(current, maximum)``, each a
    ``(speed, width)`` of the sysfs ``current_link_speed`` /
    ``current_link_width`` and ``max_link_speed`` / ``max_link_width``
    text (e.g. ``('16.0 GT/s PCIe', '16')``); None when the files are
    absent (not a PCIe function, or a recorded tree without them)."""
    base = os.path.join(root, address)
    values = [read_value(os.path.join(base, name)) for name in (
        'current_link_speed', 'current_link_width', 'max_link_speed',
        'max_link_width')]
    if None in values:
        return None
    return (values[0], values[1]), (values[2], values[3])


def slots(slots_root):
    """Physical slots: ``{"DDDD:BB:SS": slot name}`` from
    ``<slots_root>/<name>/address`` (``/sys/bus/pci/slots``, filled by the
    platform's hot-plug or ACPI slot drivers; the names are what the board
    prints, e.g. ``CPU2 SLOT2`` or ``7``).

    :param slots_root: directory (str); absent or unreadable: ``{}``
        (slots are optional information, many platforms publish none).
    """
    try:
        names = os.listdir(slots_root)
    except OSError:
        return {}
    found = {}
    for name in names:
        address = read_value(os.path.join(slots_root, name, 'address'))
        if address:
            # Either DDDD:BB:SS or BB:SS (domain 0000).
            address = address.lower()
            if address.count(':') == 1:
                address = '0000:' + address
            found[address] = name
    return found


def slot_of(slot_map, address):
    """The slot name of PCI function ``address`` (``DDDD:BB:SS.F``), or
    None; ``slot_map`` from ``slots()``."""
    return slot_map.get(address.rsplit('.', 1)[0])


def exists(root, address):
    """True when the function is (still) present under ``root``."""
    return os.path.isdir(os.path.join(root, address))


def reset_function(root, address):
    """Function level reset: write ``1`` to the function's ``reset``.

    The file must exist already (the kernel creates it only for
    functions that can be reset); it is never created.

    :raises OSError: no such function, no ``reset`` file, or the kernel
        refused the reset.
    """
    if not pci.ADDRESS_RE.match(address):
        raise OSError('not a PCI address: %r' % address)
    path = os.path.join(root, address, 'reset')
    fd = os.open(path, os.O_WRONLY)  # no O_CREAT: missing -> ENOENT
    try:
        os.write(fd, b'1')
    finally:
        os.close(fd)
