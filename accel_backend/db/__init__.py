"""Persistence of accel_backend: SQLAlchemy models, queries, migrations."""
