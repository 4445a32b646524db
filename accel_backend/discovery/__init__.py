"""Device discovery: read PCI functions from sysfs and turn the ones the
operator asked for into deployables (resource class, traits, attach
handles).  Drivers are loaded with stevedore from the entry point group
``accel_backend.discovery.drivers``."""
