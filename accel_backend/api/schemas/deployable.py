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

"""``PATCH /v2/deployables/{uuid}/program`` body (Cyborg 17): a JSON-patch
list with one ``replace`` of ``/bitstream_id`` whose value names the
image (Glance UUID) to program::

    [{"op": "replace", "path": "/bitstream_id",
      "value": [{"image_uuid": "<uuid>"}]}]

Cyborg reads ``value[0]["image_uuid"]``; a bare ``{"image_uuid"}``
object is accepted too.
"""

from oslo_utils import uuidutils

from accel_backend import exception

_IMAGE = {
    'type': 'object',
    'properties': {'image_uuid': {'type': 'string', 'minLength': 1,
                                  'maxLength': 36}},
    'required': ['image_uuid'],
    'additionalProperties': False,
}

PROGRAM = {
    'type': 'array',
    'minItems': 1,
    'maxItems': 1,
    'items': {
        'type': 'object',
        'properties': {
            'op': {'enum': ['replace']},
            'path': {'enum': ['/bitstream_id']},
            'value': {'oneOf': [
                {'type': 'array', 'minItems': 1, 'maxItems': 1,
                 'items': _IMAGE},
                _IMAGE,
            ]},
        },
        'required': ['op', 'path', 'value'],
        'additionalProperties': False,
    },
}


def image_uuid(body):
    """The image UUID of a validated ``PROGRAM`` body.

    :raises InvalidUUID: it is no UUID.
    """
    value = body[0]['value']
    image = value[0] if isinstance(value, list) else value
    if not uuidutils.is_uuid_like(image['image_uuid']):
        raise exception.InvalidUUID(value=image['image_uuid'])
    return image['image_uuid']
