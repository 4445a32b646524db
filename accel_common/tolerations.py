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

"""Taint tolerations: the one rule for which taints a device profile
group may tolerate and how Placement tells tolerating requests apart
(issue 53; after Kubernetes DRA's tolerations, KEP-5055,
``resource.k8s.io`` ``DeviceToleration`` with operator ``Exists``).

Placement cannot evaluate a toleration: a device kept out of scheduling
by ``reserved`` is out for every request.  So a taint an operator
declares tolerable (``[taints] tolerable_keys`` of accel_backend) is
shown to Placement as a trait of the deployable's resource provider,
``CUSTOM_ACCEL_TAINT_<KEY>`` (``trait_name``), instead of a
reservation, and every device profile group accel_backend serves
forbids that trait unless the group tolerates the key
(``trait:CUSTOM_ACCEL_TAINT_<KEY>: forbidden``, which Nova 34's
``nova/accelerator/cyborg.py`` ``get_device_profile_request_groups``
passes on as a forbidden trait of the request group).  The pattern is
Nova's own ``COMPUTE_STATUS_DISABLED`` trait (nova 34,
``nova/scheduler/request_filter.py``, ``compute_status_filter``).

Only a ``NoSchedule`` taint of a whole deployable can be tolerable: a
``NoExecute`` device is being emptied, and one unit of a pool cannot
carry a trait of its own.

A group tolerates with ``accel:tolerations``: taint keys separated by
commas (``"accel:tolerations": "burn-in,diagnostics"``).
"""

import re

#: The device profile group key that lists the tolerated taint keys.
GROUP_KEY = 'accel:tolerations'
#: Prefix of the trait a tolerable taint gives its resource provider.
TRAIT_PREFIX = 'CUSTOM_ACCEL_TAINT_'
#: The longest taint key a trait name can carry (Placement's 255
#: characters less the prefix).
MAX_KEY_LENGTH = 255 - len(TRAIT_PREFIX)
#: Keys only accel_backend sets, never tolerable: the audit's
#: ``unallocated`` taint marks a device a Bound ARQ holds, the health
#: taint a device that failed.
AUTOMATIC_KEYS = ('accel.openstack.org/unallocated',
                  'accel.openstack.org/unhealthy')

_NOT_TRAIT_CHARS = re.compile(r'[^A-Z0-9_]')


class InvalidTolerations(ValueError):
    """``accel:tolerations`` or ``[taints] tolerable_keys`` breaks the
    module's rules; ``str()`` says which and why."""


def trait_name(key):
    """The trait a tolerable taint of ``key`` gives its provider.

    :param key: a taint key (str), e.g. ``burn-in``.
    :returns: ``CUSTOM_ACCEL_TAINT_`` and the key upper-cased, every
        character other than ``A-Z0-9_`` replaced by ``_``
        (``CUSTOM_ACCEL_TAINT_BURN_IN``).
    """
    return TRAIT_PREFIX + _NOT_TRAIT_CHARS.sub('_', key.upper())


def check_key(key):
    """Refuse a taint key no toleration may name.

    :param key: str.
    :raises InvalidTolerations: empty, longer than ``MAX_KEY_LENGTH``,
        with surrounding spaces, or one of ``AUTOMATIC_KEYS``.
    """
    if not key or key != key.strip():
        raise InvalidTolerations(
            'taint key %r is empty or has surrounding spaces' % key)
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidTolerations(
            'taint key %r is longer than %d characters, too long for its '
            'trait name' % (key, MAX_KEY_LENGTH))
    if key in AUTOMATIC_KEYS:
        raise InvalidTolerations(
            'taint key %s is set by accel_backend itself and cannot be '
            'tolerated' % key)


def check_keys(keys):
    """Refuse a list of tolerable taint keys (``[taints]
    tolerable_keys``) with a bad key or two keys of one trait name.

    :param keys: iterable of str.
    :returns: the keys as a tuple.
    :raises InvalidTolerations: see ``check_key``; or two keys give the
        same trait (``burn-in`` and ``burn_in``).
    """
    keys = tuple(keys)
    seen = {}
    for key in keys:
        check_key(key)
        other = seen.setdefault(trait_name(key), key)
        if other != key:
            raise InvalidTolerations(
                'taint keys %r and %r both give trait %s; keep one'
                % (other, key, trait_name(key)))
    return keys


def parse(group):
    """The taint keys a device profile group tolerates.

    :param group: a device profile group (dict).
    :returns: frozenset of str, empty without ``accel:tolerations``.
    :raises InvalidTolerations: the value is not a string of
        comma-separated keys ``check_key`` takes.
    """
    value = group.get(GROUP_KEY) if isinstance(group, dict) else None
    if value is None:
        return frozenset()
    if not isinstance(value, str):
        raise InvalidTolerations(
            '%s must be a string of comma-separated taint keys, not %r'
            % (GROUP_KEY, value))
    keys = [k.strip() for k in value.split(',')]
    for key in keys:
        check_key(key)
    return frozenset(keys)


def forbidden_traits(group, tolerable):
    """The ``trait:...: forbidden`` entries a served group gets: one per
    tolerable key in use that the group does not tolerate.

    :param group: a device profile group (dict), as stored.
    :param tolerable: the keys of the tolerable taints in use (iterable
        of str).
    :returns: ``{"trait:CUSTOM_ACCEL_TAINT_<KEY>": "forbidden"}``,
        without the traits the group already names.
    """
    try:
        tolerated = parse(group)
    except InvalidTolerations:
        tolerated = frozenset()
    extra = {}
    for key in sorted(set(tolerable) - tolerated):
        entry = 'trait:' + trait_name(key)
        if entry not in group:
            extra[entry] = 'forbidden'
    return extra
