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

"""Devices that Nova's own PCI passthrough claims.

Nova selects passthrough devices with ``[pci] device_spec`` (formerly
``passthrough_whitelist``): JSON objects (or lists of them) with
``vendor_id``, ``product_id`` (hex or ``*``) and ``address``, either a
string ``[[[[<domain>]:]<bus>]:][<slot>][.[<func>]]`` whose fields may be
``*`` or empty (any), or an object ``{"domain", "bus", "slot",
"function"}`` of regular expressions, each matched from the start of the
field's hex digits (``"bus": "8"`` selects buses 80-8f), unknown keys
ignored.  ``devname`` names a network interface instead of an address;
other tags (``physical_network``, ``resource_class`` ...) do not change
what is selected.  A spec naming a PF's address also selects its virtual
functions.

A device two services hand out to guests gets handed out twice: our
drivers refuse every device that one of these specs selects.

Which parser reads a value:

* Nova's own, ``nova.pci.devspec.PciDeviceSpec`` (Nova 34,
  ``nova/pci/devspec.py``), wherever Nova can be imported: on the compute
  node, where the agent runs beside nova-compute, both then read a value
  the same way, quirks included.  It is imported on first use only, when
  a spec is configured: it loads all of Nova's options, a slow import of
  a great many modules, eventlet among them, imported but not monkey
  patched (the contributor guide's "Design measurements").
  It resolves ``devname`` from the host's ``/sys/class/net``, as Nova
  does.
* ``OwnSpec``, the same grammar and matching rules (the address through
  ``accel_common.pci.compile_pattern``, whose dialect is Nova's), where
  Nova is not installed (accel_backend on a host without nova-compute,
  reading a copy of its nova.conf).  Where it cannot tell, it selects
  more: a spec with ``devname`` selects every function of its ids, and
  any address spec also selects the VFs of the functions it names.

What is added to Nova's parser, and why:

* A spec whose address is one function (all four fields exact) also
  selects that function's VFs.  Nova does this only when it finds
  ``sriov_totalvfs`` under the host's ``/sys/bus/pci/devices``, whatever
  ``[discovery] sysfs_root`` says; our rule reads the VF's ``physfn``
  under that root, so the outcome does not depend on which root is read
  (on the compute node itself, both agree).
* ``one_time_use`` is left out of what Nova's parser sees: Nova checks
  ``one_time_use = true`` against its process-wide
  ``CONF.pci.report_in_placement``, which accel_backend never loads from
  the compute node's nova.conf, so Nova's parser rejects every such spec
  here (observed with Nova 34: ``PciConfigInvalidSpec``).  The tag does
  not change what is selected.
* Nova only selects a ``remote_managed`` device whose VPD has a card
  serial number; accel_backend does not read the VPD and assumes one,
  selecting at least what Nova does.

Fail closed: a value neither parser accepts (nova-compute itself refuses
to start with it) still leaves every function of the vendor (and product)
ids it names to Nova, with an error logged and the problem kept
(``NovaClaims.problems``: the service records its host as ``degraded``
with it, which the health check shows); a value from which no vendor id
can be told stops discovery (``NovaPCIConfigUnusable``).
"""

import functools
import json
import os

from oslo_config import cfg
from oslo_log import log as logging

from accel_backend import exception
from accel_common import pci

LOG = logging.getLogger(__name__)
ANY = None
#: The ids a spec names.
_ID_KEYS = ('vendor_id', 'product_id')
_DECODER = json.JSONDecoder()


class NovaSpecError(ValueError):
    """A device spec the parser (Nova's or ours) rejects."""


@functools.lru_cache(maxsize=None)
def nova_devspec():
    """Nova's ``(nova.pci.devspec, nova.exception)`` modules, or None
    where Nova is not installed (cached: imported once per process)."""
    try:
        from nova import exception as nova_exception
        from nova.pci import devspec
    except ImportError as e:
        LOG.info('Nova is not importable (%s): Nova\'s [pci] device_spec '
                 'is read by accel_backend\'s own parser', e)
        return None
    return devspec, nova_exception


def _id_or_any(value, what):
    if value is None or value == '*':
        return ANY
    try:
        return pci.parse_id(value, what)
    except pci.InvalidId:
        raise NovaSpecError('bad %s %r' % (what, value))


class OwnSpec:
    """One device spec read without Nova (see the module).

    :param raw: the spec (dict).
    :param text: its text, for messages.
    :raises NovaSpecError: a value Nova's parser would reject too.
    """

    #: Why this spec stands for a value that did not parse, else None.
    problem = None

    def __init__(self, raw, text):
        if not isinstance(raw, dict):
            raise NovaSpecError('not an object')
        self.text = text
        self.vendor = _id_or_any(raw.get('vendor_id'), 'vendor_id')
        self.product = _id_or_any(raw.get('product_id'), 'product_id')
        self.devname = raw.get('devname')
        address = raw.get('address')
        if address is not None and self.devname is not None:
            raise NovaSpecError('devname and address are exclusive')
        self.address = None
        if address is not None:
            try:
                self.address = pci.compile_pattern(
                    address, 'Nova [pci] device_spec "address"')
            except pci.InvalidPattern as e:
                raise NovaSpecError(str(e))

    def _address_matches(self, address):
        return self.address is None or self.address.matches(address)

    def matches(self, fn):
        """True when Nova would take PCI function ``fn``
        (``sysfs.PCIFunction``), or might."""
        if self.devname is not None and self.vendor is ANY:
            return False  # a netdev name only: not resolvable here
        if self.vendor is not ANY and \
                self.vendor != pci.parse_id(fn.vendor_id):
            return False
        if self.product is not ANY and \
                self.product != pci.parse_id(fn.product_id):
            return False
        if self._address_matches(fn.address):
            return True
        return bool(fn.physfn) and self._address_matches(fn.physfn)


class NovaSpec:
    """One device spec read by Nova's ``PciDeviceSpec`` (see the module).

    :param raw: the spec (dict).
    :param text: its text, for messages.
    :param modules: ``nova_devspec()``.
    :raises NovaSpecError: Nova's parser rejects it (its message).
    """

    problem = None

    def __init__(self, raw, text, modules):
        devspec, nova_exception = modules
        if not isinstance(raw, dict):
            raise NovaSpecError('not an object')
        self.text = text
        raw = {k: v for k, v in raw.items() if k != 'one_time_use'}
        try:
            self.spec = devspec.PciDeviceSpec(raw)
        # Nova's own errors, and what its parser raises on a value of
        # the wrong type (observed: AttributeError for a vendor_id that
        # is a number, TypeError for a regex that is one).
        except (nova_exception.NovaException, AttributeError, TypeError,
                ValueError, KeyError, OSError) as e:
            raise NovaSpecError(str(e) or type(e).__name__)

    def matches(self, fn):
        """True when Nova takes PCI function ``fn``
        (``sysfs.PCIFunction``)."""
        # The VPD is not read: a serial number is assumed (see the
        # module), so a remote_managed spec selects what it names.
        dev = {'vendor_id': fn.vendor_id, 'product_id': fn.product_id,
               'address': fn.address, 'parent_addr': fn.physfn,
               'capabilities': {'vpd': {'card_serial_number': 'assumed'}}}
        if self.spec.match(dev):
            return True
        address = self.spec.address
        return bool(fn.physfn) and address is not None and \
            address.pci_address_spec.is_single_address() and \
            self.spec.match(dict(dev, address=fn.physfn, parent_addr=None))


def _spec(raw, text):
    modules = nova_devspec()
    if modules is None:
        return OwnSpec(raw, text)
    return NovaSpec(raw, text, modules)


def _id_or_none(value):
    try:
        return pci.parse_id(value)
    except pci.InvalidId:
        return None


def _named_ids(text):
    """The vendor and product ids named in ``text``, JSON or not: every
    ``"vendor_id": "<id>"`` (and ``product_id``) member whose key and
    value are JSON strings, wherever it stands in a text that may be cut
    short or otherwise broken (each string is decoded with ``json``).

    :returns: ``(vendor ids, product ids)``, each a sorted list of int.
    """
    found = {key: set() for key in _ID_KEYS}
    start = text.find('"')
    while start != -1:
        try:
            key, end = _DECODER.raw_decode(text, start)
        except ValueError:  # an unterminated string
            start = text.find('"', start + 1)
            continue
        colon = len(text) - len(text[end:].lstrip())
        if key in found and text.startswith(':', colon):
            value_at = len(text) - len(text[colon + 1:].lstrip())
            try:
                value, _ = _DECODER.raw_decode(text, value_at)
            except ValueError:
                value = None
            ident = _id_or_none(value)
            if ident is not None:
                found[key].add(ident)
        start = text.find('"', end)
    return tuple(sorted(found[key]) for key in _ID_KEYS)


def _conservative(raw, text, error):
    """Specs to apply for a value that does not parse: every function of
    the vendor (and product) ids it names, whatever else it says.

    :param raw: the parsed JSON object, or None when ``text`` is no JSON
        (then every vendor id in the text counts; with more than one,
        every product of each).
    :raises NovaPCIConfigUnusable: it names no vendor id.
    """
    if isinstance(raw, dict):
        pairs = [(_id_or_none(raw.get('vendor_id')),
                  _id_or_none(raw.get('product_id')))]
    else:
        vendors, products = _named_ids(text)
        if len(vendors) == 1 and len(products) <= 1:
            pairs = [(vendors[0], products[0] if products else ANY)]
        else:
            pairs = [(v, ANY) for v in vendors]
    pairs = [p for p in pairs if p[0] is not None]
    if not pairs:
        raise exception.NovaPCIConfigUnusable(
            reason='%r names no vendor_id' % text, source='nova.conf')
    specs = []
    for vendor, product in pairs:
        spec = OwnSpec({'vendor_id': pci.id_text(vendor),
                        'product_id': _id_text(product)}, text)
        spec.problem = (
            'Cannot parse Nova [pci] device_spec %s (%s): every device '
            '%s:%s is left to Nova, none is offered' % (
                text, error, pci.id_text(vendor), _id_text(product)))
        LOG.error('%s', spec.problem)
        specs.append(spec)
    return specs


def _id_text(value):
    return '*' if value is ANY else pci.id_text(value)


def parse(texts):
    """Parse Nova ``device_spec`` values (list of str) into specs
    (``NovaSpec``, or ``OwnSpec`` without Nova), one per object.

    A value may hold one JSON object or a list of them.  Fail closed: an
    object (or a value) that does not parse still claims, for Nova, every
    function of the vendor and product ids it names, with an error logged
    and the spec's ``problem`` set; one that names no vendor id stops
    discovery.

    :raises NovaPCIConfigUnusable: a value names no vendor id.
    """
    specs = []
    for text in texts:
        try:
            raw = json.loads(text)
        except ValueError as e:
            specs.extend(_conservative(None, text, e))
            continue
        items = raw if isinstance(raw, list) else [raw]
        for item in items:
            item_text = text.strip() if item is raw else json.dumps(item)
            try:
                specs.append(_spec(item, item_text))
            except NovaSpecError as e:
                specs.extend(_conservative(item, item_text, e))
    return specs


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

    :param specs: list of ``NovaSpec`` / ``OwnSpec``.
    """

    def __init__(self, specs):
        self.specs = specs
        self._warned = set()

    @property
    def problems(self):
        """Why some specs stand for values that did not parse (list of
        str, each naming the ids left to Nova); [] when all parsed."""
        return [s.problem for s in self.specs if s.problem]

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
        """The first Nova spec selecting ``fn`` or None."""
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
