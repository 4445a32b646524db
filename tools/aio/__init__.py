"""All-in-one cloud: Keystone, Placement, Glance, RabbitMQ, Nova 34 and
accel_backend as separate processes on 127.0.0.1 (``python -m tools.aio``).
"""
