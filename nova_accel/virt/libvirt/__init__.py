"""libvirt compute driver of nova_accel (see :mod:`.driver`)."""
