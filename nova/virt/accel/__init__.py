"""In-tree-style shim: ``[DEFAULT] compute_driver = accel.<Driver>``.

Nova loads its compute driver as ``nova.virt.<compute_driver>``; setup.cfg
ships this package into Nova's ``nova/virt/`` so that
``accel.LibvirtDriver`` and ``accel.FakeDriver`` resolve to the drivers of
:mod:`nova_accel.virt`.
"""

from nova_accel.virt.fake import FakeDriver
from nova_accel.virt.libvirt.driver import LibvirtDriver

__all__ = ['FakeDriver', 'LibvirtDriver']
