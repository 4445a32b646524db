"""Mediated devices (vGPUs and the like) of mdev-capable PCI functions."""

import re

from oslo_log import log as logging

from accel_backend.discovery.drivers import base
from accel_backend.discovery import sysfs

LOG = logging.getLogger(__name__)


def type_trait(type_id):
    """``CUSTOM_MDEV_<TYPE>``: ``nvidia-222`` -> ``CUSTOM_MDEV_NVIDIA_222``."""
    return 'CUSTOM_MDEV_' + re.sub(r'[^A-Z0-9]+', '_',
                                   type_id.upper()).strip('_')


class MdevDriver(base.PCIDriverBase):
    """One deployable per (parent function, mdev type).

    Reads ``mdev_supported_types/<type>/{name,available_instances,
    device_api}`` of every function that has them (only the types in
    ``[discovery] mdev_types`` when set).  The inventory is the type's
    capacity (``available_instances`` plus the mdevs of that type that
    exist already), of ``[discovery] mdev_resource_class`` (VGPU).  Each
    unit is an ``MDEV`` attach handle whose info names the parent
    function (``parent`` and its domain/bus/device/function) and the
    ``asked_type``; the handle's UUID is the UUID the virt driver gives
    the mediated device.  Traits: ``CUSTOM_MDEV_<TYPE>``, the parent's
    vendor/product and NUMA traits.

    Types of one parent share its physical resources: creating one mdev
    lowers the other types' ``available_instances``, which the next
    discovery run reports.

    :param conf: accel_backend ``ConfigOpts``.
    """

    name = 'mdev'

    def __init__(self, conf):
        super().__init__(conf)
        if self.cleaning == 'flr':
            # A reset of the parent would wipe every tenant's mdev on it.
            raise ValueError('[cleaning] methods: flr cannot clean one '
                             'mediated device; use command or none for '
                             'the mdev driver')
        self.resource_class = conf.discovery.mdev_resource_class
        self.types = set(conf.discovery.mdev_types)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, by address and
        type."""
        found = []
        for fn in self.functions():
            types = [t for t in sysfs.mdev_types(self.root, fn.address)
                     if not self.types or t.type_id in self.types]
            if not types or self.refused(fn):
                continue
            info = base.board_info(fn, mdev_types={
                t.type_id: {'name': t.name, 'device_api': t.device_api}
                for t in types})
            for mtype in types:
                handles = [('MDEV', dict(
                    fn.address_parts, parent=fn.address,
                    asked_type=mtype.type_id,
                    vgpu_mark='%s_%d' % (mtype.type_id, i)))
                    for i in range(mtype.capacity)]
                found.append(self.deployable(
                    fn, device_type='GPU' if fn.class_code.startswith('03')
                    else 'OTHER',
                    resource_class=self.resource_class,
                    traits={type_trait(mtype.type_id)} | base.pci_traits(fn),
                    attach_handles=handles, subname=mtype.type_id,
                    std_board_info=info))
        return found
