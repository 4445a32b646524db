"""Resource logic over the database: one module per API resource.

Functions take an open SQLAlchemy session (from
``accel_backend.db.api.Database.transaction``) so callers choose the
transaction boundary; they return model rows, and ``to_dict`` helpers give
the Cyborg v2 wire view.
"""
