"""Default policies of accel_backend, one module per API resource.

``list_rules()`` is the ``oslo.policy.policies`` entry point
(``oslopolicy-sample-generator --namespace accel_backend``).
"""

import itertools

from accel_backend.policies import arq
from accel_backend.policies import attribute
from accel_backend.policies import base
from accel_backend.policies import deployable
from accel_backend.policies import device
from accel_backend.policies import device_profile


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
