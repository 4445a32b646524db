"""``POST /v2/attributes`` body: ``{"deployable_id", "key", "value"}``.

``deployable_id`` is the deployable's integer id as in Cyborg, or (ours)
its UUID.
"""

CREATE = {
    'type': 'object',
    'properties': {
        'deployable_id': {
            'oneOf': [
                {'type': 'integer', 'minimum': 1},
                {'type': 'string', 'format': 'uuid', 'minLength': 32,
                 'maxLength': 36},
            ]},
        'key': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'value': {'type': 'string', 'maxLength': 65535},
    },
    'required': ['deployable_id', 'key', 'value'],
    'additionalProperties': False,
}
