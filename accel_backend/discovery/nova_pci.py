"""Devices that Nova's own PCI passthrough claims.

Nova selects passthrough devices with ``[pci] device_spec`` (formerly
``passthrough_whitelist``): JSON objects (or lists of them) with
``vendor_id``, ``product_id`` (hex or ``*``) and ``address``, either a
string ``[[[[<domain>]:]<bus>]:][<slot>][.[<func>]]`` whose fields may be
``*`` or empty (any), or an object ``{"domain", "bus", "slot",
"function"}`` of exact hex values or regular expressions.  ``devname``
(a network interface) cannot be resolved from PCI sysfs and is ignored;
other tags (``physical_network``, ``resource_class`` ...) do not change
what is selected.  As in Nova, a spec naming a PF's address also selects
its virtual functions.

A device two services hand out to guests gets handed out twice: our
drivers refuse every device that one of these specs selects.
"""

import json
import os
import re

from oslo_config import cfg
from oslo_log import log as logging

from accel_backend.discovery import sysfs
from accel_backend import exception

LOG = logging.getLogger(__name__)
ANY = None
_HEX = re.compile(r'^(0x)?[0-9a-fA-F]+$')
_FIELDS = (('domain', 0xffff), ('bus', 0xff), ('slot', 0x1f),
           ('function', 0x7))


class NovaSpecError(ValueError):
    pass


def _split_address(address):
    m = sysfs.ADDRESS_RE.match(address)
    return {'domain': m.group('domain'), 'bus': m.group('bus'),
            'slot': m.group('slot'), 'function': m.group('function')}


def _hex_or_any(value, what, maximum):
    value = (value or '').strip()
    if value in ('', '*'):
        return ANY
    if not _HEX.match(value) or int(value, 16) > maximum:
        raise NovaSpecError('bad %s %r' % (what, value))
    return int(value, 16)


class NovaPCISpec:
    """One parsed Nova device spec (``text`` keeps the original)."""

    def __init__(self, raw, text):
        if not isinstance(raw, dict):
            raise NovaSpecError('not an object')
        self.text = text
        self.vendor = _hex_or_any(raw.get('vendor_id'), 'vendor_id', 0xffff)
        self.product = _hex_or_any(raw.get('product_id'), 'product_id',
                                   0xffff)
        self.devname = raw.get('devname')
        address = raw.get('address')
        self.glob = self.regex = None
        if isinstance(address, dict):
            unknown = set(address) - {f for f, _ in _FIELDS}
            if unknown:
                raise NovaSpecError('unknown address keys %s' %
                                    sorted(unknown))
            self.regex = {}
            for field, maximum in _FIELDS:
                value = str(address.get(field, '.*'))
                if _HEX.match(value):
                    self.regex[field] = int(value, 16)
                else:
                    try:
                        self.regex[field] = re.compile(value)
                    except re.error as e:
                        raise NovaSpecError('bad %s regex %r: %s' %
                                            (field, value, e))
        elif isinstance(address, str):
            self.glob = self._parse_glob(address)
        elif address is not None:
            raise NovaSpecError('address must be a string or an object')

    @staticmethod
    def _parse_glob(address):
        dbs, _, func = address.partition('.')
        fields = dbs.split(':') if dbs else []
        if len(fields) > 3:
            raise NovaSpecError('bad address %r' % address)
        fields = [''] * (3 - len(fields)) + fields
        values = {}
        for (field, maximum), value in zip(_FIELDS, fields + [func]):
            values[field] = _hex_or_any(value, field, maximum)
        return values

    def _address_matches(self, address):
        parts = _split_address(address)
        if self.glob is not None:
            return all(want is ANY or want == int(parts[f], 16)
                       for f, want in self.glob.items())
        if self.regex is not None:
            for field, want in self.regex.items():
                if isinstance(want, int):
                    if want != int(parts[field], 16):
                        return False
                elif not want.fullmatch(parts[field]):
                    return False
        return True

    def matches(self, fn):
        """True when Nova would take PCI function ``fn``
        (``sysfs.PCIFunction``)."""
        if self.devname is not None and self.glob is None and \
                self.regex is None and self.vendor is ANY:
            return False  # a netdev name only: not resolvable here
        if self.vendor is not ANY and self.vendor != int(fn.vendor_id, 16):
            return False
        if self.product is not ANY and \
                self.product != int(fn.product_id, 16):
            return False
        if self.glob is None and self.regex is None:
            return True
        if self._address_matches(fn.address):
            return True
        return bool(fn.physfn) and self._address_matches(fn.physfn)


_ID_IN_TEXT = {
    key: re.compile(r'"%s"\s*:\s*"\s*(?:0x)?([0-9a-fA-F]{1,4})\s*"' % key)
    for key in ('vendor_id', 'product_id')}


def _conservative(text):
    """The spec to apply for a value that does not parse: every function
    of the vendor (and product) ids it names, whatever else it says.

    :raises NovaPCIConfigUnusable: it names no vendor id.
    """
    ids = {key: m.group(1) for key, rx in _ID_IN_TEXT.items()
           for m in [rx.search(text)] if m}
    if 'vendor_id' not in ids:
        raise exception.NovaPCIConfigUnusable(
            reason='%r names no vendor_id' % text, source='nova.conf')
    return NovaPCISpec(ids, text.strip())


def parse(texts):
    """Parse Nova ``device_spec`` values (list of str) into specs.

    A value may hold one JSON object or a list of them.  Fail closed: a
    value that does not parse (Nova itself would refuse to start with
    it) still claims, for Nova, every function of the vendor and product
    ids it names, with an error logged; one that names no vendor id
    stops discovery.

    :raises NovaPCIConfigUnusable: a value names no vendor id.
    """
    specs = []
    for text in texts:
        try:
            raw = json.loads(text)
            if isinstance(raw, list):
                specs.extend(NovaPCISpec(item, json.dumps(item))
                             for item in raw)
            else:
                specs.append(NovaPCISpec(raw, text.strip()))
        except (ValueError, NovaSpecError) as e:
            spec = _conservative(text)
            LOG.error('Cannot parse Nova [pci] device_spec %r (%s): every '
                      'device %s:%s is left to Nova', text, e,
                      _id_text(spec.vendor), _id_text(spec.product))
            specs.append(spec)
    return specs


def _id_text(value):
    return '*' if value is ANY else '%04x' % value


def read_nova_conf(path):
    """``[pci] device_spec`` values of a nova.conf (list of str), read
    with oslo.config (so ``passthrough_whitelist`` counts too)."""
    conf = cfg.ConfigOpts()
    conf.register_opts([cfg.MultiStrOpt(
        'device_spec', default=[],
        deprecated_opts=[cfg.DeprecatedOpt('passthrough_whitelist',
                                           group='pci')])], group='pci')
    conf([], project='nova', default_config_files=[path],
         use_env=False)
    return list(conf.pci.device_spec)


class NovaClaims:
    """Which PCI functions Nova's PCI passthrough claims on this host.

    :param specs: list of ``NovaPCISpec``.
    """

    def __init__(self, specs):
        self.specs = specs
        self._warned = set()

    @classmethod
    def from_conf(cls, conf):
        """From ``[discovery] nova_pci_device_spec`` and the nova.conf
        named by ``[discovery] nova_config_file``.

        :raises NovaPCIConfigUnusable: that nova.conf cannot be read or
            parsed, or a value names no vendor id (the drivers, and so
            the service, do not start).
        """
        texts = list(conf.discovery.nova_pci_device_spec)
        path = conf.discovery.nova_config_file
        if path:
            if not os.access(path, os.R_OK):
                raise exception.NovaPCIConfigUnusable(
                    reason='it cannot be read', source=path)
            try:
                texts.extend(read_nova_conf(path))
            except (OSError, cfg.Error) as e:
                raise exception.NovaPCIConfigUnusable(reason=str(e),
                                                      source=path)
        return cls(parse(texts))

    def claimed_by(self, fn):
        """The first Nova spec selecting ``fn`` (``NovaPCISpec``) or None."""
        return next((s for s in self.specs if s.matches(fn)), None)

    def refuse(self, fn, driver_name):
        """True when Nova claims ``fn``; warns (once per function)."""
        spec = self.claimed_by(fn)
        if spec is None:
            return False
        if fn.address not in self._warned:
            self._warned.add(fn.address)
            LOG.warning('Device %s (%s:%s) is claimed by Nova\'s [pci] '
                        'device_spec %s; the %s driver leaves it to Nova\'s '
                        'PCI passthrough', fn.address, fn.vendor_id,
                        fn.product_id, spec.text, driver_name)
        return True
