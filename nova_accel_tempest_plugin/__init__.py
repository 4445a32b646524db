"""Tempest plugin of nova-accel: accel_backend API tests and scenario tests
of servers with accelerators (``tempest run --regex nova_accel``)."""
