"""FPGA cards (resource class FPGA), selected by PCI ids."""

import fnmatch

from oslo_log import log as logging

from accel_backend.discovery.drivers import base

LOG = logging.getLogger(__name__)


class FPGADriver(base.PCIDriverBase):
    """Each PCI function whose ``vendor:product`` is in ``[discovery]
    fpga_ids`` (globs allowed: ``10ee:*``) is one FPGA.

    Traits: ``CUSTOM_FPGA_XILINX`` / ``CUSTOM_FPGA_INTEL`` (other vendors
    ``CUSTOM_FPGA_<vendor id>``), vendor/product and NUMA traits.  SR-IOV
    VFs are skipped.

    :param conf: accel_backend ``ConfigOpts``.
    :raises ValueError: a malformed ``fpga_ids`` entry.
    """

    name = 'fpga'
    VENDOR_TRAITS = {'10ee': 'CUSTOM_FPGA_XILINX', '8086': 'CUSTOM_FPGA_INTEL',
                     '1172': 'CUSTOM_FPGA_INTEL'}

    def __init__(self, conf):
        super().__init__(conf)
        self.ids = []
        for entry in conf.discovery.fpga_ids:
            vendor, sep, product = entry.strip().lower().partition(':')
            if not sep or len(vendor) != 4 or not product:
                raise ValueError('[discovery] fpga_ids: %r is not '
                                 'vendor:product' % entry)
            self.ids.append((vendor, product))

    def _selected(self, fn):
        return any(fn.vendor_id == v and fnmatch.fnmatch(fn.product_id, p)
                   for v, p in self.ids)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address."""
        found = []
        for fn in self.functions():
            if not self._selected(fn):
                continue
            if fn.physfn:
                LOG.debug('Skipping %s: SR-IOV VF of %s', fn.address,
                          fn.physfn)
                continue
            if self.refused(fn):
                continue
            vendor_trait = self.VENDOR_TRAITS.get(
                fn.vendor_id, 'CUSTOM_FPGA_%s' % fn.vendor_id.upper())
            found.append(self.deployable(
                fn, device_type='FPGA', resource_class='FPGA',
                traits={vendor_trait} | base.pci_traits(fn),
                attach_handles=[('PCI', fn.address_parts)]))
        return found
