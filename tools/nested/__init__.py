"""A nested compute node (L1): QEMU/TCG with a virtual IOMMU and emulated
PCI accelerators, running this checkout on a real Linux kernel
(``tools.nested.node``); its boot files are built once
(``tools.nested.image``).  Used by ``tests/nested`` (``tox -e nested``)."""
