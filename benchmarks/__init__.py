"""Side-by-side benchmarks of nova-accel (``python -m benchmarks.run``)."""
