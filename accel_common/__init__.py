"""Rules shared by the two halves of nova-accel.

``nova_accel`` (Nova's side) and ``accel_backend`` (the accelerator
service) never import each other; what both must agree on lives here, once:
the ARQ state machine (:mod:`accel_common.arq_states`), device profile
groups (:mod:`accel_common.device_profile`) and PCI addresses
(:mod:`accel_common.pci`).  These modules import neither half, nor Nova,
nor SQLAlchemy, so the tempest plugin can use them too.
"""
