# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Device lifecycle between tenants and device health.

Attach handles get ``state`` (available -> bound -> dirty -> cleaning ->
available, or clean_failed) and ``state_reason``; deployables the
cleaning step their driver asked for; devices a ``health`` verdict of
the discovery driver with its reason.  Handles in use when this runs are
``bound``.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""
from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('attach_handles', sa.Column(
        'state', sa.String(16), nullable=False, server_default='available'))
    op.add_column('attach_handles', sa.Column('state_reason', sa.Text))
    op.create_index('ix_attach_handles_state', 'attach_handles', ['state'])
    op.execute("UPDATE attach_handles SET state = 'bound' WHERE in_use")
    op.add_column('deployables', sa.Column('cleaning', sa.String(16)))
    op.add_column('devices', sa.Column(
        'health', sa.String(16), nullable=False, server_default='healthy'))
    op.add_column('devices', sa.Column('health_reason', sa.Text))


def downgrade():
    # Plain DROP COLUMN (SQLite >= 3.35 has it): a batch table rebuild
    # would trip the foreign keys that point at these tables.
    op.drop_column('devices', 'health_reason')
    op.drop_column('devices', 'health')
    op.drop_column('deployables', 'cleaning')
    op.drop_index('ix_attach_handles_state', 'attach_handles')
    op.drop_column('attach_handles', 'state_reason')
    op.drop_column('attach_handles', 'state')
