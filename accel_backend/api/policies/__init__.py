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

"""Default policies of accel_backend, one module per API resource.

``list_rules()`` is the ``oslo.policy.policies`` entry point
(``oslopolicy-sample-generator --namespace accel_backend``).
"""

import itertools

from accel_backend.api.policies import arq
from accel_backend.api.policies import attribute
from accel_backend.api.policies import base
from accel_backend.api.policies import deployable
from accel_backend.api.policies import device
from accel_backend.api.policies import device_profile


def list_rules():
    """Every ``RuleDefault`` of accel_backend (base rules first)."""
    return list(itertools.chain(
        base.list_rules(),
        device_profile.list_rules(),
        arq.list_rules(),
        device.list_rules(),
        deployable.list_rules(),
        attribute.list_rules(),
    ))
