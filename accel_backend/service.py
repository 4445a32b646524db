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

"""The accel_backend process: API, conductor and agent work.

``Service`` wires the pieces together for one of four roles:

``embedded`` (``accel-backend``, ``accel_backend.cmd.server``)
    everything in one process: the API (cheroot), the binder, discovery,
    the Placement report, cleaning and the audit of ``[DEFAULT] host``.
    Binds run in the PATCH's transaction (``[binding] mode = inline``, the
    default) or after its commit (``mode = agents``, where the process is
    also the conductor of the other hosts' ``accel-backend-agent``).
``api`` (``accel-backend-api``, ``accel_backend.cmd.api``)
    the REST API only, on the shared database (PostgreSQL); bind requests
    are cast over oslo.messaging to a conductor, cleaning wake-ups to the
    agent of the device's host (``accel_backend.conductor.dispatcher``).
    Several may run.
``conductor`` (``accel-backend-conductor``)
    the database work of the agents (``accel_backend.conductor.rpc``), the
    binder (ARQs of every host, events to Nova) and the audit of every
    host; no API (``/metrics`` only).  Several may run.
``agent`` (``accel-backend-agent``, ``accel_backend.cmd.agent``)
    one per compute node, without database credentials: discovery and
    the Placement report of its host, cleaning and health; every row it
    needs goes through the conductor (``conductor.rpcapi.RemoteHostStore``).

Tests build a ``Service`` directly and serve ``service.app`` in-process.
"""

import os
import threading

from oslo_log import log as logging

from accel_backend.agent import cleaning
from accel_backend.agent.discovery import config_taints
from accel_backend.agent.discovery import drivers as drivers_mod
from accel_backend.agent.mig import repartition
from accel_backend.agent.placement import client as placement_client
from accel_backend.agent.placement import provider_tree
from accel_backend.agent.placement import report
from accel_backend.agent.placement import reshape
from accel_backend.agent import rpc as agent_rpc
from accel_backend.api import deploy
from accel_backend.common import host_states
from accel_backend.common import provider_records
from accel_backend.conductor import audit
from accel_backend.conductor import audit_hosts
from accel_backend.conductor import binder as binder_mod
from accel_backend.conductor import dispatcher as dispatcher_mod
from accel_backend.conductor import nova_notifier as notifier_mod
from accel_backend.conductor import pool_migration
from accel_backend.conductor import rpc as conductor_rpc
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend.conductor import store as store_mod
from accel_backend import conf as conf_mod
from accel_backend.conf import metrics as metrics_conf
from accel_backend.conf import taints as taints_conf
from accel_backend.db import api as db_api
from accel_backend import exception
from accel_backend import metrics
from accel_backend import notifications
from accel_backend.objects import deployable as deployable_obj
from accel_backend import periodic
from accel_backend import transports

LOG = logging.getLogger(__name__)

EMBEDDED = 'embedded'
API = 'api'
CONDUCTOR = 'conductor'
AGENT = 'agent'
ROLES = (EMBEDDED, API, CONDUCTOR, AGENT)


class Service:
    """One accel_backend process.

    :param conf: accel_backend ``ConfigOpts`` (see ``accel_backend.conf``).
    :param placement_auth: optional keystoneauth1 auth plugin for
        Placement (default: loaded from ``[placement]``).
    :param nova_auth: optional keystoneauth1 auth plugin for Nova
        (default: loaded from ``[nova]``).
    :param role: ``EMBEDDED``, ``API``, ``CONDUCTOR`` or ``AGENT`` (see
        the module).
    :param transport: an oslo.messaging RPC transport to use instead of
        one built from ``[DEFAULT] transport_url`` (tests share a
        ``fake://`` one between services).
    :param direct_db: with ``role = AGENT``: store in the database
        (``[database]``) instead of through a conductor; what
        ``accel-backend-manage discovery sync`` does where the database's
        credentials are (one host, before ``import-cyborg``).

    Only the embedded role creates or upgrades the schema at start, and
    only with ``[database] sync_on_startup`` (default true); otherwise the
    schema must be at this code's revision (``accel-backend-manage db
    sync``; several processes starting at once must not race alembic) or
    the service refuses to start (``SchemaOutOfDate``).  The agent opens
    no database: its ``[database]`` section is not read.
    """

    def __init__(self, conf, placement_auth=None, nova_auth=None,
                 role=EMBEDDED, transport=None, direct_db=False):
        if role not in ROLES:
            raise ValueError('role must be one of %s' % (ROLES,))
        self.conf = conf
        self.role = role
        self.tolerable, self.taint_rules = taints_conf.read(conf)
        self.db, self.direct_db = None, direct_db
        if role != AGENT or direct_db:
            self.db = db_api.Database.from_conf(conf)
            if role == EMBEDDED and conf.database.sync_on_startup:
                self.db.sync()
            else:
                self.db.check_schema()
        self.notifications = notifications.Notifications(conf)
        self.notifier = notifier_mod.NovaNotifier(
            notifier_mod.adapter_from_conf(conf, auth=nova_auth),
            host=conf.host)
        self.placement = placement_client.PlacementClient(
            placement_client.adapter_from_conf(conf, auth=placement_auth),
            host=conf.host)
        self.reporter = report.Reporter(
            self.placement, provider_records.compute_rp_names(conf),
            reserved_for=self._reserved_for,
            reserved_for_many=self._reserved_for_many,
            traits_for=self._traits_for if self.db is not None else None,
            max_removal_share=conf.discovery.max_removal_share,
            checkpoint=(os.path.join(conf.state_path,
                                     provider_tree.CHECKPOINT)
                        if role in (EMBEDDED, AGENT) else None))
        mode = conf_mod.binding_mode(conf) if role == EMBEDDED else None
        self.transport = transport
        if self.transport is None and (role != EMBEDDED or
                                       mode == 'agents'):
            self.transport = transports.get_rpc_transport(conf)
        self._owns_transport = transport is None and bool(self.transport)
        self.binder = self.cleaner = self.auditor = None
        self.store = self.repartitioner = None
        self.drivers = []
        if role in (EMBEDDED, CONDUCTOR):
            self.binder = binder_mod.Binder(
                self.db, self.notifier, workers=conf.binding.workers,
                retry_interval=conf.nova.event_retry_interval,
                retry_timeout=conf.nova.event_retry_timeout,
                notifications=self.notifications,
                # Half the API threads at most (the embedded service's
                # PATCH binds in its transaction; Binder.finish).
                inline_events=(conf.api.workers // 2
                               if role == EMBEDDED else 0))
        if role in (EMBEDDED, AGENT):
            self.store = self._host_store()
            self.drivers = drivers_mod.load(conf,
                                            conf.discovery.enabled_drivers)
            self.repartitioner = repartition.from_conf(
                conf, self.store, self.reporter)
            self.cleaner = cleaning.Cleaner(
                self.store, self.reporter, conf, conf.host,
                workers=conf.cleaning.workers,
                notifications=self.notifications)
        # Every role with the database serves the ARQ and device gauges.
        self.metrics = metrics.Endpoint(
            conf, db=self.db if role in (EMBEDDED, API, CONDUCTOR) else None,
            default_port=metrics_conf.PORTS[role])
        self.dispatcher = None
        if role in (EMBEDDED, API):
            self.dispatcher = dispatcher_mod.for_service(
                conf, role, self.binder, self.transport)
            # An operator's [healthcheck] backends still wins.
            conf.set_default('backends', list(conf_mod.HEALTH_BACKENDS[
                role]), group='healthcheck')
            self.app = deploy.make_app(conf, self)
        if self.binder is not None:
            self.auditor = (audit.Auditor.from_service(self)
                            if mode == 'inline' else
                            audit_hosts.AllHosts.from_service(self))
            self._audit_loop = periodic.AuditLoop(self.auditor,
                                                  conf.audit.interval)
        self._serves_conductor = role == CONDUCTOR or mode == 'agents'
        self._rpc_servers, self._thread = [], None
        self._stop = threading.Event()

    def _host_store(self):
        if self.role == AGENT and not self.direct_db:
            return conductor_rpcapi.RemoteHostStore(
                conductor_rpcapi.ConductorAPI.from_conf(self.conf,
                                                        self.transport),
                self.conf.host)
        return store_mod.HostStore.from_conf(
            self.db, self.conf, notifications=self.notifications)

    def discover_and_report(self, force=False, report=True,
                            repartition=True, replaced=frozenset()):
        """Discover devices, store them (``store.sync``), report them to
        Placement; then repartition idle MIG GPUs
        (``agent.mig.repartition``) and, when some were, do it all again.

        :param force: remove whatever vanished, even more than ``[discovery]
            max_removal_share`` of the host's devices (the operator's
            ``accel-backend-manage discovery sync --force``).
        :param report: False: store only, Placement is not called
            (``discovery sync --no-report``, before ``import-cyborg``).
        :param repartition, replaced: internal (the pass after one).
        :returns: list of ``ProviderRecord`` reported.
        :raises SysfsRootUnavailable: the sysfs root cannot be read;
            nothing changed.
        :raises MassRemovalRefused: too many devices or providers would be
            removed; none was.
        :raises PoolMigrationIncomplete: turning pooling on for a host
            with guests did not finish (``agent.placement.reshape.migrate``);
            the next pass finishes it.
        :raises ConductorUnavailable: (agent) the conductor did not answer;
            nothing changed.
        :raises ComputeNodeProviderNotFound: no compute node RP yet.
        :raises PlacementError: Placement failed.
        """
        span = self.conf.discovery.pool_numa_span
        found = drivers_mod.discover_all(
            self.drivers, span_numa=span, keep_spanning=(
                reshape.spanning_in_use(self.reporter.client,
                                        self.conf.host)
                if report and not span else None))
        config_taints.attach(found, self.taint_rules)
        migrated = report and reshape.migrate(self.store, self.reporter,
                                              found, force=force)
        reported = self.store.sync(found, force=force)
        if report:
            self.reporter.report(reported, force=force, replaced=(
                pool_migration.replaced_providers(self.conf.host, found) |
                set(replaced)))
        if migrated:
            reshape.finished(self.store, self.binder)
        if report and repartition and self.repartitioner is not None and \
                self.repartitioner.run():
            return self.discover_and_report(
                force=force, repartition=False,
                replaced=self.repartitioner.replaced)
        return reported

    def report_pass(self, force=False, report=True):
        """``discover_and_report`` once, its outcome recorded as this
        host's status (``objects.host_status``): what the API's health
        check and ``accel-backend-manage discovery status`` show.  A pass
        whose drivers withhold devices because of their configuration
        (``drivers.config_problems``: a Nova ``[pci] device_spec`` value
        that does not parse), or whose passthrough devices cannot be
        assigned (no IOMMU group, no interrupt remapping) is recorded
        ``degraded``, with why (``drivers.degraded``).

        :param report: as ``discover_and_report``.
        :returns: list of ``ProviderRecord`` reported.
        :raises: whatever ``discover_and_report`` raises, after recording
            it (``refused`` for a misconfiguration, else ``failing``).
        """
        with metrics.timed(metrics.DISCOVERY_SECONDS, host=self.conf.host,
                           outcome=host_states.OK) as labels:
            try:
                reported = self.discover_and_report(force=force,
                                                    report=report)
            except (exception.SysfsRootUnavailable,
                    exception.MassRemovalRefused) as e:
                labels['outcome'] = host_states.REFUSED
                self._record(host_states.REFUSED, e)
                raise
            except exception.PoolMigrationIncomplete as e:
                labels['outcome'] = host_states.FAILING
                self._record(host_states.MIGRATING, e)
                raise
            except Exception as e:
                labels['outcome'] = host_states.FAILING
                self._record(host_states.FAILING, e)
                raise
        withheld = drivers_mod.degraded(self.drivers)
        self._record(host_states.DEGRADED if withheld else host_states.OK,
                     withheld)
        return reported

    def _record(self, state, error=None):
        try:
            self.store.record_status(
                state, reason=str(error) if error is not None else None,
                code=getattr(error, 'code', None) or (
                    type(error).__name__ if error is not None else None))
        except Exception as e:
            LOG.warning('Cannot record the status of host %s: %s',
                        self.conf.host, e)

    def _reserved_for(self, rp_uuid):
        # With a database (embedded, API, conductor), read it: the API of
        # an embedded service also writes other hosts' providers (enable,
        # taint), which its own host store would refuse (NotThisHost).
        # An agent has none: its conductor reads it for its host.
        if self.db is None:
            return self.store.reserved_units(rp_uuid)
        with self.db.transaction() as session:
            return deployable_obj.reserved_units_of_rp(
                session, rp_uuid, self.tolerable)

    def _reserved_for_many(self, rp_uuids):   # an API's releases
        with self.db.transaction() as session:
            return deployable_obj.reserved_units_of_rps(
                session, rp_uuids, self.tolerable)

    def _traits_for(self, rp_uuid):   # a taint set or removed (the API)
        with self.db.transaction() as session:
            return deployable_obj.provider_traits_of_rp(
                session, rp_uuid, self.tolerable)

    def start(self):
        """Serve the metrics when enabled; resume half-done binding and
        cleaning work, serve the RPC APIs of the role (conductor, agent)
        and start the periodic report and audit
        (``accel_backend.conductor.audit``).
        The API role has nothing else to start.

        :raises OSError: the metrics port cannot be bound.
        """
        self.metrics.start()
        if self.metrics.port:
            LOG.info('Metrics at http://%s:%d/metrics',
                     self.conf.metrics.host, self.metrics.port)
        # Resume before serving casts: whatever the database says is
        # BindStarted is queued first (binding is idempotent, so a cast of
        # the same ARQ queued meanwhile by the broker changes nothing).
        if self.binder is not None:
            self.binder.resume()
        if self.cleaner is not None:
            self.cleaner.start()
        if self._serves_conductor:
            self._rpc_servers.append(conductor_rpc.start_server(
                self.transport, self.conf.conductor.topic, self.conf.host,
                conductor_rpc.store_factory(self.db, self.conf,
                                            self.notifications),
                self.binder))
        if self.role == AGENT:
            self._rpc_servers.append(agent_rpc.start_server(
                self.transport, self.conf.binding.agent_topic,
                self.conf.host, conductor_rpcapi.BindForwarder(self.store.api),
                self.cleaner))
        if self.binder is not None:
            self._audit_loop.start()
        if self.store is not None:
            self._thread = threading.Thread(target=self._report_loop,
                                            name='accel-report',
                                            daemon=True)
            self._thread.start()

    def _report_loop(self):
        interval = self.conf.discovery.report_interval
        done_once = False
        while not self._stop.is_set():
            try:
                self.report_pass()
                done_once = True
            except (exception.SysfsRootUnavailable,
                    exception.MassRemovalRefused) as e:
                # A misconfiguration: one clear line per pass, nothing
                # changed.
                LOG.error('Discovery refused: %s', e)
            except Exception as e:
                LOG.warning('Discovery/report failed, will retry: %s', e)
            if done_once and interval == 0:
                return
            # A thread and an Event, not futurist or oslo.service: see
            # accel_backend.periodic for the reason.
            self._stop.wait(interval if done_once and interval else 5)

    def stop(self):
        """Stop background work and close the database."""
        self._stop.set()
        self.metrics.stop()
        if self._rpc_servers:
            for server in self._rpc_servers:
                agent_rpc.stop_server(server)
            self._rpc_servers = []
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.binder is not None:
            self._audit_loop.stop()
            self.binder.stop()
        if self.cleaner is not None:
            self.cleaner.stop()
        if self.dispatcher is not None:
            self.dispatcher.stop()
        if self._owns_transport:
            self.transport.cleanup()
            self._owns_transport = False
        self.notifications.close()
        if self.db is not None:
            self.db.dispose()
