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

"""Device profile groups: the one validation both halves apply.

The format is Cyborg 17's (openstack-cyborg 17.0.0,
``cyborg/common/utils.py``): a device profile is a list of groups, each a
dict whose keys are

* ``resources:<RC>``: an amount from 1 to 1024, as a string of ASCII
  digits (Cyborg stores strings; an int is taken too).  1024 bounds what
  one profile can make accel_backend create: one ARQ per unit;
* ``trait:<TRAIT>``: ``required`` or ``forbidden``;
* ``accel:<key>``: Cyborg-only properties, any value, ignored by Nova;
  but ``accel:tolerations`` must list taint keys as
  ``accel_common.tolerations`` says.

Resource classes and traits are standard (os-resource-classes, os-traits)
or ``CUSTOM_[A-Z0-9_]+`` of at most 255 characters, as Placement takes
them (openstack/placement, ``placement/schemas/common.py``).  Each group
asks for at least one resource.

accel_backend applies it when a profile is created (400
``accel.device_profile.invalid``); nova_accel when it turns a profile into
request groups (``InvalidDeviceProfile`` of its client).
"""

import re

import os_resource_classes as orc
import os_traits

from accel_common import tolerations

RESOURCES_PREFIX = 'resources:'
TRAIT_PREFIX = 'trait:'
ACCEL_PREFIX = 'accel:'
PREFIXES = (RESOURCES_PREFIX, TRAIT_PREFIX, ACCEL_PREFIX)
TRAIT_REQUIRED = 'required'
TRAIT_FORBIDDEN = 'forbidden'
#: Bounds of a ``resources:<RC>`` amount.
MIN_AMOUNT = 1
MAX_AMOUNT = 1024
#: Longest custom resource class or trait name Placement stores.
MAX_NAME_LENGTH = 255

#: A custom resource class or trait name, as Placement's schemas take
#: them (openstack/placement 16.0.0, ``placement/schemas/common.py``,
#: ``CUSTOM_RC_PATTERN`` and ``CUSTOM_TRAIT_PATTERN``); both halves
#: check names with it.
CUSTOM_NAME_RE = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
# ASCII digits only: str.isdigit() accepts e.g. '²', which int() refuses.
_AMOUNT_RE = re.compile(r'^[0-9]+$')
_STANDARD_TRAITS = None


class InvalidGroup(ValueError):
    """A device profile (group) breaks the rules of the module text.

    ``str()`` is the reason, naming the group index: ``group 1: ...``.

    :ivar index: index of the offending group (int) or None for the list.
    """

    def __init__(self, index, reason):
        self.index = index
        super().__init__(reason)


def _standard_traits():
    global _STANDARD_TRAITS
    if _STANDARD_TRAITS is None:
        _STANDARD_TRAITS = frozenset(os_traits.get_traits())
    return _STANDARD_TRAITS


def _is_custom(name):
    return len(name) <= MAX_NAME_LENGTH and bool(CUSTOM_NAME_RE.match(name))


def is_valid_resource_class(name):
    """True for a standard resource class or a valid ``CUSTOM_`` one
    (str ``name``)."""
    return name in orc.STANDARDS or _is_custom(name)


def is_valid_trait(name):
    """True for a standard trait or a valid ``CUSTOM_`` one (str
    ``name``)."""
    return name in _standard_traits() or _is_custom(name)


def _amount(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        amount = value
    elif isinstance(value, str) and _AMOUNT_RE.match(value):
        amount = int(value)
    else:
        return None
    return amount if MIN_AMOUNT <= amount <= MAX_AMOUNT else None


def parse_group(group, index=0):
    """Validate one group.

    :param group: dict, see the module text.
    :param index: the group's index in its profile (int), for messages.
    :returns: ``(resources, required, forbidden)``: dict RC -> int amount,
        set of required traits, set of forbidden traits.
    :raises InvalidGroup: the group breaks a rule.
    """
    def invalid(reason):
        return InvalidGroup(index, 'group %d: %s' % (index, reason))

    if not isinstance(group, dict):
        raise invalid('expected a dict, got %s' % type(group).__name__)
    resources, required, forbidden = {}, set(), set()
    for key, value in group.items():
        if not isinstance(key, str):
            raise invalid('key %r is not a string' % (key,))
        prefix = next((p for p in PREFIXES if key.startswith(p)), None)
        if prefix is None:
            raise invalid('key %r must start with resources:, trait: or '
                          'accel:' % key)
        name = key[len(prefix):]
        if prefix == RESOURCES_PREFIX:
            if not is_valid_resource_class(name):
                raise invalid('%r is not a standard or CUSTOM_ resource '
                              'class' % name)
            amount = _amount(value)
            if amount is None:
                raise invalid('%s must be an integer from %d to %d, not %r'
                              % (key, MIN_AMOUNT, MAX_AMOUNT, value))
            resources[name] = amount
        elif prefix == TRAIT_PREFIX:
            if not is_valid_trait(name):
                raise invalid('%r is not a standard or CUSTOM_ trait' % name)
            if value == TRAIT_REQUIRED:
                required.add(name)
            elif value == TRAIT_FORBIDDEN:
                forbidden.add(name)
            else:
                raise invalid('%s must be required or forbidden, not %r'
                              % (key, value))
        elif key == tolerations.GROUP_KEY:
            try:
                tolerations.parse(group)
            except tolerations.InvalidTolerations as e:
                raise invalid(str(e))
    if not resources:
        raise InvalidGroup(index,
                           'group %d asks for no resources:<RC>' % index)
    return resources, required, forbidden


def parse_groups(groups):
    """Validate a profile's groups.

    :param groups: list (or tuple) of group dicts.
    :returns: list of :func:`parse_group` results, in order.
    :raises InvalidGroup: not a non-empty list, or a group is invalid.
    """
    if not isinstance(groups, (list, tuple)):
        raise InvalidGroup(None, 'groups must be a list, got %s'
                           % type(groups).__name__)
    if not groups:
        raise InvalidGroup(None, 'the profile has no groups')
    return [parse_group(g, i) for i, g in enumerate(groups)]


def device_count(groups):
    """How many ARQs a profile makes: one per unit of every
    ``resources:<RC>`` amount of every group (nova-cyborg-interaction spec,
    "Accelerator Requests": N groups of M accelerators give N * M ARQs).

    :raises InvalidGroup: as :func:`parse_groups`.
    """
    return sum(sum(res.values()) for res, _, _ in parse_groups(groups))
