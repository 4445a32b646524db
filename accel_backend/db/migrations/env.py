"""Alembic environment: runs migrations on the connection handed over by
``accel_backend.db.api.sync`` (``config.attributes['connection']``)."""

from alembic import context

from accel_backend.db import models

config = context.config
connection = config.attributes['connection']
context.configure(connection=connection,
                  target_metadata=models.Base.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite')
with context.begin_transaction():
    context.run_migrations()
