from nova_accel_tempest_plugin.services.accelerator_client import \
    AcceleratorClient

__all__ = ['AcceleratorClient']
