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

"""Operator device specs: which PCI functions accel_backend manages.

A spec is a JSON object (``[discovery] device_spec``, one per line)::

    {"vendor_id": "10de", "product_id": "1eb8",      # required
     "address": "0000:af:*",                         # optional pattern
     "class": "0302",                                # optional hex prefix
     "resource_class": "PGPU",                       # default PGPU
     "traits": ["CUSTOM_NVIDIA_T4"],                 # optional
     "device_type": "GPU",                           # default GPU
     "attach_handle_type": "PCI",                    # PCI | TEST_PCI
     "vf": false,                                    # optional, see below
     "managed": "yes",                               # yes | no
     "pool": false}                                  # optional, see below

``"address"`` is a PCI address pattern in the dialect of Nova's ``[pci]
device_spec`` (``accel_common.pci``): a string ``domain:bus:slot.function``
whose fields may be ``*`` or left out, or an object of per-field regular
expressions.  Shell globs (``0000:af:0?.*``, ``0000:*:00.[01]``), which
this key took before, still select what they did, with a deprecation
warning.

SR-IOV virtual functions are whole devices only on request: a spec
matches VFs when it says ``"vf": true`` (then only VFs), or when the
product id it names is a VF's own id, different from its PF's (QAT C62x
VFs are ``8086:37c9``, their PF ``8086:37c8``).  ``"vf": false`` never
matches a VF.  A PF whose VFs are enabled is never reported whole
(``drivers.base.PCIDriverBase.vfs_of``).

``"managed"``, as in Nova's ``[pci] device_spec`` (Nova 34,
``nova/pci/devspec.py``): ``"no"`` when the host prepares the function
for VFIO itself (it stays on its driver, or an operator binds it to
vfio-pci); its attach handles then say ``"managed": "no"`` and the
``<hostdev>`` is ``managed='no'``, so libvirt does not detach and
reattach it.  Default ``"yes"``.

``"pool": true`` pools the interchangeable functions the spec selects on
a host (same product, same NUMA node) into one deployable and resource
provider with one attach handle per function (``common.pooling``);
default false: one provider per function.
"""

import dataclasses
import json

import os_resource_classes as orc
import os_traits

from accel_backend import exception
from accel_common import device_profile
from accel_common import pci

#: The option an address pattern comes from, for messages.
ADDRESS_OPTION = '[discovery] device_spec "address"'
DEVICE_TYPES = ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD', 'OTHER')
ATTACH_TYPES = ('PCI', 'TEST_PCI')


def valid_resource_class(name):
    """True for a standard resource class or a ``CUSTOM_`` one."""
    return (name in orc.STANDARDS or
            bool(device_profile.CUSTOM_NAME_RE.match(name)))


def valid_trait(name):
    """True for a standard trait (os-traits) or a ``CUSTOM_`` one."""
    return (bool(device_profile.CUSTOM_NAME_RE.match(name)) or
            name in os_traits.get_traits())


@dataclasses.dataclass(frozen=True)
class DeviceSpec:
    """One parsed spec; see the module docstring for the fields.

    ``address`` is the pattern as configured (str, or for the object form
    its JSON text); ``address_pattern`` its compiled
    ``accel_common.pci.AddressPattern`` (compiled from a string
    ``address`` when not given; ``parse`` gives it for the object form).

    :raises accel_common.pci.InvalidPattern: ``address`` is not a pattern.
    """

    vendor_id: str
    product_id: str
    address: str = None
    class_prefix: str = None
    resource_class: str = 'PGPU'
    traits: tuple = ()
    device_type: str = 'GPU'
    attach_handle_type: str = 'PCI'
    vf: bool = None
    managed: str = 'yes'
    pool: bool = False
    address_pattern: pci.AddressPattern = dataclasses.field(
        default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.address and self.address_pattern is None:
            # Frozen: set once, here, as dataclasses document.
            object.__setattr__(self, 'address_pattern', pci.compile_pattern(
                self.address, ADDRESS_OPTION, legacy_globs=True))

    def handle_info(self, fn):
        """The attach handle info of ``fn`` for this spec: its address
        parts, with ``managed`` when ``"no"``."""
        info = dict(fn.address_parts)
        if self.managed == 'no':
            info['managed'] = 'no'
        return info

    def matches(self, fn):
        """True when PCI function ``fn`` (``sysfs.PCIFunction``) is ours."""
        if (fn.vendor_id, fn.product_id) != (self.vendor_id,
                                             self.product_id):
            return False
        if self.address_pattern is not None and \
                not self.address_pattern.matches(fn.address):
            return False
        if self.class_prefix and not fn.class_code.startswith(
                self.class_prefix):
            return False
        return True

    def takes_vf(self, fn, pf):
        """True when this spec, which ``matches(fn)``, takes the SR-IOV VF
        ``fn`` (``pf``: its PF's ``PCIFunction``, or None when the PF is
        not in the scan).  See the module docstring."""
        if self.vf is not None:
            return self.vf
        return pf is not None and pf.product_id != fn.product_id


def parse(text):
    """Parse one spec.

    :param text: JSON object text.
    :returns: ``DeviceSpec``.
    :raises DeviceSpecError: bad JSON, unknown keys, bad ids or names.
    """
    try:
        raw = json.loads(text)
    except ValueError as e:
        raise exception.DeviceSpecError(spec=text, reason=str(e))
    if not isinstance(raw, dict):
        raise exception.DeviceSpecError(spec=text, reason='not an object')
    known = {'vendor_id', 'product_id', 'address', 'class',
             'resource_class', 'traits', 'device_type', 'attach_handle_type',
             'vf', 'managed', 'pool'}
    unknown = set(raw) - known
    if unknown:
        raise exception.DeviceSpecError(
            spec=text, reason='unknown keys %s' % sorted(unknown))
    if 'class' in raw and not isinstance(raw['class'], str):
        raise exception.DeviceSpecError(
            spec=text, reason='class must be a string')
    address, pattern = _address(text, raw.get('address'))
    ids = {}
    for key in ('vendor_id', 'product_id'):
        try:
            ids[key] = pci.id_text(pci.parse_id(raw.get(key), key, 4))
        except pci.InvalidId:
            raise exception.DeviceSpecError(
                spec=text, reason='%s must be 4 hex digits' % key)
    rc = raw.get('resource_class', 'PGPU')
    if not isinstance(rc, str) or not valid_resource_class(rc):
        raise exception.DeviceSpecError(
            spec=text, reason='bad resource class %r' % rc)
    traits = raw.get('traits', [])
    if not isinstance(traits, list):
        raise exception.DeviceSpecError(
            spec=text, reason='traits must be a list of trait names')
    traits = tuple(traits)
    bad = [t for t in traits if not isinstance(t, str) or
           not valid_trait(t)]
    if bad:
        raise exception.DeviceSpecError(spec=text,
                                        reason='bad traits %s' % bad)
    dtype = raw.get('device_type', 'GPU')
    if not isinstance(dtype, str) or dtype not in DEVICE_TYPES:
        raise exception.DeviceSpecError(
            spec=text, reason='device_type must be one of %s' %
            (DEVICE_TYPES,))
    ahtype = raw.get('attach_handle_type', 'PCI')
    if not isinstance(ahtype, str) or ahtype not in ATTACH_TYPES:
        raise exception.DeviceSpecError(
            spec=text, reason='attach_handle_type must be one of %s' %
            (ATTACH_TYPES,))
    vf = raw.get('vf')
    if vf is not None and not isinstance(vf, bool):
        raise exception.DeviceSpecError(
            spec=text, reason='vf must be true or false')
    managed = raw.get('managed', 'yes')
    if managed not in ('yes', 'no'):
        raise exception.DeviceSpecError(
            spec=text, reason='managed must be "yes" or "no"')
    pool = raw.get('pool', False)
    if not isinstance(pool, bool):
        raise exception.DeviceSpecError(
            spec=text, reason='pool must be true or false')
    return DeviceSpec(
        vendor_id=ids['vendor_id'], product_id=ids['product_id'],
        address=address, address_pattern=pattern,
        class_prefix=(str(raw['class']).lower().replace('0x', '')
                      if raw.get('class') else None),
        resource_class=rc, traits=traits, device_type=dtype,
        attach_handle_type=ahtype, vf=vf, managed=managed, pool=pool)


def _address(text, raw):
    """``(address text, AddressPattern)`` of a spec's ``"address"`` (both
    None when it has none).

    :raises DeviceSpecError: not a pattern (the reason names the key).
    """
    if raw is None or raw == '':
        return None, None
    try:
        pattern = pci.compile_pattern(raw, ADDRESS_OPTION, legacy_globs=True)
    except pci.InvalidPattern as e:
        raise exception.DeviceSpecError(spec=text, reason=str(e))
    if isinstance(raw, dict):
        raw = json.dumps(raw, sort_keys=True)
    return raw, pattern


def parse_all(texts):
    """Parse every configured spec (list of str) -> list of DeviceSpec."""
    return [parse(t) for t in texts]
