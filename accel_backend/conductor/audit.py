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

"""Periodic reconciliation of ARQs, attach handles and cleanings.

Every state change of accel_backend is committed before the work it
announces, and ``Binder.resume``/``Cleaner.start`` finish what a crash left
half-done.  The audit is the safety net behind that for what can still
drift: Nova deleting a server while nothing told us (its ARQs keep their
devices forever), rows changed by hand or by an older release, a binding
task lost without a crash, a cleaning step that hangs.  It runs every
``[audit] interval`` seconds (``accel_backend.periodic.AuditLoop``,
started by ``Service``) and repairs, for the ARQs and devices of its own
host:

``deleted_instances``
    ARQs bound (or failed) for longer than ``[audit] grace_period`` whose
    instance is proven gone (``accel_backend.conductor.nova_orphans``: the
    ``[nova]`` credentials see every project's servers, Nova answers 404,
    Placement holds no allocation of the instance, at two audits
    ``grace_period`` apart): deleted, releasing their devices, with
    ``accelerator.arq.delete.end`` as the API's delete sends (billing's
    period ends).  Any doubt keeps them, with the reason in
    ``kept_instances``.  With credentials that cannot see every project
    the step is off (``scope``).  Meanwhile the devices of a Bound ARQ
    whose instance holds no allocation in Placement carry an automatic
    ``NoSchedule`` taint, reserved in Placement
    (``accel_backend.conductor.orphan_taints``).
``released_handles``
    handles in use that no ARQ holds: released (``dirty`` or
    ``available``, as a normal release).
``unheld_handles``
    handles held by an ARQ not ``Bound``: released.
``reclaimed_handles``
    handles of ``Bound`` ARQs not marked in use (another ARQ could claim
    them, or the cleaner reset them under a guest): in use again.
``failed_arqs``
    ``Bound`` ARQs without a handle: ``BindFailed`` with a ``failed``
    event to Nova (reason ``bound_without_handle``,
    ``accel_backend.conductor.failure``).
``requeued_bindings``
    ARQs ``BindStarted`` for longer than ``grace_period``: bound again.
``requeued_cleanings``
    handles ``dirty``, or ``cleaning`` for longer than ``[cleaning]
    timeout`` + ``grace_period``, the cleaner was not on (queued again)
    or has queued without starting them yet (waiting for a worker).
``stuck_cleanings``
    handles ``cleaning`` that long whose step the cleaner still runs (it
    hangs): ``clean_failed`` with the reason; enabling the device retries.

Every repair is a conditional write re-checked under the row lock, so an
audit racing the API, the binder or the cleaner changes nothing they
changed first.  ``Auditor.run`` returns an ``AuditReport`` and logs it.
The repairs of attach handles are ``accel_backend.conductor.audit_handles``,
each a
transition of the handle state table (``accel_common.handle_states``).
"""

import dataclasses
import datetime
import threading
import time

from oslo_log import log as logging
import sqlalchemy as sa

from accel_backend.conductor import audit_handles
from accel_backend.conductor import failure
from accel_backend.conductor import nova_orphans
from accel_backend.conductor import orphan_taints
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import notifications as notifications_mod
from accel_backend.objects import arq as arq_obj
from accel_common import arq_states
from accel_common import handle_states

LOG = logging.getLogger(__name__)

#: States of an ARQ whose instance is checked with Nova.
_INSTANCE_STATES = tuple(s for s in arq_states.BINDING_STATES
                         if s in arq_states.RESOLVED_STATES)
_utcnow = models.utcnow
_last_change = audit_handles.last_change


@dataclasses.dataclass
class AuditReport:
    """What one audit run found and did (lists of UUIDs)."""

    deleted_instances: list = dataclasses.field(default_factory=list)
    deleted_arqs: list = dataclasses.field(default_factory=list)
    released_handles: list = dataclasses.field(default_factory=list)
    unheld_handles: list = dataclasses.field(default_factory=list)
    reclaimed_handles: list = dataclasses.field(default_factory=list)
    failed_arqs: list = dataclasses.field(default_factory=list)
    requeued_bindings: list = dataclasses.field(default_factory=list)
    requeued_cleanings: list = dataclasses.field(default_factory=list)
    stuck_cleanings: list = dataclasses.field(default_factory=list)
    #: ``(instance, reason, detail)`` of instances that may be gone whose
    #: ARQs were kept (``accel_backend.conductor.nova_orphans.KEEP_REASONS``).
    kept_instances: list = dataclasses.field(default_factory=list)
    #: ``accel_backend.conductor.nova_orphans.Scope`` of the ``[nova]``
    #: credentials
    #: at this audit, or None when the step did not run.
    scope: object = None
    #: ``(step, error)`` of steps that failed (the others still ran).
    errors: list = dataclasses.field(default_factory=list)

    REPAIRS = ('deleted_arqs', 'released_handles', 'unheld_handles',
               'reclaimed_handles', 'failed_arqs', 'requeued_bindings',
               'requeued_cleanings', 'stuck_cleanings')

    def repairs(self):
        """Number of repairs made (int)."""
        return sum(len(getattr(self, f)) for f in self.REPAIRS)

    def as_dict(self):
        """The report as plain data (``{field name: value}``), a copy;
        ``Auditor.run`` logs its non-empty fields."""
        return dataclasses.asdict(self)

    def __str__(self):
        parts = ['%s=%d' % (f, len(getattr(self, f))) for f in self.REPAIRS
                 if getattr(self, f)]
        if self.errors:
            parts.append('errors=%d' % len(self.errors))
        return ', '.join(parts) or 'nothing to repair'


class Auditor:
    """Finds and repairs drift between ARQs, handles and cleanings.

    :param db: ``accel_backend.db.api.Database``.
    :param hostname: the host whose ARQs and devices are audited.
    :param nova: keystoneauth1 ``Adapter`` of the compute API, or None
        (then deleted instances are not looked for).
    :param binder: the ``Binder`` (events, re-queued bindings), or None.
    :param cleaner: the ``Cleaner``, or None.
    :param grace_period: seconds a state must be old before the audit
        acts on it (float).
    :param cleaning_timeout: seconds a cleaning step may run
        (``[cleaning] timeout``).
    :param delete_orphaned_arqs: delete the ARQs of instances proven
        gone (bool).
    :param notifications: ``accel_backend.notifications.Notifications``
        told about ARQs the audit deletes or fails, or None.
    :param placement: ``accel_backend.agent.placement.client.PlacementClient``
        asked for the allocations of instances Nova says are gone; None
        keeps every ARQ (nothing can be proven gone).
    :param clock: monotonic clock in seconds of the two-audit rule
        (tests).
    :param reserved: ``agent.placement.reserved.ReservedUnits`` writing
        the reserved units of the providers whose automatic taint
        (``orphan_taints``) changed, or None (the periodic report does).
    """

    def __init__(self, db, hostname, nova=None, binder=None, cleaner=None,
                 grace_period=600, cleaning_timeout=300,
                 delete_orphaned_arqs=True, notifications=None,
                 placement=None, clock=time.monotonic, reserved=None):
        self.db = db
        self.hostname = hostname
        self.orphans = None
        if nova is not None and placement is not None and \
                delete_orphaned_arqs:
            self.orphans = nova_orphans.OrphanFinder(
                nova, placement, grace_period, host=hostname, clock=clock)
        self.binder = binder
        self.cleaner = cleaner
        self.grace_period = grace_period
        self.cleaning_timeout = cleaning_timeout
        self.notifications = notifications
        self.reserved = reserved
        self._lock = threading.Lock()

    @classmethod
    def from_service(cls, service):
        conf = service.conf
        return cls(service.db, conf.host, nova=service.notifier.adapter,
                   binder=service.binder, cleaner=service.cleaner,
                   grace_period=conf.audit.grace_period,
                   cleaning_timeout=conf.cleaning.timeout,
                   delete_orphaned_arqs=conf.audit.delete_orphaned_arqs,
                   notifications=service.notifications,
                   placement=service.placement,
                   reserved=service.reporter.reserved)

    STEPS = ('deleted_instances', 'handles', 'bound_without_handle',
             'stuck_bindings', 'cleanings')

    def run(self, steps=STEPS):
        """One audit; each step runs even when another failed.

        :param steps: names of the steps to run (of ``STEPS``, in that
            order).
        :returns: ``AuditReport``.
        """
        report = AuditReport()
        with self._lock:
            for name in (n for n in self.STEPS if n in steps):
                step = getattr(self, '_' + name)
                try:
                    step(report)
                except Exception as e:
                    LOG.exception('Audit step %s failed', name)
                    report.errors.append((name, str(e)))
        if report.repairs() or report.errors:
            LOG.warning('Audit of %s: %s; %s', self.hostname, report,
                        {k: v for k, v in report.as_dict().items() if v})
        else:
            LOG.info('Audit of %s: nothing to repair', self.hostname)
        return report

    def check_scope(self):
        """Probe what the ``[nova]`` credentials see
        (``accel_backend.conductor.nova_orphans.OrphanFinder.check_scope``).

        :returns: ``nova_orphans.Scope``, or None when the step is off by
            configuration (``[audit] delete_orphaned_arqs = false``, no
            Nova or Placement).
        """
        return self.orphans.check_scope() if self.orphans else None

    # -- ARQs of deleted instances ----------------------------------------

    def _deleted_instances(self, report):
        if self.orphans is None:
            return
        report.scope = self.check_scope()
        cutoff = _utcnow() - datetime.timedelta(seconds=self.grace_period)
        with self.db.transaction() as session:
            instances = sorted(set(session.scalars(
                sa.select(models.ARQ.instance_uuid).where(
                    models.ARQ.hostname == self.hostname,
                    models.ARQ.instance_uuid.isnot(None),
                    models.ARQ.state.in_(_INSTANCE_STATES),
                    _last_change(models.ARQ) < cutoff))))
        gone, report.kept_instances = self.orphans.gone(
            instances, self.hostname)
        released = []
        for instance in gone:
            report.deleted_instances.append(instance)
            deleted = []
            with self.db.transaction() as session:
                db_api.write_lock(session)
                for arq in arq_obj.list_(session, instance_uuid=instance):
                    # Re-checked under the lock: an ARQ re-bound to
                    # another instance meanwhile is left alone.
                    arq = arq_obj.get(session, arq.uuid, for_update=True)
                    if arq.instance_uuid != instance or \
                            arq.hostname != self.hostname:
                        continue
                    LOG.warning('Audit: instance %s is gone from Nova; '
                                'deleting its ARQ %s (%s)', instance,
                                arq.uuid, arq.state)
                    report.deleted_arqs.append(arq.uuid)
                    # Taken before the delete releases the handle.
                    deleted.append(notifications_mod.arq_data(arq))
                    # Its handle goes dirty (reserved until cleaned): the
                    # automatic taint goes in the same transaction.
                    released += orphan_taints.untaint_handle(
                        session, arq.attach_handle)
                    arq_obj.delete(session, arq)
            if self.notifications is not None:
                for data in deleted:
                    self.notifications.arq('accelerator.arq.delete.end',
                                           data)
        suspects, unknown = orphan_taints.unallocated(
            self.orphans.placement, [i for i in instances if i not in gone],
            report.kept_instances)
        with self.db.transaction() as session:
            db_api.write_lock(session)
            tainted, untainted = orphan_taints.reconcile(
                session, self.hostname, suspects, unknown)
        changed = orphan_taints.announce(self.notifications, tainted,
                                         released + untainted)
        orphan_taints.write_placement(self.reserved, changed)

    # -- attach handles (``accel_backend.conductor.audit_handles``) ----

    def _handles(self, report):
        with self.db.transaction() as session:
            db_api.write_lock(session)
            report.released_handles.extend(
                audit_handles.release_unheld(session, self.hostname))
            report.unheld_handles.extend(
                audit_handles.release_from_handle_less(session,
                                                       self.hostname))
            report.reclaimed_handles.extend(
                audit_handles.reclaim(session, self.hostname))

    # -- ARQs ---------------------------------------------------------------

    def _bound_without_handle(self, report):
        failed = []
        with self.db.transaction() as session:
            db_api.write_lock(session)
            uuids = list(session.scalars(
                sa.select(models.ARQ.uuid).where(
                    models.ARQ.hostname == self.hostname,
                    models.ARQ.state == arq_states.BOUND,
                    models.ARQ.attach_handle_id.is_(None))))
            for arq_uuid in uuids:
                arq = arq_obj.get(session, arq_uuid, for_update=True)
                if arq.state != arq_states.BOUND or \
                        arq.attach_handle_id is not None:
                    continue
                LOG.warning('Audit: ARQ %s of instance %s is Bound without '
                            'an attach handle; marking it BindFailed',
                            arq.uuid, arq.instance_uuid)
                arq_obj.transition(arq, arq_states.BIND_FAILED)
                report.failed_arqs.append(arq.uuid)
                failed.append(notifications_mod.arq_data(arq))
        for data in failed:
            failure.record(self.notifications, data,
                           failure.BOUND_WITHOUT_HANDLE)
        if report.failed_arqs and self.binder is not None:
            self.binder.deliver(report.failed_arqs)

    def _stuck_bindings(self, report):
        if self.binder is None:
            return
        cutoff = _utcnow() - datetime.timedelta(seconds=self.grace_period)
        with self.db.transaction() as session:
            uuids = list(session.scalars(
                sa.select(models.ARQ.uuid).where(
                    models.ARQ.hostname == self.hostname,
                    models.ARQ.state == arq_states.BIND_STARTED,
                    _last_change(models.ARQ) < cutoff)))
        if uuids:
            LOG.warning('Audit: %d ARQs have been BindStarted for more '
                        'than %s s; binding them again', len(uuids),
                        self.grace_period)
            report.requeued_bindings.extend(uuids)
            self.binder.submit(uuids)

    # -- cleanings ----------------------------------------------------------

    def _cleanings(self, report):
        cutoff = _utcnow() - datetime.timedelta(
            seconds=self.cleaning_timeout + self.grace_period)
        with self.db.transaction() as session:
            stale = audit_handles.stale_cleanings(session, self.hostname,
                                                  cutoff)
        if not stale:
            return
        # Queued now, or earlier and still waiting for a worker: their
        # step has not started, so an old updated_at does not mean it
        # hangs (``Cleaner.submit_pending``).
        queued = set(self.cleaner.submit_pending()) if self.cleaner else set()
        for handle_uuid, state in sorted(stale.items()):
            if handle_uuid in queued:
                LOG.warning('Audit: attach handle %s was %s for too long; '
                            'queued for cleaning again', handle_uuid, state)
                report.requeued_cleanings.append(handle_uuid)
                continue
            if state != handle_states.CLEANING:
                continue
            # Still being cleaned after timeout + grace: the step hangs.
            reason = ('cleaning did not finish within %d s' %
                      (self.cleaning_timeout + self.grace_period))
            with self.db.transaction() as session:
                failed = audit_handles.fail_hung_cleaning(
                    session, handle_uuid, cutoff, reason)
            if failed:
                LOG.error('Audit: cleaning of attach handle %s hangs; '
                          'marked clean_failed (enable the device to '
                          'retry)', handle_uuid)
                report.stuck_cleanings.append(handle_uuid)
