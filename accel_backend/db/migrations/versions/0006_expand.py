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

"""Device taints: ``deployable_taints`` (``objects.taint``), a new table,
so an expand step (the previous release never reads it).

Revision ID: 0006_expand
Revises: 0005_expand
Create Date: 2026-12-04
"""
from alembic import op
import sqlalchemy as sa

revision = '0006_expand'
down_revision = '0005_expand'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'deployable_taints',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('deployable_id', sa.Integer,
                  sa.ForeignKey('deployables.id', ondelete='CASCADE'),
                  nullable=False, index=True),
        sa.Column('function', sa.String(16), nullable=False,
                  server_default=''),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('value', sa.String(255)),
        sa.Column('effect', sa.String(16), nullable=False),
        sa.Column('reason', sa.Text),
        sa.Column('set_by', sa.String(255)),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.UniqueConstraint('deployable_id', 'function', 'key'))


def downgrade():
    op.drop_table('deployable_taints')
