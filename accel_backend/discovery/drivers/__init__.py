"""Discovery drivers and the record they return.

A driver is a class ``Driver(conf)`` with ``name`` and ``discover() ->
list[DiscoveredDeployable]``; drivers are looked up by name in the entry
point group ``accel_backend.discovery.drivers`` (stevedore).
"""

import dataclasses

from stevedore import driver as sv_driver

NAMESPACE = 'accel_backend.discovery.drivers'


@dataclasses.dataclass
class DiscoveredDeployable:
    """What a driver found: one device with one deployable.

    :ivar address: PCI address of the device (``DDDD:BB:SS.F``).
    :ivar resource_class: Placement resource class of its inventory.
    :ivar traits: set of trait names for its resource provider.
    :ivar attach_handles: list of ``(attach_type, attach_info dict)``; the
        inventory total is their count.
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


def load(conf, names):
    """Instantiate the drivers named in ``names`` (list of str).

    :raises stevedore.exception.NoMatches: an unknown driver name.
    """
    return [sv_driver.DriverManager(NAMESPACE, name, invoke_on_load=True,
                                    invoke_args=(conf,)).driver
            for name in names]
