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
