"""Command line tools of nova_accel."""
