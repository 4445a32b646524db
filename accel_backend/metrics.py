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

"""Prometheus metrics of accel_backend (``prometheus_client``).

Off unless ``[metrics] enabled``; then each long-running process
(embedded, API, conductor, agent) serves ``GET /metrics`` on ``[metrics]
host`` (default 127.0.0.1: only local scrapers, as the metrics name hosts
and resource classes), port ``[metrics] port`` or, unset, the port of its
role (``accel_backend.conf.metrics.PORTS``: 9732 embedded and API, 9733
conductor, 9734 agent), so that the roles of one host can share one
configuration file.  Labels are host, resource class, method, outcome and
the like, never an instance or a project.

Process-wide metrics live in one registry of ours (``REGISTRY``, with the
process collector).  Counters and histograms are updated where the work
happens, whether or not the endpoint is served; the gauges of ARQs by
state and devices by status and health are read from the database at
scrape time by every role that opens it: embedded, API and conductor (the
conductors are in every layout with a database, also where the API runs
under a WSGI server and serves no metrics).  Several processes then
serve the same database-wide values: the shipped alerts and dashboard
take ``max`` over them, never ``sum``.

Metric names and meanings are listed in the admin guide ("Metrics").
"""

import contextlib
import time

import prometheus_client
from prometheus_client import core
from prometheus_client import registry as prom_registry
import sqlalchemy as sa

from accel_backend.db import models

REGISTRY = prometheus_client.CollectorRegistry()
prometheus_client.ProcessCollector(registry=REGISTRY)

#: Latency buckets in seconds: binds take milliseconds, cleanings and
#: discovery up to minutes.
FAST = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)
SLOW = (.01, .1, .5, 1, 5, 10, 30, 60, 120, 300, 600)

BIND_SECONDS = prometheus_client.Histogram(
    'accel_bind_seconds', 'From the bind PATCH (ARQ BindStarted committed) '
    'to Bound committed, seconds.', ['host', 'resource_class'],
    buckets=FAST, registry=REGISTRY)
BIND_FAILURES = prometheus_client.Counter(
    'accel_bind_failures', 'ARQs that ended BindFailed, by reason.',
    ['host', 'resource_class', 'reason'], registry=REGISTRY)
EVENT_SECONDS = prometheus_client.Histogram(
    'accel_event_delivery_seconds', 'One POST of accelerator-request-bound '
    'events to Nova, seconds, by outcome (accepted; retry: some or all '
    'must be sent again, Nova unreachable included).',
    ['host', 'outcome'], buckets=FAST, registry=REGISTRY)
EVENT_RETRIES = prometheus_client.Counter(
    'accel_event_retries', 'Events to Nova that must be sent again.',
    ['host'], registry=REGISTRY)
CLEANING_SECONDS = prometheus_client.Histogram(
    'accel_cleaning_seconds', 'Cleaning of one attach handle between '
    'tenants, seconds, by method and outcome (ok, failed).',
    ['host', 'method', 'outcome'], buckets=SLOW, registry=REGISTRY)
PLACEMENT_SECONDS = prometheus_client.Histogram(
    'accel_placement_request_seconds', 'Placement calls, seconds, by '
    'method and HTTP status (0: no answer).', ['host', 'method', 'status'],
    buckets=FAST, registry=REGISTRY)
DISCOVERY_SECONDS = prometheus_client.Histogram(
    'accel_discovery_seconds', 'Discovery and Placement report passes, '
    'seconds, by outcome (ok, refused, failing).', ['host', 'outcome'],
    buckets=SLOW, registry=REGISTRY)

AUDIT_ORPHAN_DELETION = prometheus_client.Gauge(
    'accel_audit_orphan_deletion', '1 when the audit may delete the ARQs '
    'of instances Nova deleted (the [nova] credentials are proven to see '
    "every project's servers), 0 when that step is off.", ['host'],
    registry=REGISTRY)
AUDIT_KEPT_INSTANCES = prometheus_client.Counter(
    'accel_audit_kept_instances', 'Instances that may be gone whose ARQs '
    'an audit kept, by reason (accel_backend.conductor.nova_orphans).',
    ['host', 'reason'], registry=REGISTRY)


@contextlib.contextmanager
def timed(histogram, **labels):
    """Observe the duration of the block on ``histogram`` with
    ``labels``; a block may set ``labels['outcome']`` (or any label) in
    the dict it is given before it ends.

    :yields: the labels dict (mutable).
    """
    start = time.monotonic()
    try:
        yield labels
    finally:
        histogram.labels(**labels).observe(time.monotonic() - start)


class DatabaseCollector(prom_registry.Collector):
    """Gauges read from the database at scrape time:
    ``accel_arqs{state}``, ``accel_devices{host, resource_class,
    status, health}`` (a device with several resource classes counts once
    per class) and ``accel_device_taints{host, key, effect}`` (taints of
    deployables and of pool functions, ``objects.taint``: an operator's,
    the drain's, a health fault's, the audit's).

    :param db: ``accel_backend.db.api.Database``.
    """

    def __init__(self, db):
        self.db = db

    def collect(self):
        """:returns: iterator of ``GaugeMetricFamily``."""
        arqs = core.GaugeMetricFamily(
            'accel_arqs', 'ARQs by state.', labels=['state'])
        devices = core.GaugeMetricFamily(
            'accel_devices', 'Devices by host, resource class, status '
            '(enabled, disabled, missing) and health.',
            labels=['host', 'resource_class', 'status', 'health'])
        taints = core.GaugeMetricFamily(
            'accel_device_taints', 'Device taints by host, key and effect '
            '(NoSchedule, NoExecute).', labels=['host', 'key', 'effect'])
        with self.db.transaction() as session:
            for state, count in session.execute(sa.select(
                    models.ARQ.state, sa.func.count()).group_by(
                    models.ARQ.state)):
                arqs.add_metric([state], count)
            for host, rc, status, health, count in session.execute(
                    sa.select(models.Device.hostname,
                              models.Deployable.resource_class,
                              models.Device.status, models.Device.health,
                              sa.func.count(sa.distinct(models.Device.id)))
                    .join(models.Deployable,
                          models.Deployable.device_id == models.Device.id)
                    .group_by(models.Device.hostname,
                              models.Deployable.resource_class,
                              models.Device.status, models.Device.health)):
                devices.add_metric([host, rc, status, health], count)
            for host, key, effect, count in session.execute(
                    sa.select(models.Device.hostname,
                              models.DeployableTaint.key,
                              models.DeployableTaint.effect,
                              sa.func.count())
                    .join(models.Deployable,
                          models.DeployableTaint.deployable_id ==
                          models.Deployable.id)
                    .join(models.Device,
                          models.Deployable.device_id == models.Device.id)
                    .group_by(models.Device.hostname,
                              models.DeployableTaint.key,
                              models.DeployableTaint.effect)):
                taints.add_metric([host, key, effect], count)
        yield arqs
        yield devices
        yield taints


class Endpoint:
    """The ``/metrics`` server of one process, started only when
    ``[metrics] enabled``.

    :param conf: accel_backend ``ConfigOpts``.
    :param db: the service's ``Database`` to read gauges from, or None
        (agents).
    :param default_port: the port (int) when ``[metrics] port`` is unset:
        the role's (``accel_backend.conf.metrics.PORTS``).
    """

    def __init__(self, conf, db=None, default_port=9732):
        self.conf = conf
        self.db = db
        self.default_port = default_port
        self._server = None
        self._collector = None

    @property
    def configured_port(self):
        """The port to bind (int): ``[metrics] port``, or the role's
        default when unset (0: any free port)."""
        port = self.conf.metrics.port
        return self.default_port if port is None else port

    @property
    def port(self):
        """The port served (int), None when not serving."""
        return self._server.server_port if self._server else None

    def start(self):
        """Serve ``/metrics`` when enabled (no-op otherwise).

        :raises OSError: the port cannot be bound (the message names the
            address and port).
        """
        if not self.conf.metrics.enabled or self._server is not None:
            return
        if self.db is not None:
            self._collector = DatabaseCollector(self.db)
            REGISTRY.register(self._collector)
        host, port = self.conf.metrics.host, self.configured_port
        try:
            self._server, _ = prometheus_client.start_http_server(
                port, addr=host, registry=REGISTRY)
        except OSError as e:
            self.stop()
            raise OSError(e.errno, 'metrics endpoint [metrics] %s:%d: %s' % (
                host, port, e.strerror or e)) from e

    def stop(self):
        """Stop serving and drop the database gauges."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._collector is not None:
            REGISTRY.unregister(self._collector)
            self._collector = None
