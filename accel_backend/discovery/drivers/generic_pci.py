"""Generic PCI driver: whole PCI functions selected by device specs."""

from oslo_log import log as logging

from accel_backend.discovery import device_spec
from accel_backend.discovery.drivers import DiscoveredDeployable
from accel_backend.discovery import sysfs

LOG = logging.getLogger(__name__)


class GenericPCIDriver:
    """Report each PCI function matching a ``[discovery] device_spec``.

    Each match becomes one deployable with inventory 1 of the spec's
    resource class and one attach handle (the function's address).  SR-IOV
    virtual functions are skipped: a VF is not a whole device.

    :param conf: accel_backend ``ConfigOpts``.
    :raises DeviceSpecError: at construction, for a malformed spec.
    """

    name = 'generic_pci'

    def __init__(self, conf):
        self.root = conf.discovery.sysfs_root
        self.specs = device_spec.parse_all(conf.discovery.device_spec)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address."""
        found = []
        for fn in sysfs.scan(self.root):
            spec = next((s for s in self.specs if s.matches(fn)), None)
            if spec is None:
                continue
            if fn.physfn:
                LOG.info('Skipping %s: SR-IOV VF of %s', fn.address,
                         fn.physfn)
                continue
            traits = set(spec.traits) | {
                'OWNER_CYBORG',
                'CUSTOM_PCI_VENDOR_%s' % fn.vendor_id.upper(),
                'CUSTOM_PCI_PRODUCT_%s_%s' % (fn.vendor_id.upper(),
                                              fn.product_id.upper())}
            found.append(DiscoveredDeployable(
                address=fn.address, device_type=spec.device_type,
                vendor_id=fn.vendor_id, product_id=fn.product_id,
                model='%s:%s' % (fn.vendor_id, fn.product_id),
                driver_name=self.name,
                resource_class=spec.resource_class, traits=traits,
                attach_handles=[(spec.attach_handle_type,
                                 fn.address_parts)],
                numa_node=fn.numa_node,
                std_board_info={'class': fn.class_code,
                                'iommu_group': fn.iommu_group,
                                'numa_node': fn.numa_node}))
        return found
