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

"""Guest PCI slots for accelerator hostdevs: the controllers we add and
the guest ``<address>`` of each function.

A unit of several functions (a GPU and its HDMI audio function, which
vfio can only give to one guest together: ``nova_accel.virt.hostdev``,
``"functions"``) goes into one guest slot, keeping its function numbers
(renumbered from 0 when the host's function 0 is not in the unit: a
multi-function slot needs one), with ``multifunction='on'`` on function
0 (libvirt's domain XML format, "Device Addresses").  libvirt places
each hostdev in a slot of its own unless told, so we give the slot:

* Q35 (and ``virt``), PCI Express: a ``pcie-root-port`` of our own (its
  place on the root complex left to libvirt); the unit sits at slot 0
  of that port, the only slot a root port has;
* ``pc`` (i440FX): a ``pci-bridge`` of our own; units at slots 1..31
  (libvirt keeps slot 0 of a bridge).

``nova_accel.virt.libvirt.numa`` places units on a NUMA cell's expander
bus with the same :func:`address_unit`.  Controller indexes start after
the PCI controllers already in the guest config (Nova's ``pcie-root``
and root ports when ``[libvirt] num_pcie_ports`` is set).
"""

import copy

from lxml import etree
from nova.virt.libvirt import config as vconfig

#: Slots of a pci-bridge libvirt lets devices use.
BRIDGE_SLOTS = range(1, 32)


class ControllerConfig(vconfig.LibvirtConfigGuestDevice):
    """A composed ``<controller>`` element as a Nova guest device."""

    def __init__(self, element, **kwargs):
        super().__init__(root_name='controller', **kwargs)
        self._element = copy.deepcopy(element)

    @property
    def type(self):
        """The controller's ``type`` attribute (``'pci'``), or None."""
        return self._element.get('type')

    @property
    def index(self):
        """The controller's ``index`` (int).

        :raises TypeError: the element has no ``index``.
        """
        return int(self._element.get('index'))

    @property
    def model(self):
        """The controller's ``model`` (``'pcie-expander-bus'``...), or
        None."""
        return self._element.get('model')

    def format_dom(self):
        """A copy of the composed element (Nova's ``LibvirtConfigObject``
        contract: the caller may change it)."""
        return copy.deepcopy(self._element)


def controller(index, model, at=None):
    """A PCI ``<controller>`` element with ``index`` (int), ``model``
    and, when ``at`` is ``(bus, slot)``, its own guest address."""
    elem = etree.Element('controller', type='pci', index=str(index),
                         model=model)
    if at is not None:
        elem.append(pci_address(at[0], at[1], 0))
    return elem


def pci_address(bus, slot, function, multifunction=False):
    """A guest ``<address type='pci'>`` element (ints in, hex out)."""
    elem = etree.Element('address', type='pci', domain='0x0000',
                         bus='0x%02x' % bus, slot='0x%02x' % slot,
                         function='0x%x' % function)
    if multifunction:
        elem.set('multifunction', 'on')
    return elem


def is_pcie_machine(mach_type):
    """True for machine types whose root bus is PCI Express."""
    return bool(mach_type) and ('q35' in mach_type or
                                mach_type.startswith('virt'))


def next_index(guest):
    """The first free PCI controller index of a guest config (int >= 1:
    index 0 is the root bus, implicit when no controller is written)."""
    indexes, count = [], 0
    for dev in guest.devices:
        if getattr(dev, 'root_name', None) == 'controller' and \
                getattr(dev, 'type', None) == 'pci':
            count += 1
            if getattr(dev, 'index', None) is not None:
                indexes.append(int(dev.index))
    return max([count, 1] + [i + 1 for i in indexes])


def address_unit(elems, bus, slot):
    """Give the hostdevs of one unit their guest address in ``bus``,
    ``slot`` (in place).

    :param elems: list of composed ``<hostdev>`` elements of one host
        slot (one element: a function alone, guest function 0).
    :param bus: guest bus number (int, a controller index).
    :param slot: guest slot (int, 0..31).
    """
    host = [int(e.find('./source/address').get('function') or '0', 16)
            for e in elems]
    keep = 0 in host
    for number, (elem, function) in enumerate(zip(elems, host)):
        guest_function = function if keep else number
        elem.append(pci_address(bus, slot, guest_function,
                                multifunction=(len(elems) > 1 and
                                               guest_function == 0)))


def place(guest, units):
    """Give each multi-function unit without a guest address one slot.

    :param guest: the ``LibvirtConfigGuest`` being built (its
        ``os_mach_type`` and ``devices`` are read).
    :param units: list of lists of composed ``<hostdev>`` elements, one
        list per ARQ; single functions and units that already have a
        guest ``<address>`` (``numa.place``) are left alone.
    :returns: list of :class:`ControllerConfig` to add to the guest.
    """
    todo = [u for u in units
            if len(u) > 1 and u[0].find('address') is None]
    if not todo:
        return []
    index = next_index(guest)
    controllers = []
    if is_pcie_machine(guest.os_mach_type):
        for unit in todo:
            controllers.append(ControllerConfig(
                controller(index, 'pcie-root-port')))
            address_unit(unit, index, 0)
            index += 1
        return controllers
    for start in range(0, len(todo), len(BRIDGE_SLOTS)):
        controllers.append(ControllerConfig(controller(index, 'pci-bridge')))
        for slot, unit in zip(BRIDGE_SLOTS,
                              todo[start:start + len(BRIDGE_SLOTS)]):
            address_unit(unit, index, slot)
        index += 1
    return controllers
