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

"""Bodies of ``POST`` and ``PATCH /v2/accelerator_requests``.

PATCH is ``{arq_uuid: [RFC 6902 ops]}``: all ``add`` of ``/hostname``,
``/device_rp_uuid``, ``/instance_uuid`` (and ``/project_id`` from 2.1) is
a bind; all ``remove`` of them is an unbind.
"""

from oslo_utils import uuidutils

from accel_backend import exception

CREATE = {
    'type': 'object',
    'properties': {
        # "" is no profile: 404 from the lookup, as Cyborg 17 answers.
        'device_profile_name': {'type': 'string', 'maxLength': 255},
        'image_uuid': {'type': ['string', 'null']},
        # python-cyborgclient's ``arq create`` always sends it (null
        # without ``--group-id``); Cyborg ignores it and so do we: the
        # ARQs are those of every group of the profile.
        'device_profile_group_id': {'type': ['integer', 'string', 'null']},
    },
    'required': ['device_profile_name'],
    'additionalProperties': False,
}

_OP = {
    'type': 'object',
    'properties': {
        'op': {'enum': ['add', 'remove']},
        'path': {'enum': ['/hostname', '/device_rp_uuid', '/instance_uuid',
                          '/project_id']},
        'value': {},
    },
    'required': ['op', 'path'],
    'additionalProperties': False,
}

PATCH = {
    'type': 'object',
    'minProperties': 1,
    'maxProperties': 1024,
    'additionalProperties': {'type': 'array', 'minItems': 1,
                             'maxItems': 4, 'items': _OP},
}

BIND_PATHS = {'/hostname', '/device_rp_uuid', '/instance_uuid'}


def parse_patch(body, allow_project_id):
    """Turn a validated PATCH body into bind and unbind requests.

    :param allow_project_id: microversion >= 2.1.
    :returns: ``(binds, unbinds)``: ``{arq_uuid: {field: value}}`` and a
        list of ARQ UUIDs.
    :raises InvalidUUID: a key or UUID value is no UUID.
    :raises InvalidPatch: mixed ops, missing fields, bad values.
    """
    binds, unbinds = {}, []
    for arq_uuid, ops in body.items():
        if not uuidutils.is_uuid_like(arq_uuid):
            raise exception.InvalidUUID(value=arq_uuid)
        kinds = {op['op'] for op in ops}
        if len(kinds) != 1:
            raise exception.InvalidPatch(
                uuid=arq_uuid, reason='mixes add and remove operations')
        paths = [op['path'] for op in ops]
        if len(set(paths)) != len(paths):
            raise exception.InvalidPatch(uuid=arq_uuid,
                                         reason='repeats a path')
        if '/project_id' in paths and not allow_project_id:
            raise exception.InvalidPatch(
                uuid=arq_uuid,
                reason='/project_id needs microversion 2.1 or later')
        if kinds == {'remove'}:
            unbinds.append(arq_uuid)
            continue
        missing = BIND_PATHS - set(paths)
        if missing:
            raise exception.InvalidPatch(
                uuid=arq_uuid,
                reason='a bind must add %s' % ', '.join(sorted(missing)))
        fields = {}
        for op in ops:
            if 'value' not in op or not isinstance(op['value'], str) or not (
                    0 < len(op['value']) <= 255):
                raise exception.InvalidPatch(
                    uuid=arq_uuid,
                    reason='%s needs a string value' % op['path'])
            fields[op['path'][1:]] = op['value']
        for key in ('device_rp_uuid', 'instance_uuid'):
            if not uuidutils.is_uuid_like(fields[key]):
                raise exception.InvalidUUID(value=fields[key])
        binds[arq_uuid] = fields
    return binds, unbinds
