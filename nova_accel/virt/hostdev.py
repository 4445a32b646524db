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

"""Compose libvirt ``<hostdev>`` elements from Cyborg-style attach handles.

Upstream contract (nova-cyborg-interaction spec, "The Nova virt driver uses
the attach handles to generate the necessary XML"): once an accelerator
request (ARQ) is ``Bound`` it carries an attach handle, and the virt driver
turns it into guest configuration.  The handle shapes (openstack-cyborg
17.0.0, ``cyborg/objects/attach_handle.py`` and its drivers):

* ``PCI``: ``attach_handle_info`` is ``{"domain": "0000", "bus": "af",
  "device": "00", "function": "0"}``: hexadecimal strings, optionally
  prefixed with ``0x``.  Becomes::

    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source>
        <address domain='0x0000' bus='0xaf' slot='0x00' function='0x0'/>
      </source>
    </hostdev>

  ``managed='no'`` when the info says ``"managed": "no"``: a function
  that must stay on its host driver, such as an NVIDIA VF carrying a vGPU
  of the vendor-specific VFIO framework (accel_backend's ``nvidia_vgpu``
  driver; NVIDIA vGPU user guide).  Nova's own libvirt driver ignores the
  key and would detach the VF from ``nvidia``.

  ``"functions": "0,1"`` in the info names the functions of the
  handle's slot that go to the guest with it, as one unit (a GPU and
  its HDMI audio function, which share an IOMMU group: vfio can only
  give the whole group to one guest; accel_backend's
  ``agent.discovery.iommu``).  :func:`compose_unit` writes one ``<hostdev>``
  per function; :mod:`nova_accel.virt.libvirt.slots` gives them one
  guest slot.  Nova's own libvirt driver ignores the key and assigns
  the handle's function alone.

  ``"addresses": "0000:05:00.0,0000:18:00.0,..."`` names every function
  of a unit that spans several host slots, the handle's own included:
  an NVIDIA HGX board in full-passthrough mode, whose GPUs and
  NVSwitches go to one guest (accel_backend's ``common.hgx``).
  :func:`compose_slots` writes one ``<hostdev>`` per address, grouped
  by host slot; a slot's functions share a guest slot as above.

* ``MDEV``: ``attach_handle_uuid`` is the mediated device UUID (the parent
  PCI address and ``asked_type`` are in ``attach_handle_info``; creating the
  mdev is the driver's job, not this module's).  Becomes::

    <hostdev mode='subsystem' type='mdev' managed='no' model='vfio-pci'>
      <source><address uuid='...'/></source>
    </hostdev>

* types listed in ``[nova_accel] ignored_attach_handle_types`` (default
  ``TEST_PCI``, what fake accelerator drivers report) compose to ``None``
  and are logged at info level.

Anything else raises :class:`~nova_accel.virt.exception.InvalidAttachHandle`.

The elements are written by Nova's own ``LibvirtConfigGuestHostdevPCI`` and
``LibvirtConfigGuestHostdevMDEV`` (nova 34.0.0,
``nova/virt/libvirt/config.py``); this module validates the handle first
(:mod:`accel_common.pci`) and keeps the result as an element, not as Nova's
object, because :mod:`nova_accel.virt.libvirt.numa` adds the guest-side
``<address type='pci'>`` that places a device on its NUMA cell's
expander bus, which Nova's classes do not write.
"""

import copy
import uuid

from lxml import etree
from nova.virt.libvirt import config as vconfig
from oslo_log import log as logging

from accel_common import pci
import nova_accel.conf
from nova_accel.virt import exception

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF

PCI = 'PCI'
MDEV = 'MDEV'


FUNCTIONS_KEY = 'functions'
#: PCI attach handle key naming every function of a multi-slot unit
#: (accel_backend's ``common.hgx.ADDRESSES_KEY``; this package does
#: not import accel_backend).
ADDRESSES_KEY = 'addresses'


def unit_functions(arq):
    """The functions of a PCI ARQ's slot that go to the guest together.

    :param arq: ARQ dict with a PCI ``attach_handle_info``.
    :returns: sorted list of ints (0..7) that holds the handle's own
        ``function``: ``[function]`` without ``"functions"`` in the info.
    :raises InvalidAttachHandle: a malformed address, or ``"functions"``
        that is not a comma-separated list of distinct hex digits 0..7
        holding the handle's own function.
    """
    info = arq.get('attach_handle_info')
    try:
        own = int(pci.from_handle_info(info).function)
    except pci.InvalidAddress as e:
        raise exception.InvalidAttachHandle(arq.get('uuid'), str(e))
    raw = info.get(FUNCTIONS_KEY)
    if raw is None:
        return [own]
    parts = raw.split(',') if isinstance(raw, str) else []
    try:
        found = sorted({int(p, 16) for p in parts})
    except ValueError:
        found = []
    if (len(found) != len(parts) or own not in found or
            not all(0 <= f <= 7 for f in found)):
        raise exception.InvalidAttachHandle(
            arq.get('uuid'), 'PCI attach_handle_info functions must list '
            'distinct functions 0-7 of the slot, the handle\'s own %d '
            'included, got %r' % (own, raw))
    return found


def unit_addresses(arq):
    """Every function of a PCI ARQ's multi-slot unit.

    :param arq: ARQ dict with a PCI ``attach_handle_info``.
    :returns: list of ``accel_common.pci.Address``, sorted, the handle's
        own included; ``[]`` without ``"addresses"`` in the info.
    :raises InvalidAttachHandle: a malformed handle address; an
        ``"addresses"`` value that is not a comma-separated list of
        distinct PCI addresses ``DDDD:BB:SS.F`` holding the handle's own;
        or ``"addresses"`` together with ``"functions"`` (a multi-slot
        unit lists each function itself).
    """
    info = arq.get('attach_handle_info')
    try:
        own = pci.from_handle_info(info)
    except pci.InvalidAddress as e:
        raise exception.InvalidAttachHandle(arq.get('uuid'), str(e))
    raw = info.get(ADDRESSES_KEY)
    if raw is None:
        return []
    if FUNCTIONS_KEY in info:
        raise exception.InvalidAttachHandle(
            arq.get('uuid'), 'PCI attach_handle_info has both %r and %r: '
            'a multi-slot unit lists each of its functions in %r'
            % (ADDRESSES_KEY, FUNCTIONS_KEY, ADDRESSES_KEY))
    parts = raw.split(',') if isinstance(raw, str) else []
    try:
        found = sorted({pci.parse(p) for p in parts})
    except pci.InvalidAddress as e:
        raise exception.InvalidAttachHandle(
            arq.get('uuid'), 'PCI attach_handle_info %s: %s'
            % (ADDRESSES_KEY, e))
    if len(found) != len(parts) or own not in found:
        raise exception.InvalidAttachHandle(
            arq.get('uuid'), 'PCI attach_handle_info %s must list distinct '
            'PCI addresses, the handle\'s own %s included, got %r'
            % (ADDRESSES_KEY, own, raw))
    return found


def _compose_pci(arq, function=None, address=None):
    if address is None:
        try:
            address = pci.from_handle_info(arq.get('attach_handle_info'))
        except pci.InvalidAddress as e:
            raise exception.InvalidAttachHandle(arq.get('uuid'), str(e))
    managed = arq['attach_handle_info'].get('managed', 'yes')
    if managed not in ('yes', 'no'):
        raise exception.InvalidAttachHandle(
            arq.get('uuid'), 'PCI attach_handle_info managed must be "yes" '
            'or "no", got %r' % (managed,))
    dev = vconfig.LibvirtConfigGuestHostdevPCI()
    dev.domain, dev.bus, dev.slot, dev.function = (
        value for _, value in address.libvirt_attrs())
    if function is not None:
        dev.function = '0x%x' % function
    dev.managed = managed
    return dev.format_dom()


def _compose_mdev(arq):
    arq_uuid = arq.get('uuid')
    raw = arq.get('attach_handle_uuid')
    if not isinstance(raw, str):
        raise exception.InvalidAttachHandle(
            arq_uuid, 'MDEV attach_handle_uuid must be a UUID string, got %r'
            % (raw,))
    try:
        mdev_uuid = str(uuid.UUID(raw))
    except ValueError:
        raise exception.InvalidAttachHandle(
            arq_uuid, 'MDEV attach_handle_uuid %r is not a UUID' % raw)
    dev = vconfig.LibvirtConfigGuestHostdevMDEV()
    dev.uuid = mdev_uuid
    return dev.format_dom()


_COMPOSERS = {PCI: _compose_pci, MDEV: _compose_mdev}


def compose_hostdev(arq):
    """Compose the libvirt ``<hostdev>`` element for one bound ARQ.

    :param arq: an ARQ dict as returned by the accelerator service
        (``GET /v2/accelerator_requests``), in state ``Bound``; the keys used
        are ``uuid``, ``attach_handle_type``, ``attach_handle_info`` (PCI:
        dict of hex strings ``domain``/``bus``/``device``/``function``) and
        ``attach_handle_uuid`` (MDEV).
    :returns: a new ``lxml.etree._Element`` (``<hostdev>``), or ``None`` when
        the handle type is in ``[nova_accel] ignored_attach_handle_types``.
    :raises InvalidAttachHandle: unknown handle type, missing or malformed
        info, PCI domain > 0xffff (4 hex digits), bus > 0xff (2 hex
        digits), device (slot) > 0x1f, function > 7, or an MDEV handle UUID
        that is not a UUID.
    """
    arq_uuid = arq.get('uuid')
    ah_type = arq.get('attach_handle_type')
    if ah_type in CONF.nova_accel.ignored_attach_handle_types:
        LOG.info('Ignoring accelerator request %(arq)s: attach handle type '
                 '%(type)s is in [nova_accel] ignored_attach_handle_types',
                 {'arq': arq_uuid, 'type': ah_type})
        return None
    composer = _COMPOSERS.get(ah_type)
    if composer is None:
        raise exception.InvalidAttachHandle(
            arq_uuid, 'unsupported attach_handle_type %r (supported: %s)'
            % (ah_type, ', '.join(sorted(_COMPOSERS))))
    if ah_type == PCI and len(unit_functions(arq)) > 1:
        raise exception.InvalidAttachHandle(
            arq_uuid, 'its device is a unit of functions %s of one slot, '
            'which go to a guest together when it starts: it cannot be '
            'hot-plugged (stop the server, then add it)'
            % arq['attach_handle_info'][FUNCTIONS_KEY])
    if ah_type == PCI and len(unit_addresses(arq)) > 1:
        raise exception.InvalidAttachHandle(
            arq_uuid, 'its device is a unit of %d functions in several '
            'slots (an HGX board), which go to a guest together when it '
            'starts: it cannot be hot-plugged (stop the server, then add '
            'it)' % len(unit_addresses(arq)))
    return composer(arq)


def compose_slots(arq):
    """Compose every ``<hostdev>`` of one bound ARQ, grouped by host
    slot: one element per function of its unit (:func:`unit_functions`
    for one slot, :func:`unit_addresses` for several), in address order.

    :param arq: an ARQ dict (see :func:`compose_hostdev`).
    :returns: list of lists of ``lxml.etree._Element``, one list per host
        slot (the functions that share one guest slot:
        ``nova_accel.virt.libvirt.slots``); ``[]`` for an ignored handle
        type; ``[[element]]`` for anything but a multi-function PCI
        handle.
    :raises InvalidAttachHandle: as :func:`compose_hostdev`,
        :func:`unit_functions` and :func:`unit_addresses`, except that a
        unit is composed whole.
    """
    if (arq.get('attach_handle_type') == PCI and
            arq.get('attach_handle_type') not in
            CONF.nova_accel.ignored_attach_handle_types):
        addresses = unit_addresses(arq)
        if addresses:
            by_slot = {}
            for address in addresses:
                by_slot.setdefault(address[:3], []).append(
                    _compose_pci(arq, address=address))
            return list(by_slot.values())
        functions = unit_functions(arq)
        if len(functions) > 1:
            return [[_compose_pci(arq, f) for f in functions]]
    elem = compose_hostdev(arq)
    return [] if elem is None else [[elem]]


def compose_unit(arq):
    """Every ``<hostdev>`` of one bound ARQ (:func:`compose_slots`,
    flattened), in address order.

    :returns: list of ``lxml.etree._Element``.
    :raises InvalidAttachHandle: as :func:`compose_slots`.
    """
    return [elem for unit in compose_slots(arq) for elem in unit]


def compose_hostdevs(arqs):
    """Compose the ``<hostdev>`` elements for a list of bound ARQs to
    hot-plug: one per ARQ.

    :param arqs: iterable of ARQ dicts (see :func:`compose_hostdev`).
    :returns: list of ``lxml.etree._Element``, in ARQ order, ignored handle
        types left out.
    :raises InvalidAttachHandle: as :func:`compose_hostdev` (a
        multi-function unit included), for the first bad ARQ; nothing is
        returned then.
    """
    elements = []
    for arq in arqs or []:
        elem = compose_hostdev(arq)
        if elem is not None:
            elements.append(elem)
    return elements


def to_string(elem):
    """Serialize a composed element to a unicode XML string (no pretty print).

    :param elem: an ``lxml.etree._Element``.
    :returns: str, e.g. ``<hostdev mode="subsystem" ...>...</hostdev>``.
    """
    return etree.tostring(elem, encoding='unicode')


class HostdevConfig(vconfig.LibvirtConfigGuestDevice):
    """A composed ``<hostdev>`` usable as a Nova libvirt guest device.

    Lets Nova's own code ``guest.add_device()`` the element and serialize it
    with the rest of the domain through ``LibvirtConfigGuest.to_xml()``.
    Each ``format_dom()`` call returns a deep copy, so the guest XML built by
    Nova can never modify the stored element.

    :param element: an ``lxml.etree._Element`` whose tag is ``hostdev``
        (as returned by :func:`compose_hostdev`).
    :raises ValueError: the element is not a ``<hostdev>``.
    """

    def __init__(self, element, **kwargs):
        if element is None or element.tag != 'hostdev':
            raise ValueError('HostdevConfig needs a <hostdev> element, got %r'
                             % (element,))
        super().__init__(root_name='hostdev', **kwargs)
        self._element = copy.deepcopy(element)

    @classmethod
    def from_arq(cls, arq):
        """Compose the device for ``arq``; ``None`` for ignored types.

        :raises InvalidAttachHandle: as :func:`compose_hostdev`.
        """
        elem = compose_hostdev(arq)
        return None if elem is None else cls(elem)

    def format_dom(self):
        """Return a deep copy of the wrapped ``<hostdev>`` element."""
        return copy.deepcopy(self._element)
