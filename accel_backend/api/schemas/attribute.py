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
