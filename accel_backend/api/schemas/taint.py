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

"""Body of ``POST /v2/deployables/{uuid}/taints`` (microversion 2.5,
accel_backend's own): a Kubernetes DRA device taint (KEP-5055,
``resource.k8s.io`` ``DeviceTaint``: ``key``, ``value``, ``effect``) plus
the operator's ``reason`` and, for one function of a pooled deployable,
its PCI address (``function``)."""

from accel_common import taints

CREATE = {
    'type': 'object',
    'properties': {
        'key': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'value': {'type': ['string', 'null'], 'maxLength': 255},
        'effect': {'enum': list(taints.EFFECTS)},
        'reason': {'type': ['string', 'null'], 'maxLength': 65535},
        'function': {'type': ['string', 'null'], 'minLength': 1,
                     'maxLength': 16},
    },
    'required': ['key', 'effect'],
    'additionalProperties': False,
}
