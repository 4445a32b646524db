"""Nova compute drivers of nova_accel.

``LibvirtDriver`` and ``FakeDriver`` are imported lazily (PEP 562) so that
``nova_accel.virt.hostdev`` and ``nova_accel.virt.binding`` can be used
without loading Nova's libvirt driver.
"""

__all__ = ['LibvirtDriver', 'FakeDriver']


def __getattr__(name):
    if name == 'LibvirtDriver':
        from nova_accel.virt.libvirt.driver import LibvirtDriver
        return LibvirtDriver
    if name == 'FakeDriver':
        from nova_accel.virt.fake import FakeDriver
        return FakeDriver
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
