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

"""``POST /v2/device_profiles`` body: a list holding one profile, as
Cyborg 17 takes it (a bare object is 400 there too)."""

from accel_backend import exception
from accel_common import device_profile
from accel_common import tolerations

NAME_RE = r'^[a-zA-Z0-9-_]+$'

_PROFILE = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 255,
                 'pattern': NAME_RE},
        'description': {'type': ['string', 'null'], 'maxLength': 255},
        'groups': {'type': 'array', 'minItems': 1, 'maxItems': 32,
                   'items': {'type': 'object', 'minProperties': 1,
                             'maxProperties': 64,
                             'additionalProperties': {'type': 'string',
                                                      'maxLength': 255}}},
        'uuid': {'type': 'string'},
    },
    'required': ['name', 'groups'],
    'additionalProperties': False,
}

CREATE = {'type': 'array', 'minItems': 1, 'maxItems': 1, 'items': _PROFILE}


def check_groups(groups, tolerable=()):
    """Semantic checks of device profile groups: the rules of
    :mod:`accel_common.device_profile`, shared with nova_accel, and each
    tolerated taint key one of ``tolerable``.

    :param groups: the body's ``groups``.
    :param tolerable: ``[taints] tolerable_keys`` (collection of str).
    :raises InvalidDeviceProfile: naming the group index and key.
    """
    try:
        device_profile.parse_groups(groups)
    except device_profile.InvalidGroup as e:
        raise exception.InvalidDeviceProfile(reason=str(e))
    for index, group in enumerate(groups):
        unknown = sorted(tolerations.parse(group) - set(tolerable))
        if unknown:
            raise exception.InvalidDeviceProfile(reason=(
                'group %d: %s names taint key(s) %s, which are not in '
                '[taints] tolerable_keys (%s): such a taint reserves its '
                'device, so the toleration would never take effect' % (
                    index, tolerations.GROUP_KEY, ', '.join(unknown),
                    ', '.join(tolerable) or 'empty')))
