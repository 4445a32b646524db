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

"""PCI addresses: one parser for their three spellings.

* sysfs and libvirt node devices: ``DDDD:BB:SS.F`` (lower-case hex), e.g.
  ``0000:af:00.0``, and ``pci_DDDD_BB_SS_F``;
* Cyborg's PCI ``attach_handle_info``: ``{"domain": "0000", "bus": "af",
  "device": "00", "function": "0"}`` (hex strings; openstack-cyborg
  17.0.0, ``cyborg/objects/attach_handle.py``);
* libvirt ``<address domain='0x0000' bus='0xaf' slot='0x00'
  function='0x0'/>`` (hex with ``0x``).

Ranges are the PCI ones: domain 16 bits, bus 8, slot (device) 5,
function 3.
"""

import collections
import re

#: ``(field, most hex digits, largest value)``.
FIELDS = (('domain', 4, 0xffff), ('bus', 2, 0xff), ('slot', 2, 0x1f),
          ('function', 1, 0x7))
#: Cyborg's ``attach_handle_info`` name of each field.
HANDLE_INFO_KEYS = {'domain': 'domain', 'bus': 'bus', 'slot': 'device',
                    'function': 'function'}
#: sysfs spelling (``/sys/bus/pci/devices/<address>``).
ADDRESS_RE = re.compile(
    r'^(?P<domain>[0-9a-f]{4}):(?P<bus>[0-9a-f]{2}):'
    r'(?P<slot>[0-1][0-9a-f])\.(?P<function>[0-7])$')
_HEX_RE = re.compile(r'^(?:0[xX])?([0-9a-fA-F]+)$')


class InvalidAddress(ValueError):
    """A PCI address (or one of its fields) that does not parse; ``str()``
    says which field and why."""


class Address(collections.namedtuple('Address',
                                     [f for f, _, _ in FIELDS])):
    """A PCI address as four ints; hashable, compares by value."""

    __slots__ = ()

    def __str__(self):
        return '%04x:%02x:%02x.%x' % self

    def handle_info(self):
        """Cyborg's PCI ``attach_handle_info`` (dict of hex strings)."""
        return {'domain': '%04x' % self.domain, 'bus': '%02x' % self.bus,
                'device': '%02x' % self.slot,
                'function': '%x' % self.function}

    def libvirt_attrs(self):
        """libvirt ``<address>`` attributes, in libvirt's order (list of
        ``(name, value)``)."""
        return [('domain', '0x%04x' % self.domain),
                ('bus', '0x%02x' % self.bus),
                ('slot', '0x%02x' % self.slot),
                ('function', '0x%x' % self.function)]

    def nodedev_name(self):
        """libvirt node device name ``pci_DDDD_BB_SS_F``."""
        return 'pci_%04x_%02x_%02x_%x' % self


def parse(text):
    """Parse the sysfs spelling ``DDDD:BB:SS.F``.

    :raises InvalidAddress: ``text`` is not one.
    """
    m = ADDRESS_RE.match(text) if isinstance(text, str) else None
    if m is None:
        raise InvalidAddress('%r is not a PCI address DDDD:BB:SS.F' %
                             (text,))
    return Address(*(int(m.group(f), 16) for f, _, _ in FIELDS))


def _field(name, raw, label):
    if not isinstance(raw, str):
        raise InvalidAddress('PCI %s must be a hexadecimal string, got %r'
                             % (label, raw))
    m = _HEX_RE.match(raw.strip())
    digits, maximum = next((d, x) for f, d, x in FIELDS if f == name)
    if not m or len(m.group(1)) > digits:
        raise InvalidAddress('PCI %s %r is not a hexadecimal number of at '
                             'most %d digits' % (label, raw, digits))
    value = int(m.group(1), 16)
    if value > maximum:
        raise InvalidAddress('PCI %s %r is out of range (max 0x%x)'
                             % (label, raw, maximum))
    return value


def from_fields(domain, bus, slot, function):
    """An address from four hex strings (``0x`` optional), as libvirt's
    ``<address>`` attributes.

    :raises InvalidAddress: naming the field that is not hex, too long or
        out of range.
    """
    return Address(*(_field(f, raw, f) for (f, _, _), raw in
                     zip(FIELDS, (domain, bus, slot, function))))


def from_handle_info(info):
    """An address from Cyborg's PCI ``attach_handle_info`` dict.

    :raises InvalidAddress: not a dict, a key missing, or a field bad (the
        message uses Cyborg's key names).
    """
    if not isinstance(info, dict):
        raise InvalidAddress('PCI attach_handle_info must be a dict, got %r'
                             % (info,))
    values = []
    for name, _, _ in FIELDS:
        key = HANDLE_INFO_KEYS[name]
        if key not in info:
            raise InvalidAddress('PCI attach_handle_info has no %r' % key)
        values.append(_field(name, info[key], key))
    return Address(*values)
