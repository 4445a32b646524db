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

"""The database work of one host's agent: ``HostStore``.

An agent does the host work (discovery, cleaning steps, health) and
commits nothing itself: every row it needs changed goes through a
``HostStore`` bound to its host.  The embedded ``accel-backend`` uses one
directly on its own database; an ``accel-backend-agent`` uses
``accel_backend.conductor.rpcapi.RemoteHostStore``, whose calls the conductor
serves with a ``HostStore`` of the host named in the message.

Every method acts on the rows of ``hostname`` only: a handle or resource
provider of another host is refused with ``NotThisHost`` and nothing
changes, so an agent configured as host A cannot clean, re-enable or
re-report a device of host B.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from accel_backend.common import host_states
from accel_backend.common import pooling
from accel_backend.common import provider_records
from accel_backend.conductor import host_sync
from accel_backend.conductor import mig_hold
from accel_backend.conductor import pool_migration
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import deployable as deployable_obj
from accel_backend.objects import device as device_obj
from accel_backend.objects import host_status
from accel_backend import transports
from accel_common import arq_states
from accel_common import pci

LOG = logging.getLogger(__name__)


class HostStore:
    """Rows of one host, changed in transactions of their own.

    :param db: ``accel_backend.db.api.Database``.
    :param hostname: the host (str, an agent's ``[DEFAULT] host``).
    :param max_removal_share: ``[discovery] max_removal_share`` (float).
    :param aer_recovery_passes: ``[discovery] aer_recovery_passes`` (int).
    :param notifications: ``accel_backend.notifications.Notifications``
        told about health changes, or None.
    :param tolerable: ``[taints] tolerable_keys`` (collection of str):
        the taints reported as traits, not reservations
        (``objects.taint.is_tolerable``).
    """

    def __init__(self, db, hostname, max_removal_share=1.0,
                 aer_recovery_passes=3, notifications=None, tolerable=()):
        self.db = db
        self.hostname = hostname
        self.max_removal_share = max_removal_share
        self.aer_recovery_passes = aer_recovery_passes
        self.notifications = notifications
        self.tolerable = frozenset(tolerable)

    @classmethod
    def from_conf(cls, db, conf, hostname=None, notifications=None):
        """A store of ``hostname`` (default ``conf.host``) with
        ``[discovery]``'s limits and ``[taints] tolerable_keys``."""
        return cls(db, hostname or conf.host,
                   max_removal_share=conf.discovery.max_removal_share,
                   aer_recovery_passes=conf.discovery.aer_recovery_passes,
                   notifications=notifications,
                   tolerable=conf.taints.tolerable_keys)

    @property
    def engine(self):
        """The SQLAlchemy engine: cleaners of this process are woken by
        its commits of releases (``watch_releases``)."""
        return self.db.engine

    def watch_releases(self, callback):
        """Call ``callback()`` after each commit on ``engine`` that
        released an attach handle (``objects.device.on_release``): the
        embedded service's ``agent.cleaning.Cleaner.kick``."""
        device_obj.on_release(self.db.engine, callback)

    def unwatch_releases(self, callback):
        """Undo ``watch_releases(callback)``."""
        device_obj.forget_release(self.db.engine, callback)

    # -- discovery -----------------------------------------------------

    def sync(self, found, force=False):
        """Store what discovery found on the host (``conductor.host_sync``)
        and tell ``notifications`` about health changes and the health
        taints set or removed (``conductor.health_taints``).

        :param found: list of ``DiscoveredDeployable``.
        :param force: delete whatever vanished (``discovery sync
            --force``).
        :returns: list of ``provider_records.ProviderRecord``, one per
        deployable.
        :raises MassRemovalRefused: too many devices would be removed;
            nothing changed.
        """
        changes, taint_changes = [], []
        with self.db.transaction() as session:
            deps = host_sync.sync(
                session, self.hostname, found,
                max_removal_share=self.max_removal_share, force=force,
                health_changes=changes,
                aer_recovery_passes=self.aer_recovery_passes,
                taint_changes=taint_changes)
            reported = [self._provider_record(d) for d in deps]
        if self.notifications is not None:
            for change in changes:
                self.notifications.device_health(change)
            for event, payload in taint_changes:
                self.notifications.device_taint(
                    'accelerator.device.' + event, payload)
        return reported

    def pool_moves(self, found, force=False):
        """What turning pooling on moves (``conductor.pool_migration``):
        read only.

        :param found: list of ``DiscoveredDeployable``.
        :param force: as ``sync``'s.
        :returns: list of ``pool_migration.Move``, empty when the
            database has no per-device deployable of a pool member.
        :raises MassRemovalRefused: ``sync`` would refuse the pass
            (checked only when there is something to move).
        """
        with self.db.transaction() as session:
            moves = pool_migration.moves(session, self.hostname, found)
            if moves:
                host_sync.check_removals(
                    session, self.hostname, found,
                    max_removal_share=self.max_removal_share, force=force)
            return moves

    def migrate_pools(self, found):
        """Move the rows of the pools' members under the pools, in one
        transaction (``conductor.pool_migration.move``), after Placement
        was reshaped (``agent.placement.reshape``).

        :returns: ``{old rp_uuid: pool rp_uuid}`` of what moved.
        """
        with self.db.transaction() as session:
            return pool_migration.move(
                session, self.hostname, found,
                aer_recovery_passes=self.aer_recovery_passes)

    def _provider_record(self, dep):
        address, subname = deployable_obj.record_name(self.hostname, dep)
        return provider_records.ProviderRecord(
            rp_uuid=dep.rp_uuid, address=address,
            resource_class=dep.resource_class, total=dep.num_accelerators,
            traits=tuple(sorted(deployable_obj.provider_traits(
                dep, self.tolerable))),
            reserved=deployable_obj.reserved_units(dep, self.tolerable),
            subname=subname)

    def reserved_units(self, rp_uuid):
        """Units of the host's resource provider ``rp_uuid`` that must not
        be scheduled (int), or None when it is not one of ours.

        :raises NotThisHost: the provider is another host's.
        """
        with self.db.transaction() as session:
            host = session.scalar(
                sa.select(models.Device.hostname).join(models.Deployable)
                .where(models.Deployable.rp_uuid == rp_uuid).limit(1))
            self._check(host, 'resource provider', rp_uuid)
            return deployable_obj.reserved_units_of_rp(session, rp_uuid,
                                                       self.tolerable)

    def hold_gpu(self, address):
        """Hold the host's GPU at ``address`` for a MIG repartition if
        it is idle (``conductor.mig_hold.hold``): the rp UUIDs of its
        deployables, or None when something holds one of its handles."""
        with self.db.transaction() as session:
            return mig_hold.hold(session, self.hostname, address)

    def release_gpu(self, address):
        """``conductor.mig_hold.release`` of the host's GPU at
        ``address``: the rp UUIDs of its deployables."""
        with self.db.transaction() as session:
            return mig_hold.release(session, self.hostname, address)

    def record_status(self, state, reason=None, code=None):
        """Record the outcome of a discovery pass or start
        (``objects.host_status``).

        :returns: the state recorded before (str), None for the first.
        """
        with self.db.transaction() as session:
            row = session.get(models.HostStatus, self.hostname)
            before = row.state if row is not None else None
            host_status.record(session, self.hostname, state,
                               reason=reason, code=code)
            return before

    def bind_started(self):
        """UUIDs of the host's ``BindStarted`` ARQs, oldest first (list of
        str): the binds a pool migration held
        (``conductor.failure.HOST_MIGRATING``)."""
        with self.db.transaction() as session:
            return list(session.scalars(
                sa.select(models.ARQ.uuid).where(
                    models.ARQ.hostname == self.hostname,
                    models.ARQ.state == arq_states.BIND_STARTED)
                .order_by(models.ARQ.id)))

    # -- cleaning ------------------------------------------------------

    def handles_to_clean(self):
        """The host's ``dirty`` and ``cleaning`` handles, oldest first.

        :returns: list of ``[handle_uuid, rp_uuid]``.
        """
        with self.db.transaction() as session:
            todo = device_obj.handles_to_clean(session, self.hostname)
            return [[u, device_obj.get_handle(session, u).deployable.rp_uuid]
                    for u in todo]

    def start_cleaning(self, handle_uuid):
        """Commit ``cleaning`` for a ``dirty`` handle (a ``cleaning`` one
        stays) before the step runs.

        :returns: None when it is not to be cleaned (any more), else a
            dict: ``method``, ``address`` (the function to clean),
            ``rp_uuid``, ``handle_info`` and ``about`` (the fields of a
            ``cleaning_error`` notification).
        :raises NotThisHost: the handle is another host's.
        """
        with self.db.transaction() as session:
            self._own_handle(session, handle_uuid)
            if not device_obj.start_cleaning(session, handle_uuid):
                return None
            handle = device_obj.get_handle(session, handle_uuid)
            dep = handle.deployable
            method = dep.cleaning or 'none'
            address = dep.device.address
            handle_info = dict(handle.attach_info or {})
            if pooling.is_pool_address(address):
                # A pooled deployable: each handle is its own function.
                address = str(pci.from_handle_info(handle_info))
            dev = dep.device
            about = dict(uuid=dev.uuid, hostname=dev.hostname,
                         address=address, type=dev.type, vendor=dev.vendor,
                         model=dev.model, attach_handle_uuid=handle_uuid,
                         method=method)
            return dict(method=method, address=address,
                        rp_uuid=dep.rp_uuid, handle_info=handle_info,
                        about=about)

    def finish_cleaning(self, handle_uuid, error=None):
        """Commit the outcome of a cleaning: ``available``, or
        ``clean_failed`` with ``error`` (str).

        :returns: the handle's new state (str), or None when it is gone.
        :raises NotThisHost: the handle is another host's.
        """
        with self.db.transaction() as session:
            self._own_handle(session, handle_uuid)
            dep = device_obj.finish_cleaning(session, handle_uuid, error)
            if dep is None:
                return None
            return device_obj.get_handle(session, handle_uuid).state

    # -- ownership -----------------------------------------------------

    def _own_handle(self, session, handle_uuid):
        host = session.scalar(
            sa.select(models.Device.hostname)
            .join(models.Deployable).join(models.AttachHandle)
            .where(models.AttachHandle.uuid == handle_uuid))
        self._check(host, 'attach handle', handle_uuid)

    def _check(self, host, kind, ident):
        if host is not None and host != self.hostname:
            LOG.error('Refused: host %s asked to change %s %s of host %s',
                      self.hostname, kind, ident, host)
            raise exception.NotThisHost(host=self.hostname, kind=kind,
                                        ident=ident)


def record_refusal(conf, error, agent=False, transport=None):
    """Record that this host's service refused to start, so that the
    API's health check says why: in the database (embedded service),
    through a conductor (``agent``: it has no database).  Failures are
    logged, never raised.

    :param error: the exception that made it refuse.
    :param transport: an RPC transport (default: one built from
        ``[DEFAULT] transport_url`` and cleaned up here).
    """
    code = getattr(error, 'code', None) or type(error).__name__
    db = owned = None
    try:
        if agent:
            if transport is None:
                transport = owned = transports.get_rpc_transport(conf)
            store = conductor_rpcapi.RemoteHostStore(
                conductor_rpcapi.ConductorAPI.from_conf(conf, transport,
                                                        timeout=10),
                conf.host)
        else:
            db = db_api.Database(conf.database.connection)
            store = HostStore(db, conf.host)
        store.record_status(host_states.REFUSED, reason=str(error),
                            code=code)
    except Exception as e:
        LOG.warning('Cannot record the refusal of host %s: %s', conf.host, e)
    finally:
        if db is not None:
            db.dispose()
        if owned is not None:
            owned.cleanup()
