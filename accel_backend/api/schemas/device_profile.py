"""``POST /v2/device_profiles`` body: a list holding one profile, as
Cyborg 17 takes it (a bare object is 400 there too)."""

import re

from accel_backend.discovery import device_spec
from accel_backend import exception

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

_KEY = re.compile(r'^(resources|trait|accel):(.+)$')
_AMOUNT = re.compile(r'[0-9]+')


def check_groups(groups):
    """Semantic checks of device profile groups.

    Keys: ``resources:<RC>`` (positive int string, standard or CUSTOM_ RC),
    ``trait:<TRAIT>`` (``required`` | ``forbidden``, standard or CUSTOM_),
    ``accel:<key>`` (any string).  Each group asks for at least one
    resource.

    :raises InvalidDeviceProfile: naming the group index and key.
    """
    for index, group in enumerate(groups):
        has_resource = False
        for key, value in group.items():
            m = _KEY.match(key)
            if not m:
                raise exception.InvalidDeviceProfile(
                    reason='group %d: key %r must start with resources:, '
                           'trait: or accel:' % (index, key))
            prefix, name = m.groups()
            if prefix == 'resources':
                if not device_spec.valid_resource_class(name):
                    raise exception.InvalidDeviceProfile(
                        reason='group %d: %r is not a standard or CUSTOM_ '
                               'resource class' % (index, name))
                # ASCII digits only: str.isdigit() accepts e.g. '²',
                # which int() rejects.
                if not _AMOUNT.fullmatch(value) or not (
                        1 <= int(value) <= 1024):
                    raise exception.InvalidDeviceProfile(
                        reason='group %d: %s must be an integer from 1 to '
                               '1024, not %r' % (index, key, value))
                has_resource = True
            elif prefix == 'trait':
                if not device_spec.valid_trait(name):
                    raise exception.InvalidDeviceProfile(
                        reason='group %d: %r is not a standard or CUSTOM_ '
                               'trait' % (index, name))
                if value not in ('required', 'forbidden'):
                    raise exception.InvalidDeviceProfile(
                        reason='group %d: %s must be required or '
                               'forbidden, not %r' % (index, key, value))
        if not has_resource:
            raise exception.InvalidDeviceProfile(
                reason='group %d asks for no resources:<RC>' % index)
