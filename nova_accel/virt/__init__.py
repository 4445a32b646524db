"""Nova compute drivers of nova_accel.

``LibvirtDriver`` and ``FakeDriver`` are imported lazily (PEP 562) so that
``nova_accel.virt.hostdev`` can be used without loading Nova's libvirt
driver.  The drivers depend on :mod:`nova_accel.hotplug` (through
:mod:`nova_accel.virt.hotplug`) and :mod:`nova_accel.binding`; neither
imports this package.
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
