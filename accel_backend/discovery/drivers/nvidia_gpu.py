"""NVIDIA GPUs passed through whole (resource class PGPU)."""

from oslo_log import log as logging

from accel_backend.discovery.drivers import base
from accel_backend.discovery import pci_ids

LOG = logging.getLogger(__name__)
VENDOR = '10de'
#: PCI class codes (class and subclass) of display controllers that are
#: compute GPUs: VGA-compatible (0300) and 3D controller (0302).
CLASSES = ('0300', '0302')


class NvidiaGPUDriver(base.PCIDriverBase):
    """Every NVIDIA display/3D controller is one PGPU.

    Traits: ``CUSTOM_NVIDIA_<PRODUCT>`` from the pci.ids name (``TU104GL
    [Tesla T4]`` -> ``CUSTOM_NVIDIA_T4``; unknown products get
    ``CUSTOM_NVIDIA_<product id>``), vendor/product and NUMA traits. The
    device record's ``model`` is the human-readable pci.ids name.  SR-IOV
    virtual functions are skipped unless ``[discovery]
    nvidia_include_vfs``; a PF whose VFs are enabled is then left out (its
    VFs are the units).

    :param conf: accel_backend ``ConfigOpts``.
    """

    name = 'nvidia_gpu'

    def __init__(self, conf):
        super().__init__(conf)
        self.include_vfs = conf.discovery.nvidia_include_vfs

    def product_trait(self, product_id):
        """The ``CUSTOM_NVIDIA_<PRODUCT>`` trait of a GPU (os-traits'
        custom trait syntax: ``CUSTOM_`` then ``[A-Z0-9_]``).

        :param product_id: the PCI device id, four lowercase hex digits
            (str, ``'1eb8'``).
        :returns: str: ``CUSTOM_NVIDIA_`` and ``pci_ids.product_token`` of
            the pci.ids name (``'1eb8'`` -> ``CUSTOM_NVIDIA_T4``), or the
            uppercased id when pci.ids does not name the product or yields
            no token (``CUSTOM_NVIDIA_1EB8``).  Never raises.
        """
        name = self.pci_ids.device_name(VENDOR, product_id)
        token = pci_ids.product_token(name) if name else None
        return 'CUSTOM_NVIDIA_%s' % (token or product_id.upper())

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address."""
        gpus = [fn for fn in self.functions()
                if fn.vendor_id == VENDOR and fn.class_code[:4] in CLASSES]
        parents = {fn.physfn for fn in gpus if fn.physfn}
        found = []
        for fn in gpus:
            if fn.physfn and not self.include_vfs:
                LOG.debug('Skipping %s: SR-IOV VF of %s', fn.address,
                          fn.physfn)
                continue
            if self.include_vfs and fn.address in parents:
                LOG.info('Skipping %s: its SR-IOV VFs are reported',
                         fn.address)
                continue
            if self.refused(fn):
                continue
            found.append(self.deployable(
                fn, device_type='GPU', resource_class='PGPU',
                traits={self.product_trait(fn.product_id)} |
                base.pci_traits(fn),
                attach_handles=[('PCI', fn.address_parts)]))
        return found
