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

"""PCI addresses: one parser for their three spellings; and PCI vendor
and device (product) ids: one parser for them too (``parse_id``).

* sysfs and libvirt node devices: ``DDDD:BB:SS.F`` (lower-case hex), e.g.
  ``0000:af:00.0``, and ``pci_DDDD_BB_SS_F``;
* Cyborg's PCI ``attach_handle_info``: ``{"domain": "0000", "bus": "af",
  "device": "00", "function": "0"}`` (hex strings; openstack-cyborg
  17.0.0, ``cyborg/objects/attach_handle.py``);
* libvirt ``<address domain='0x0000' bus='0xaf' slot='0x00'
  function='0x0'/>`` (hex with ``0x``).

Ranges are the PCI ones: domain 16 bits, bus 8, slot (device) 5,
function 3.

Address patterns (``compile_pattern``), one dialect for every option that
selects functions by address: ``[discovery] device_spec`` ``"address"``,
``[mdev_<type>] device_addresses`` and Nova's own ``[pci] device_spec``
read without Nova.  It is Nova's (Nova 34, ``nova/pci/devspec.py``,
``PciAddressGlobSpec`` and ``PciAddressRegexSpec``):

* a string ``[[[domain]:]bus:][slot][.[function]]``: each field is a hex
  number (``0x`` optional, any case, at most the field's largest value)
  or ``*``; a field left out or empty is ``*`` (``0000:af:*`` is bus
  ``af`` of domain 0, ``:e3:`` is bus ``e3`` of any domain,
  ``*:ca:00.*`` every function of slot ``ca:00``).  A ``*`` stands for a
  whole field only: ``0000:af:0*`` is not in the dialect;
* an object ``{"domain", "bus", "slot", "function"}`` of regular
  expressions, each matched from the start of the field's lower-case hex
  digits, zero-padded (``0000``, ``af``, ``00``, ``0``): ``"bus": "8"``
  selects buses 80 to 8f; a field left out matches any; other keys are
  ignored, as Nova ignores them.

Former shell globs (``fnmatch``), for the options that took them
(``legacy_globs=True``): a string outside the dialect that only uses hex
digits, ``:``, ``.`` and the glob characters ``* ? [ ] !`` keeps its
shell-glob meaning over the whole ``DDDD:BB:SS.F`` text, with a
deprecation warning; so does ``DDDD:*`` (and ``DDDD:*.F``), which the
dialect reads as bus ``DDDD`` and the glob as domain ``DDDD``.
"""

import collections
import fnmatch
import re

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

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


#: Largest PCI vendor or device (product) id: 16 bits.
MAX_ID = 0xffff


class InvalidId(ValueError):
    """A PCI vendor or device id that does not parse; ``str()`` says
    which and why."""


def parse_id(value, what='PCI id', digits=None):
    """A PCI vendor or device (product) id as an int.

    The one reading of such ids in nova-accel: hex digits, ``0x`` or
    ``0X`` optional, any case, surrounding whitespace ignored, at most
    ``MAX_ID``.  That is how Nova reads the ``vendor_id`` and
    ``product_id`` of ``[pci] device_spec`` (Nova 34,
    ``nova/pci/devspec.py``, ``PciDeviceSpec._set_pci_dev_info``: the
    stripped value through ``int(value, 16)``, at most ``0xffff``), less
    the signs and digit-group underscores ``int`` also takes; sysfs writes
    ids as ``0x10de``.

    :param value: str, e.g. ``'10de'``, ``'0x10DE'``.
    :param what: the id's name for messages (str, e.g. ``'vendor_id'``).
    :param digits: the exact number of hex digits required (int), or None
        for any number.
    :returns: int, 0 to ``MAX_ID``.
    :raises InvalidId: not a str, not hex, not ``digits`` digits, or
        above ``MAX_ID``.
    """
    m = _HEX_RE.match(value.strip()) if isinstance(value, str) else None
    if m is None or (digits is not None and len(m.group(1)) != digits):
        raise InvalidId('%s %r is not %s' % (
            what, value, 'a hexadecimal number' if digits is None else
            'a hexadecimal number of %d digits' % digits))
    ident = int(m.group(1), 16)
    if ident > MAX_ID:
        raise InvalidId('%s %r is out of range (max 0x%x)' % (
            what, value, MAX_ID))
    return ident


def id_text(ident):
    """The spelling of a PCI id (int) in sysfs, pci.ids and specs:
    four lower-case hex digits, ``'10de'``."""
    return '%04x' % ident


class InvalidPattern(ValueError):
    """An address pattern outside the dialect; ``str()`` names the option,
    the pattern and what is wrong with it."""

    def __init__(self, option, pattern, reason):
        super().__init__('%s: PCI address pattern %r: %s' %
                         (option, pattern, reason))


#: ``pattern`` of a field that matches any value.
ANY = None
#: Regular expression of a dict-form field left out.
_REGEX_ANY = '.*'
_GLOB_CHARS = re.compile(r'^[0-9a-fA-F:.*?\[\]!-]+$')
# The one shape in the dialect that a shell glob read otherwise (the glob
# matched it against the domain, the dialect against the bus).
_AMBIGUOUS = re.compile(r'^[0-9a-f]{4}:\*(?:\.(?:\*|[0-7]))?$')
_WARNED = set()
#: Zero-padded lower-case hex of each field, as the object form matches
#: it.
_HEX_FORMAT = {'domain': '%04x', 'bus': '%02x', 'slot': '%02x',
               'function': '%x'}


class AddressPattern:
    """A compiled address pattern (see the module for the dialect).

    Build it with ``compile_pattern``.  Attributes: ``text`` (the pattern
    as configured, str or dict), ``option`` (str, for messages), ``kind``
    (``'glob'``: the string form, ``'regex'``: the object form,
    ``'fnmatch'``: a former shell glob).
    """

    def __init__(self, text, option, kind, fields=None, glob=None):
        self.text = text
        self.option = option
        self.kind = kind
        self._fields = fields
        self._glob = glob

    def __repr__(self):
        return 'AddressPattern(%r, kind=%r)' % (self.text, self.kind)

    def matches(self, address):
        """True when ``address`` is selected.

        :param address: an ``Address`` or its sysfs spelling (str).
        :raises InvalidAddress: ``address`` is a str that does not parse.
        """
        if not isinstance(address, Address):
            address = parse(address)
        if self.kind == 'fnmatch':
            return self._glob.match(str(address)) is not None
        if self.kind == 'regex':
            return all(rx.match(_HEX_FORMAT[f] % getattr(address, f))
                       for f, rx in self._fields.items())
        return all(want is ANY or want == getattr(address, f)
                   for f, want in self._fields.items())


def _glob_field(option, pattern, name, raw):
    """One field of the string form: ``ANY`` or its value (int)."""
    raw = raw.strip()
    if raw in ('', '*'):
        return ANY
    maximum = next(x for f, _, x in FIELDS if f == name)
    m = _HEX_RE.match(raw)
    if m is None:
        raise InvalidPattern(option, pattern, '%s %r is neither a hex '
                             'number nor *' % (name, raw))
    value = int(m.group(1), 16)
    if value > maximum:
        raise InvalidPattern(option, pattern, '%s %r is out of range (max '
                             '0x%x)' % (name, raw, maximum))
    return value


def _compile_glob(option, pattern):
    dbs, _, func = pattern.partition('.')
    parts = dbs.split(':') if dbs else []
    if len(parts) > 3:
        raise InvalidPattern(option, pattern, 'more than three fields '
                             'before the function (domain:bus:slot.'
                             'function)')
    parts = [''] * (3 - len(parts)) + parts + [func]
    fields = {name: _glob_field(option, pattern, name, raw)
              for (name, _, _), raw in zip(FIELDS, parts)}
    return AddressPattern(pattern, option, 'glob', fields=fields)


def _compile_regex(option, pattern):
    fields = {}
    for name, _, _ in FIELDS:
        raw = pattern.get(name, _REGEX_ANY)
        if not isinstance(raw, str):
            raise InvalidPattern(option, pattern, '%s must be a regular '
                                 'expression (a string), got %r' %
                                 (name, raw))
        try:
            fields[name] = re.compile(raw)
        except re.error as e:
            raise InvalidPattern(option, pattern, 'bad %s regular '
                                 'expression %r: %s' % (name, raw, e))
    return AddressPattern(pattern, option, 'regex', fields=fields)


def _compile_fnmatch(option, pattern, why):
    key = (option, pattern)
    if key not in _WARNED:
        _WARNED.add(key)
        LOG.warning('%s: PCI address pattern %r is read as a shell glob, '
                    'which is deprecated (%s); write it in Nova\'s [pci] '
                    'device_spec address syntax, domain:bus:slot.function '
                    'with * for a whole field, or as an object of regular '
                    'expressions', option, pattern, why)
    return AddressPattern(pattern, option, 'fnmatch',
                          glob=re.compile(fnmatch.translate(pattern)))


def compile_pattern(pattern, option, legacy_globs=False):
    """Compile an address pattern (the dialect: see the module).

    Contract: the address syntax of Nova's ``[pci] device_spec`` (Nova 34,
    ``nova/pci/devspec.py``: ``PciAddressGlobSpec`` for a string,
    ``PciAddressRegexSpec`` for a dict).

    :param pattern: str (string form) or dict (object form).
    :param option: the option it comes from, for messages (str, e.g.
        ``'[mdev_nvidia-222] device_addresses'``).
    :param legacy_globs: True for the options that took shell globs:
        those keep their meaning, with a deprecation warning logged once
        per option and pattern (see the module).
    :returns: ``AddressPattern``.
    :raises InvalidPattern: outside the dialect (and, with
        ``legacy_globs``, no former glob either), naming ``option``.
    """
    if isinstance(pattern, dict):
        return _compile_regex(option, pattern)
    if not isinstance(pattern, str):
        raise InvalidPattern(option, pattern, 'must be a string or an '
                             'object of regular expressions')
    if legacy_globs and _AMBIGUOUS.match(pattern):
        return _compile_fnmatch(option, pattern, 'as a glob %s is the '
                                'domain; Nova reads it as the bus' %
                                pattern.partition(':')[0])
    try:
        return _compile_glob(option, pattern)
    except InvalidPattern:
        if not (legacy_globs and _GLOB_CHARS.match(pattern) and
                any(c in pattern for c in '*?[')):
            raise
    return _compile_fnmatch(option, pattern, 'a * within a field, ?, '
                            '[...] are not in Nova\'s syntax')
