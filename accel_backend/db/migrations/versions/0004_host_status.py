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

"""Host status: the outcome of each host's last discovery pass, so that
the API's health check and ``accel-backend-manage discovery status`` can
say which host refuses to discover and why.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'host_status',
        sa.Column('hostname', sa.String(255), primary_key=True),
        sa.Column('state', sa.String(16), nullable=False),
        sa.Column('code', sa.String(64)),
        sa.Column('reason', sa.Text),
        sa.Column('updated_at', sa.DateTime, nullable=False))


def downgrade():
    op.drop_table('host_status')
