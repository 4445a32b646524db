"""Generic PCI driver: whole PCI functions selected by device specs."""

from oslo_log import log as logging

from accel_backend.discovery import device_spec
from accel_backend.discovery.drivers import base

LOG = logging.getLogger(__name__)


class GenericPCIDriver(base.PCIDriverBase):
    """Report each PCI function matching a ``[discovery] device_spec``.

    Each match becomes one deployable with inventory 1 of the spec's
    resource class and one attach handle (the function's address).  SR-IOV
    virtual functions are skipped: a VF is not a whole device.  Functions
    Nova's PCI passthrough claims are refused (``PCIDriverBase``).

    :param conf: accel_backend ``ConfigOpts``.
    :raises DeviceSpecError: at construction, for a malformed spec.
    """

    name = 'generic_pci'

    def __init__(self, conf):
        super().__init__(conf)
        self.specs = device_spec.parse_all(conf.discovery.device_spec)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address."""
        found = []
        if not self.specs:
            return found
        for fn in self.functions():
            spec = next((s for s in self.specs if s.matches(fn)), None)
            if spec is None:
                continue
            if fn.physfn:
                LOG.info('Skipping %s: SR-IOV VF of %s', fn.address,
                         fn.physfn)
                continue
            if self.refused(fn):
                continue
            found.append(self.deployable(
                fn, device_type=spec.device_type,
                model=self.pci_ids.model(fn.vendor_id, fn.product_id),
                resource_class=spec.resource_class,
                traits=set(spec.traits) | base.pci_traits(fn),
                attach_handles=[(spec.attach_handle_type,
                                 fn.address_parts)]))
        return found
