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

"""What discovery found, as the agent reports it and the conductor
stores it: ``DiscoveredDeployable`` (one deployable of one device), its
health values, and the key of its attach info that names the PCI
functions of a slot that go to a guest together (``FUNCTIONS_KEY``).

The drivers (``accel_backend.agent.discovery.drivers``) build these; the
conductor's payloads (``accel_backend.conductor.payloads``) carry them
between an agent and a conductor, and ``conductor.host_sync`` writes
them as rows.
"""

import dataclasses

#: The PCI attach handle key naming the functions of the handle's slot
#: that go to the guest with it (``"0,1"``: hex function numbers, the
#: handle's own included); absent for a single function
#: (``accel_backend.agent.discovery.iommu``).
FUNCTIONS_KEY = 'functions'

HEALTHY = 'healthy'
UNHEALTHY = 'unhealthy'


@dataclasses.dataclass
class DiscoveredDeployable:
    """What a driver found: one deployable of one device.

    :ivar address: PCI address of the device (``DDDD:BB:SS.F``).
    :ivar resource_class: Placement resource class of its inventory.
    :ivar traits: set of trait names for its resource provider.
    :ivar attach_handles: list of ``(attach_type, attach_info dict)``; the
        inventory total is their count.
    :ivar subname: None for the device's only deployable; a name (e.g. an
        mdev type) when a device has several, each its own provider.
    :ivar deployable_name: overrides the default ``<host>_<address>``
        [``_<subname>``] deployable name.
    :ivar cleaning: step between tenants: ``flr``, ``command``, ``none``.
    :ivar health: ``healthy`` or ``unhealthy`` (then ``health_reason``).
    :ivar pool: None, or the pool tag (str) of a whole function its driver
        was asked to pool (``common.pooling``): functions of one host
        with the same tag, product and locality become one deployable.
    :ivar members: for a pooled deployable (``common.pooling.merge``),
        one dict per function: ``address``, ``health``, ``health_reason``,
        ``std_board_info`` and ``handle`` (its ``(attach_type,
        attach_info)``); None otherwise.
    :ivar taints: None, or the taints ``[taints] devices`` gives it
        (``agent.discovery.config_taints``): dicts of ``function``
        (``''`` for the whole deployable), ``key``, ``effect``,
        ``value``, ``reason``.
    """

    address: str
    device_type: str
    vendor_id: str
    product_id: str
    model: str
    driver_name: str
    resource_class: str
    traits: set
    attach_handles: list
    numa_node: int = None
    std_board_info: dict = dataclasses.field(default_factory=dict)
    subname: str = None
    deployable_name: str = None
    cleaning: str = 'none'
    health: str = HEALTHY
    health_reason: str = None
    pool: str = None
    members: list = None
    taints: list = None
