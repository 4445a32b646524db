"""Functional tests: Nova 34's own functional harness (libvirt driver on
fake libvirt, Placement from openstack-placement) with accel_backend's
real WSGI app served in-process."""
