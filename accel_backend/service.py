"""The embedded accel_backend: API, binder and discovery in one process.

``Service`` wires the pieces together; ``accel_backend.cmd.server`` serves
its WSGI app with cheroot and runs the periodic discovery/report loop.
Tests build a ``Service`` directly and serve ``service.app`` in-process.
"""

import threading

from oslo_log import log as logging

from accel_backend.api import wsgi
from accel_backend import audit
from accel_backend.binding import binder as binder_mod
from accel_backend import cleaning
from accel_backend.db import api as db_api
from accel_backend.discovery import drivers as drivers_mod
from accel_backend.nova import notifier as notifier_mod
from accel_backend.objects import device as device_obj
from accel_backend.placement import client as placement_client
from accel_backend.placement import report

LOG = logging.getLogger(__name__)


class Service:
    """One accel_backend process.

    :param conf: accel_backend ``ConfigOpts`` (see ``accel_backend.conf``).
    :param placement_auth: optional keystoneauth1 auth plugin for
        Placement (default: loaded from ``[placement]``).
    :param nova_auth: optional keystoneauth1 auth plugin for Nova
        (default: loaded from ``[nova]``).
    """

    def __init__(self, conf, placement_auth=None, nova_auth=None):
        self.conf = conf
        self.db = db_api.Database(conf.database.connection)
        self.db.sync()
        self.notifier = notifier_mod.NovaNotifier(
            notifier_mod.adapter_from_conf(conf, auth=nova_auth))
        self.binder = binder_mod.Binder(
            self.db, self.notifier, workers=conf.binding.workers,
            retry_interval=conf.nova.event_retry_interval,
            retry_timeout=conf.nova.event_retry_timeout)
        self.placement = placement_client.PlacementClient(
            placement_client.adapter_from_conf(conf, auth=placement_auth))
        self.reporter = report.Reporter(self.placement,
                                        report.compute_rp_names(conf),
                                        reserved_for=self._reserved_for)
        self.drivers = drivers_mod.load(conf, conf.discovery.enabled_drivers)
        self.cleaner = cleaning.Cleaner(self.db, self.reporter, conf,
                                        conf.host)
        self.app = wsgi.make_app(conf, self)
        self.auditor = audit.Auditor.from_service(self)
        self._audit_loop = audit.AuditLoop(self.auditor,
                                           conf.audit.interval)
        self._stop = threading.Event()
        self._thread = None

    def discover_and_report(self):
        """Discover devices, store them, report them to Placement.

        :returns: list of ``ProviderRecord`` reported.
        :raises ComputeNodeProviderNotFound: nova-compute has not created
            the compute node RP yet.
        :raises PlacementError: Placement failed.
        """
        found = drivers_mod.discover_all(self.drivers)
        with self.db.transaction() as session:
            deps = device_obj.sync_host(session, self.conf.host, found)
            records = [report.ProviderRecord(
                rp_uuid=d.rp_uuid, address=d.device.address,
                resource_class=d.resource_class, total=d.num_accelerators,
                traits=tuple(d.traits),
                reserved=device_obj.reserved_units(d),
                subname=self._subname(d))
                for d in deps]
        self.reporter.report(records)
        return records

    def _subname(self, dep):
        # Deployables of a device with several are named
        # <host>_<address>_<subname> (objects.device.sync_host).
        prefix = '%s_%s_' % (self.conf.host, dep.device.address)
        return dep.name[len(prefix):] if dep.name.startswith(prefix) \
            else None

    def _reserved_for(self, rp_uuid):
        with self.db.transaction() as session:
            return device_obj.reserved_units_of_rp(session, rp_uuid)

    def start(self):
        """Resume half-done binding and cleaning work and start the
        periodic report and audit (``accel_backend.audit``)."""
        self.binder.resume()
        self.cleaner.start()
        self._audit_loop.start()
        self._thread = threading.Thread(target=self._report_loop,
                                        name='accel-report', daemon=True)
        self._thread.start()

    def _report_loop(self):
        interval = self.conf.discovery.report_interval
        done_once = False
        while not self._stop.is_set():
            try:
                self.discover_and_report()
                done_once = True
            except Exception as e:
                LOG.warning('Discovery/report failed, will retry: %s', e)
            if done_once and interval == 0:
                return
            self._stop.wait(interval if done_once and interval else 5)

    def stop(self):
        """Stop background work and close the database."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._audit_loop.stop()
        self.binder.stop()
        self.cleaner.stop()
        self.db.dispose()
