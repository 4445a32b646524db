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

"""Put accelerator hostdevs on the guest NUMA node of their host device.

A guest with a NUMA topology (``hw:numa_nodes``, ``hw:cpu_policy=dedicated``
...) has its cells placed on host NUMA nodes; Nova writes that placement
as ``<numatune><memnode cellid='G' nodeset='H'/>``.  A passed-through GPU
sits on one host NUMA node; unless the guest is told, the guest OS sees it
on the default PCI root bus, which belongs to no NUMA node (or to node 0),
and schedules the GPU's work and memory without regard to locality.

libvirt expresses device locality with a PCI expander bus attached to a
guest NUMA node (``<target><node>G</node></target>``):

* Q35 (and ``virt``) machines, PCI Express: ``pcie-expander-bus``; only
  root ports plug into it, so each hostdev gets its own ``pcie-root-port``
  on the expander and sits at slot 0 of that port::

    <controller type='pci' index='1' model='pcie-expander-bus'>
      <target><node>1</node></target>
    </controller>
    <controller type='pci' index='2' model='pcie-root-port'>
      <address type='pci' domain='0x0000' bus='0x01' slot='0x00'
               function='0x0'/>
    </controller>
    <hostdev ...><source>...</source>
      <address type='pci' domain='0x0000' bus='0x02' slot='0x00'
               function='0x0'/>
    </hostdev>

* ``pc`` (i440FX, Nova's default on x86_64): ``pci-expander-bus``; the
  hostdevs plug straight into its slots.

Nova 34 itself has no such code: its ``hw:pci_numa_affinity_policy`` only
decides which host NUMA nodes a guest may use with its PCI devices, never
where a device appears inside the guest.

The host NUMA node of a device comes from the ARQ's attach handle
(``attach_handle_info['numa_node']``, when the accelerator service gives
it) or else from libvirt's node device (``pci_DDDD_BB_SS_F``, ``<numa
node='N'/>``), the source Nova uses for its own PCI devices.  A device
whose host node carries no cell of this guest, or whose node is unknown,
stays where libvirt puts it by default.

Controller indexes start after the PCI controllers already in the guest
config (Nova's ``pcie-root`` and root ports when ``[libvirt]
num_pcie_ports`` is set); ``busNr`` is left to libvirt.
"""

import collections

from lxml import etree
from oslo_log import log as logging

from accel_common import pci
from nova_accel.virt.libvirt import slots

LOG = logging.getLogger(__name__)

#: Slots of one expander bus (PCI: 32 slots of which we use 0..31).
SLOTS_PER_BUS = 32


def guest_cells_by_host_node(guest):
    """``{host NUMA node: guest cell id}`` of a guest config.

    :param guest: ``LibvirtConfigGuest`` as built by Nova's
        ``_get_guest_config`` (``numatune`` set for NUMA guests).
    :returns: dict; empty when the guest has no NUMA topology or no
        host placement.  A host node holding several guest cells maps to
        the lowest cell id.
    """
    numatune = getattr(guest, 'numatune', None)
    cpu = getattr(guest, 'cpu', None)
    if numatune is None or cpu is None or getattr(cpu, 'numa', None) is None:
        return {}
    cells = {}
    for memnode in sorted(numatune.memnodes or [],
                          key=lambda m: m.cellid):
        for node in memnode.nodeset or []:
            cells.setdefault(int(node), int(memnode.cellid))
    return cells


def nodedev_name(info):
    """libvirt node device name ``pci_DDDD_BB_SS_F`` of a PCI handle."""
    return pci.from_handle_info(info).nodedev_name()


def nodedev_numa_node(xml):
    """NUMA node of a libvirt PCI node device XML, None when unknown."""
    numa = etree.fromstring(xml).find('./capability[@type="pci"]/numa')
    if numa is None:
        return None
    return _node_or_none(numa.get('node'))


def _node_or_none(value):
    try:
        node = int(value)
    except (TypeError, ValueError):
        return None
    return node if node >= 0 else None


def host_numa_node(arq, lookup=None):
    """Host NUMA node of a PCI ARQ's device.

    :param arq: bound ARQ dict with a PCI ``attach_handle_info``.
    :param lookup: callable ``(nodedev_name) -> node or None`` asked when
        the attach handle carries no ``numa_node``.
    :returns: int >= 0, or None when unknown (``-1`` means no affinity).
    """
    info = arq.get('attach_handle_info') or {}
    if 'numa_node' in info:
        return _node_or_none(info['numa_node'])
    if lookup is None:
        return None
    try:
        return lookup(nodedev_name(info))
    except Exception as e:  # a device libvirt does not know
        LOG.debug('No NUMA node for accelerator %s: %s', arq.get('uuid'), e)
        return None


def slot_arq(unit):
    """A stand-in ARQ for one host slot of a multi-slot unit, whose
    attach handle names that slot's first function (so that
    :func:`host_numa_node` looks up that function's node, not the
    handle's).

    :param unit: list of composed ``<hostdev>`` elements of one host slot.
    :returns: dict with a PCI ``attach_handle_info``.
    """
    source = unit[0].find('./source/address')
    address = pci.from_fields(*(source.get(k) for k in (
        'domain', 'bus', 'slot', 'function')))
    return {'attach_handle_type': 'PCI',
            'attach_handle_info': address.handle_info()}


def place(guest, hostdevs):
    """Attach hostdevs to expander buses on their guest NUMA cells.

    :param guest: the ``LibvirtConfigGuest`` being built; its
        ``os_mach_type``, ``numatune``, ``cpu`` and ``devices`` are read.
    :param hostdevs: list of ``(unit, host NUMA node or None)``, a unit
        being the list of composed ``<hostdev>`` elements of one ARQ (one
        guest slot: ``slots.address_unit``); the elements placed get a
        guest ``<address>`` (in place).
    :returns: list of ``slots.ControllerConfig`` to add to the guest
        (empty when nothing is placed).
    """
    cells = guest_cells_by_host_node(guest)
    if not cells:
        return []
    by_cell = collections.OrderedDict()
    for unit, node in hostdevs:
        cell = cells.get(node) if node is not None else None
        if cell is None:
            if node is not None:
                LOG.info('Accelerator on host NUMA node %s: no guest cell '
                         'is on that node, leaving it on the root bus',
                         node)
            continue
        by_cell.setdefault(cell, []).append(unit)
    pcie = slots.is_pcie_machine(guest.os_mach_type)
    index = slots.next_index(guest)
    controllers = []
    for cell in sorted(by_cell):
        for start in range(0, len(by_cell[cell]), SLOTS_PER_BUS):
            bus = index
            index += 1
            expander = slots.controller(
                bus, 'pcie-expander-bus' if pcie else 'pci-expander-bus')
            etree.SubElement(etree.SubElement(expander, 'target'),
                             'node').text = str(cell)
            controllers.append(slots.ControllerConfig(expander))
            units = by_cell[cell][start:start + SLOTS_PER_BUS]
            for slot, unit in enumerate(units):
                if pcie:
                    controllers.append(slots.ControllerConfig(
                        slots.controller(index, 'pcie-root-port',
                                         at=(bus, slot))))
                    slots.address_unit(unit, index, 0)
                    index += 1
                else:
                    slots.address_unit(unit, bus, slot)
    return controllers
