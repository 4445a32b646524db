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

"""Initial schema: device profiles, devices, deployables, attach handles,
accelerator requests.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""
from alembic import op
import sqlalchemy as sa

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def _timestamps():
    return [sa.Column('created_at', sa.DateTime, nullable=False),
            sa.Column('updated_at', sa.DateTime)]


def upgrade():
    op.create_table(
        'device_profiles',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('name', sa.String(255), nullable=False, unique=True),
        sa.Column('description', sa.Text),
        sa.Column('groups', sa.JSON, nullable=False),
        *_timestamps())
    op.create_table(
        'devices',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('type', sa.String(30), nullable=False),
        sa.Column('vendor', sa.String(16), nullable=False),
        sa.Column('model', sa.String(255), nullable=False),
        sa.Column('hostname', sa.String(255), nullable=False, index=True),
        sa.Column('address', sa.String(16), nullable=False),
        sa.Column('std_board_info', sa.JSON),
        sa.Column('vendor_board_info', sa.JSON),
        sa.Column('status', sa.String(16), nullable=False),
        sa.UniqueConstraint('hostname', 'address'),
        *_timestamps())
    op.create_table(
        'deployables',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('device_id', sa.Integer, sa.ForeignKey('devices.id'),
                  nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('rp_uuid', sa.String(36), unique=True),
        sa.Column('num_accelerators', sa.Integer, nullable=False),
        sa.Column('driver_name', sa.String(100)),
        sa.Column('resource_class', sa.String(255), nullable=False),
        sa.Column('traits', sa.JSON, nullable=False),
        *_timestamps())
    op.create_table(
        'attach_handles',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('deployable_id', sa.Integer,
                  sa.ForeignKey('deployables.id'), nullable=False),
        sa.Column('attach_type', sa.String(16), nullable=False),
        sa.Column('attach_info', sa.JSON, nullable=False),
        sa.Column('in_use', sa.Boolean, nullable=False),
        *_timestamps())
    op.create_table(
        'accelerator_requests',
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('uuid', sa.String(36), nullable=False, unique=True),
        sa.Column('state', sa.String(16), nullable=False, index=True),
        sa.Column('device_profile_id', sa.Integer,
                  sa.ForeignKey('device_profiles.id')),
        sa.Column('device_profile_name', sa.String(255), nullable=False),
        sa.Column('device_profile_group_id', sa.Integer, nullable=False),
        sa.Column('device_profile_group', sa.JSON, nullable=False),
        sa.Column('hostname', sa.String(255)),
        sa.Column('device_rp_uuid', sa.String(36)),
        sa.Column('instance_uuid', sa.String(36), index=True),
        sa.Column('project_id', sa.String(255), index=True),
        sa.Column('attach_handle_id', sa.Integer,
                  sa.ForeignKey('attach_handles.id'), unique=True),
        sa.Column('pending_event', sa.String(16)),
        *_timestamps())
