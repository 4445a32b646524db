#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Device profile groups -> Placement request groups, ARQ -> RP matching.

Pure functions, no HTTP. They implement the "Accelerator Requests" and
``match-rp`` sections of the nova-cyborg-interaction spec and the device
profile group format of Cyborg 17 (openstack-cyborg 17.0.0,
``cyborg/common/utils.py``, device profile groups): a group is a dict
whose keys are

* ``resources:<RC>``: an integer amount (Cyborg stores it as a string);
* ``trait:<TRAIT>``: ``required`` or ``forbidden``;
* ``accel:<key>``: Cyborg-only properties, ignored here.

The rules are :mod:`accel_common.device_profile`'s, the ones accel_backend
checks when a profile is created (amounts 1 to 1024, custom names of at
most 255 characters).

The N-th group (from zero) becomes the request group whose requester_id is
``device_profile_<N>`` (plus the owner, e.g. a port UUID, appended verbatim
as Nova does); Cyborg puts N in each ARQ's ``device_profile_group_id``.

Unlike Nova, which logs and skips malformed entries, every malformed entry
raises :class:`InvalidDeviceProfile`.
"""

import re

from accel_common import device_profile
from nova_accel.cyborg_client import exception

REQUESTER_ID_PREFIX = 'device_profile_'

_INDEX_RE = re.compile(r'^[0-9]+$')


def _group_index(value):
    """Normalise a group index (int or digit string) to a non-negative int.

    Returns None when ``value`` is not such an index.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and _INDEX_RE.match(value):
        return int(value)
    return None


def requester_id(group_index, owner=None):
    """Return the RequestGroup.requester_id of a device profile group.

    Same value as Nova's
    ``nova.accelerator.cyborg.get_device_profile_group_requester_id``:
    ``'device_profile_<N>'`` followed, when ``owner`` is given, by
    ``str(owner)`` with no separator (Nova appends the port UUID so that
    the device profiles of several ports stay distinct).

    :param group_index: int >= 0 (or its digit string): index of the group
        in the device profile, as in an ARQ's ``device_profile_group_id``.
    :param owner: optional owner (port UUID) or None.
    :returns: str.
    :raises: ValueError when ``group_index`` is not a non-negative integer.
    """
    index = _group_index(group_index)
    if index is None:
        raise ValueError('device profile group index must be a non-negative '
                         'integer, got %r' % (group_index,))
    return '%s%d%s' % (REQUESTER_ID_PREFIX, index,
                       str(owner) if owner else '')


def parse_group(group, index=0, name=None):
    """Parse and validate one device profile group
    (:func:`accel_common.device_profile.parse_group`, the rules
    accel_backend applies too).

    :param group: dict, see the module docstring.
    :param index: the group's index (used in error messages only).
    :param name: device profile name (used in error messages only).
    :returns: tuple ``(resources, required, forbidden)``: dict RC -> int,
        set of required traits, set of forbidden traits.
    :raises: InvalidDeviceProfile for a non-dict group, a key with an
        unknown prefix, an invalid resource class or trait name, an
        amount that is not an integer from 1 to 1024, a trait value other
        than ``required``/``forbidden``, or a group without any resource.
    """
    try:
        return device_profile.parse_group(group, index)
    except device_profile.InvalidGroup as e:
        raise exception.InvalidDeviceProfile(name=name or '<unnamed>',
                                             reason=str(e))


def _validated_groups(device_profile_groups, name):
    try:
        return device_profile.parse_groups(device_profile_groups)
    except device_profile.InvalidGroup as e:
        raise exception.InvalidDeviceProfile(name=name or '<unnamed>',
                                             reason=str(e))


def device_profile_request_groups(device_profile_groups, owner=None,
                                  name=None):
    """Turn device profile groups into Nova request groups.

    Implements nova-cyborg-interaction "Updating the Request Spec" and
    ``match-rp``: one ``nova.objects.RequestGroup`` per group, in order,
    with ``requester_id`` = :func:`requester_id` (index, owner),
    ``resources``, ``required_traits`` and ``forbidden_traits`` (the same
    fields Nova's ``_CyborgClient.get_device_request_groups`` fills).

    :param device_profile_groups: list of group dicts (the ``groups`` of a
        device profile as ``GET /v2/device_profiles`` returns it).
    :param owner: optional owner appended to the requester_id (port UUID).
    :param name: optional device profile name, for error messages.
    :returns: list of ``nova.objects.RequestGroup``.
    :raises: InvalidDeviceProfile when the groups are not a non-empty list
        of valid groups (see :func:`parse_group`).
    """
    from nova import objects
    objects.register_all()

    parsed = _validated_groups(device_profile_groups, name)
    result = []
    for index, (resources, required, forbidden) in enumerate(parsed):
        result.append(objects.RequestGroup(
            requester_id=requester_id(index, owner),
            resources=resources,
            required_traits=required,
            forbidden_traits=forbidden))
    return result


def device_count(device_profile_groups, name=None):
    """Return how many ARQs Cyborg creates for these groups.

    Cyborg 17: ``POST /v2/accelerator_requests`` creates one ARQ per
    unit of every ``resources:*`` value in every group (spec "Accelerator
    Requests": N groups of M accelerators give N * M ARQs).

    :param device_profile_groups: list of group dicts.
    :param name: optional device profile name, for error messages.
    :returns: int, the sum of all resource amounts.
    :raises: InvalidDeviceProfile as :func:`device_profile_request_groups`.
    """
    parsed = _validated_groups(device_profile_groups, name)
    return sum(sum(res.values()) for res, _req, _forb in parsed)


def match_arqs_to_providers(arqs, rg_rp_map, owner=None):
    """Map each ARQ to the resource provider chosen for its request group.

    Spec section ``match-rp``: an ARQ's ``device_profile_group_id`` N gives
    the requester_id ``device_profile_<N>[owner]``; ``rg_rp_map`` (what
    ``RequestSpec.get_request_group_mapping()`` returns) gives the RPs
    Placement allocated for that request group. Nova always takes the first
    RP; here, when a group maps to several RPs, the ARQs of that group are
    spread over the list in order, wrapping around (with one RP the result
    is identical to Nova's).

    :param arqs: list of ARQ dicts with at least ``uuid`` and
        ``device_profile_group_id``.
    :param rg_rp_map: dict ``{requester_id: [rp_uuid, ...]}`` or None.
    :param owner: optional owner used when the request groups were built
        (port UUID), see :func:`requester_id`.
    :returns: dict ``{arq_uuid: rp_uuid}``.
    :raises: ARQMatchError naming the ARQ and the requester_id when an ARQ
        lacks a usable uuid/group id or its group has no provider.
    """
    rg_rp_map = rg_rp_map or {}
    used = {}
    result = {}
    for arq in arqs:
        arq_uuid = arq.get('uuid') if isinstance(arq, dict) else None
        if not arq_uuid:
            raise exception.ARQMatchError(arq=repr(arq), requester_id=None)
        index = _group_index(arq.get('device_profile_group_id'))
        if index is None:
            raise exception.ARQMatchError(
                'Accelerator request %s has no valid device_profile_group_id '
                '(%r).' % (arq_uuid, arq.get('device_profile_group_id')),
                arq=arq_uuid, requester_id=None)
        rid = requester_id(index, owner)
        providers = rg_rp_map.get(rid) or []
        if not providers:
            raise exception.ARQMatchError(arq=arq_uuid, requester_id=rid)
        count = used.get(rid, 0)
        result[arq_uuid] = providers[count % len(providers)]
        used[rid] = count + 1
    return result
