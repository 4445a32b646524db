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

"""SQLAlchemy models: one table per Cyborg v2 resource.

Names follow Cyborg's data model (device -> deployable -> attach handle;
device profile; extended accelerator request) so operators recognise them.
Timestamps are naive UTC.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm


def utcnow():
    """Now, as naive UTC (the timestamps of every table)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


_utcnow = utcnow


class Base(orm.DeclarativeBase):
    """The declarative base of every table of accel_backend (one
    ``MetaData``, which the Alembic migrations follow)."""


class TimestampMixin:
    """``created_at`` (naive UTC, set at insert) and ``updated_at`` (naive
    UTC, set by the ORM at each update; NULL before the first)."""
    created_at = sa.Column(sa.DateTime, default=_utcnow, nullable=False)
    updated_at = sa.Column(sa.DateTime, onupdate=_utcnow)


class DeviceProfile(TimestampMixin, Base):
    """A "flavor for devices": named list of request groups (JSON)."""

    __tablename__ = 'device_profiles'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    description = sa.Column(sa.Text)
    groups = sa.Column(sa.JSON, nullable=False)


class Device(TimestampMixin, Base):
    """A physical card on a host (PCI function that was discovered)."""

    __tablename__ = 'devices'
    __table_args__ = (sa.UniqueConstraint('hostname', 'address'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    type = sa.Column(sa.String(30), nullable=False)
    vendor = sa.Column(sa.String(16), nullable=False)
    model = sa.Column(sa.String(255), nullable=False)
    hostname = sa.Column(sa.String(255), nullable=False, index=True)
    address = sa.Column(sa.String(16), nullable=False)
    std_board_info = sa.Column(sa.JSON)
    vendor_board_info = sa.Column(sa.JSON)
    status = sa.Column(sa.String(16), nullable=False, default='enabled')
    # The discovery driver's verdict ('healthy' | 'unhealthy') and why;
    # an unhealthy device is never bound and stays reserved in Placement.
    health = sa.Column(sa.String(16), nullable=False, default='healthy',
                       server_default='healthy')
    health_reason = sa.Column(sa.Text)
    deployables = orm.relationship('Deployable', back_populates='device',
                                   cascade='all, delete-orphan')


class Deployable(TimestampMixin, Base):
    """The schedulable unit of a device: one resource provider."""

    __tablename__ = 'deployables'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    device_id = sa.Column(sa.Integer, sa.ForeignKey('devices.id'),
                          nullable=False)
    name = sa.Column(sa.String(255), nullable=False)
    rp_uuid = sa.Column(sa.String(36), unique=True)
    num_accelerators = sa.Column(sa.Integer, nullable=False, default=1)
    driver_name = sa.Column(sa.String(100))
    resource_class = sa.Column(sa.String(255), nullable=False)
    traits = sa.Column(sa.JSON, nullable=False, default=list)
    # Cleaning step between tenants ('flr' | 'command' | 'none'/NULL),
    # chosen by the discovery driver.
    cleaning = sa.Column(sa.String(16))
    device = orm.relationship('Device', back_populates='deployables')
    attach_handles = orm.relationship('AttachHandle',
                                      back_populates='deployable',
                                      cascade='all, delete-orphan')
    attributes = orm.relationship('Attribute', back_populates='deployable',
                                  cascade='all, delete-orphan',
                                  passive_deletes=True)
    taints = orm.relationship('DeployableTaint',
                              back_populates='deployable',
                              cascade='all, delete-orphan',
                              passive_deletes=True,
                              order_by='DeployableTaint.id')


class Attribute(TimestampMixin, Base):
    """A key/value pair an operator attached to a deployable (Cyborg
    ``attributes``); keys are unique per deployable."""

    __tablename__ = 'attributes'
    __table_args__ = (sa.UniqueConstraint('deployable_id', 'key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    deployable_id = sa.Column(
        sa.Integer, sa.ForeignKey('deployables.id', ondelete='CASCADE'),
        nullable=False, index=True)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.Text, nullable=False)
    deployable = orm.relationship('Deployable', back_populates='attributes')


class DeployableTaint(Base):
    """A taint an operator put on a deployable, or on one function of a
    pooled deployable (``objects.taint``), after Kubernetes DRA's device
    taints (KEP-5055): key, value, effect, time added; plus why and who.
    One per ``(deployable, function, key)``."""

    __tablename__ = 'deployable_taints'
    __table_args__ = (sa.UniqueConstraint('deployable_id', 'function',
                                          'key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    deployable_id = sa.Column(
        sa.Integer, sa.ForeignKey('deployables.id', ondelete='CASCADE'),
        nullable=False, index=True)
    # '' for the whole deployable, else the PCI address of one member of
    # a pooled deployable (``objects.pool_members``).
    function = sa.Column(sa.String(16), nullable=False, default='',
                         server_default='')
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255))
    # 'NoSchedule' | 'NoExecute'
    effect = sa.Column(sa.String(16), nullable=False)
    reason = sa.Column(sa.Text)
    set_by = sa.Column(sa.String(255))
    created_at = sa.Column(sa.DateTime, default=_utcnow, nullable=False)
    deployable = orm.relationship('Deployable', back_populates='taints')


class AttachHandle(TimestampMixin, Base):
    """What the virt driver attaches: a PCI address or an mdev UUID."""

    __tablename__ = 'attach_handles'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    deployable_id = sa.Column(sa.Integer, sa.ForeignKey('deployables.id'),
                              nullable=False)
    attach_type = sa.Column(sa.String(16), nullable=False)
    attach_info = sa.Column(sa.JSON, nullable=False)
    in_use = sa.Column(sa.Boolean, nullable=False, default=False)
    # Lifecycle between tenants (objects.device): available -> bound ->
    # dirty -> cleaning -> available | clean_failed (reason in
    # state_reason).  Only 'available' handles are claimed.
    state = sa.Column(sa.String(16), nullable=False, default='available',
                      server_default='available', index=True)
    state_reason = sa.Column(sa.Text)
    deployable = orm.relationship('Deployable',
                                  back_populates='attach_handles')


class ARQ(TimestampMixin, Base):
    """An accelerator request: one accelerator for one instance."""

    __tablename__ = 'accelerator_requests'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    state = sa.Column(sa.String(16), nullable=False, index=True)
    device_profile_id = sa.Column(sa.Integer,
                                  sa.ForeignKey('device_profiles.id'))
    device_profile_name = sa.Column(sa.String(255), nullable=False)
    device_profile_group_id = sa.Column(sa.Integer, nullable=False)
    device_profile_group = sa.Column(sa.JSON, nullable=False)
    hostname = sa.Column(sa.String(255))
    device_rp_uuid = sa.Column(sa.String(36))
    instance_uuid = sa.Column(sa.String(36), index=True)
    project_id = sa.Column(sa.String(255), index=True)
    attach_handle_id = sa.Column(sa.Integer,
                                 sa.ForeignKey('attach_handles.id'),
                                 unique=True)
    # Outcome of binding that Nova has not been told yet: 'completed' or
    # 'failed'; cleared once Nova accepted the event.  Persisted so a
    # restart re-sends it.
    pending_event = sa.Column(sa.String(16))
    attach_handle = orm.relationship('AttachHandle')


class HostStatus(Base):
    """The last discovery pass of each host: ``state`` ``ok``,
    ``degraded`` (reported, but a misconfiguration withheld devices),
    ``refused`` (a misconfiguration: nothing was reported or removed) or
    ``failing`` (e.g. Placement unreachable), with the reason and the
    error code."""

    __tablename__ = 'host_status'
    hostname = sa.Column(sa.String(255), primary_key=True)
    state = sa.Column(sa.String(16), nullable=False)
    code = sa.Column(sa.String(64))
    reason = sa.Column(sa.Text)
    updated_at = sa.Column(sa.DateTime, default=_utcnow, onupdate=_utcnow,
                           nullable=False)
