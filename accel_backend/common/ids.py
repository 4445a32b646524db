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

"""The UUIDs and names of a host's rows, derived from what discovery
found, so that they stay the same across restarts and re-discovery, and
an agent names a resource provider as its conductor stores it.

``stable_uuid`` derives every UUID of a host's devices, deployables,
attach handles and resource providers from (kind, host, PCI address,
...); ``deployable_ids`` gives those of one deployable.
"""

import uuid

_NS = uuid.UUID('6f0e3d42-3c1b-4f8e-9a57-1d1c4c0a2b7e')


def stable_uuid(*parts):
    """Deterministic UUID (str) of the given strings (a UUID version 5
    in this project's namespace of ``"/".join(parts)``)."""
    return str(uuid.uuid5(_NS, '/'.join(parts)))


def deployable_ids(hostname, address, subname):
    """``(deployable UUID, resource provider UUID, name)`` (str) of the
    deployable ``subname`` (None for a device's only one) of the device
    at ``address`` on ``hostname``."""
    parts = (hostname, address) + ((subname,) if subname else ())
    return (stable_uuid('deployable', *parts),
            stable_uuid('rp', *parts), '_'.join(parts))
