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

"""The binder: claims attach handles for ARQs and delivers Nova's events.

The embedded service (``[binding] mode = inline``) binds in the PATCH's own
transaction (``bind_locked``, then ``finish`` after the commit): the ARQs
go ``BindStarted`` -> ``Bound`` (or ``BindFailed``) with a
``pending_event`` in one commit, with no worker hand-off and no second
read of the rows.  Otherwise ``PATCH /v2/accelerator_requests`` records
``BindStarted`` (committed) and a conductor's ``Binder.submit`` hands
the UUIDs to a worker thread, which claims and commits the outcome
(``bind_many``).  The whole flow, step by step, is in
``conductor.dispatcher``.  Events are then delivered to Nova with retries and
exponential backoff; each accepted event clears ``pending_event``.
``resume()`` at start finishes whatever a previous process left
half-done, so a crash loses nothing.
"""

import collections
import concurrent.futures
import functools
import threading

from oslo_log import log as logging
import sqlalchemy as sa

from accel_backend.conductor import bind_row
from accel_backend.conductor import claim
from accel_backend.conductor import delivery
from accel_backend.conductor import failure
from accel_backend.conductor import numa_fit
from accel_backend.db import models
from accel_backend import metrics
from accel_backend import notifications
from accel_backend.objects import arq as arq_obj
from accel_backend import utils
from accel_common import arq_states

LOG = logging.getLogger(__name__)

#: What ``Binder.bind_many`` did to one ARQ: its new ``state``, its
#: ``instance_uuid`` and the ``event`` status committed for Nova.
BindOutcome = collections.namedtuple('BindOutcome',
                                     'state instance_uuid event')


class Binder:
    """Binds ARQs in background threads and delivers Nova events through
    the ``conductor.delivery.EventDelivery`` it holds (``events``).

    :param db: ``accel_backend.db.api.Database``.
    :param notifier: ``NovaNotifier`` (or anything with its ``send``).
    :param workers: number of threads (int).
    :param retry_interval: seconds before the first event retry (float);
        given to ``events``.
    :param retry_timeout: seconds after which an event is given up (int);
        given to ``events``.
    :param host: the one host this binder works for: ``resume`` takes
        only that host's ARQs and ARQs of other hosts are never bound
        here.  None (the embedded service and the conductor): every
        host's.
    :param notifications: ``accel_backend.notifications.Notifications``
        told about each outcome after its commit, or None.
    :param inline_events: how many callers of ``finish`` (API threads
        that answered their PATCH) may send the first try of its events
        themselves at once (int >= 0); the others hand it to the delivery
        threads.
    """

    def __init__(self, db, notifier, workers=4, retry_interval=0.5,
                 retry_timeout=600, host=None, notifications=None,
                 inline_events=0):
        self.db = db
        self.notifications = notifications
        self.host = host
        self._stop = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='accel-binder')
        # Event retries run on threads of their own: a Nova that does not
        # take events (down, or 422 while the server is not ready) must not
        # hold the bind workers, or a second PATCH waits out the first's
        # retries (up to retry_timeout).  Retrying threads mostly sleep.
        self._delivery = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(4, 4 * workers),
            thread_name_prefix='accel-events')
        self._futures = set()
        # Guards _futures; notified when one is done (wait_idle).
        self._lock = threading.Condition()
        self._inline = threading.BoundedSemaphore(inline_events) \
            if inline_events > 0 else None
        #: The ``conductor.delivery.EventDelivery`` sending the events:
        #: it stops with this binder and its tasks run on the delivery
        #: threads, counted by ``wait_idle``.
        self.events = delivery.EventDelivery(
            db, notifier, retry_interval, retry_timeout,
            stop_event=self._stop,
            spawn=functools.partial(self._spawn, self._delivery))

    @property
    def notifier(self):
        """The notifier the events go through (``NovaNotifier`` or
        anything with its ``send``); settable."""
        return self.events.notifier

    @notifier.setter
    def notifier(self, notifier):
        self.events.notifier = notifier

    def submit(self, arq_uuids):
        """Queue ``BindStarted`` ARQs (list of UUIDs) for binding."""
        if arq_uuids:
            self._spawn(self._pool, self._bind_and_notify, list(arq_uuids))

    def deliver(self, arq_uuids):
        """Deliver the pending events of these ARQs (list of UUIDs) in
        the background, with the usual retries (the audit uses it)."""
        if arq_uuids:
            self.events.spawn(self.events.deliver, list(arq_uuids))

    def _spawn(self, pool, fn, *args):
        with self._lock:
            fut = pool.submit(fn, *args)
            self._futures.add(fut)
        fut.add_done_callback(self._done)

    def _done(self, fut):
        with self._lock:
            self._futures.discard(fut)
            self._lock.notify_all()
        if fut.exception() is not None:
            LOG.error('Binding task failed: %s', fut.exception(),
                      exc_info=fut.exception())

    def resume(self):
        """Re-queue work a previous process left: ``BindStarted`` ARQs are
        bound, undelivered events are sent (only those of ``host`` when
        the binder has one)."""
        mine = (sa.true() if self.host is None
                else models.ARQ.hostname == self.host)
        with self.db.transaction() as session:
            started = list(session.scalars(
                sa.select(models.ARQ.uuid).where(
                    models.ARQ.state == arq_states.BIND_STARTED, mine)
                .order_by(models.ARQ.id)))
            pending = list(session.scalars(sa.select(models.ARQ.uuid).where(
                models.ARQ.pending_event.isnot(None), mine)))
        if started:
            LOG.info('Resuming binding of %d ARQs%s: %s', len(started),
                     '' if self.host is None else ' of host %s' % self.host,
                     ', '.join(started))
            self.submit(started)
        if pending:
            LOG.info('Resuming delivery of %d events', len(pending))
            self.events.spawn(self.events.deliver, pending)

    def bind_one(self, arq_uuid):
        """Bind one ``BindStarted`` ARQ, committing the outcome.

        :returns: the new state, or None when the ARQ is gone or no longer
            ``BindStarted`` (deleted or unbound meanwhile).
        """
        outcome = self.bind_many([arq_uuid]).get(arq_uuid)
        return None if outcome is None else outcome.state

    def bind_many(self, arq_uuids):
        """Bind ``BindStarted`` ARQs (the ARQs of one PATCH) in one
        transaction, committing every outcome together.

        The cost is a fixed number of statements whatever the number of
        ARQs: lock and read them (``conductor.bind_row.lock``),
        claim handles per resource provider (``conductor.claim``), one
        UPDATE of the ARQ rows; one more SELECT when some ARQs got no
        handle, to say why (``conductor.failure.diagnose``).  Metrics and
        notifications follow the commit.

        :param arq_uuids: list of ARQ UUIDs (str).
        :returns: ``{arq_uuid: BindOutcome}`` (``state`` ``Bound`` or
            ``BindFailed``, the ARQ's ``instance_uuid`` and the ``event``
            status committed for Nova) for the ARQs this call moved; ARQs
            gone, no longer ``BindStarted`` (deleted or
            unbound meanwhile), of another host than this binder's or
            without a handle on a host being migrated into pools (kept
            ``BindStarted``, ``conductor.failure.HOST_MIGRATING``) are left
            out.
        """
        outcomes = self.db.write(self._bind_locked, list(arq_uuids))
        self._record(outcomes, models.utcnow())
        return self._results(outcomes)

    def bind_locked(self, session, arqs, started_at=None):
        """Bind ARQs in the caller's transaction: the embedded service
        binds a PATCH's ARQs in the PATCH's own transaction
        (``conductor.dispatcher.bind_in_transaction``), so
        ``BindStarted`` and the outcome are committed together and no
        worker has to lock and read them again.

        The caller commits, then hands the result to ``finish``.

        :param session: the ``Session`` that locked and read ``arqs``
            (``conductor.bind_row.lock``) and moved them to
            ``BindStarted`` (``objects.arq.start_binding``).
        :param arqs: list of ``conductor.bind_row.BindRow``; those of another
            host than this binder's are written ``BindStarted`` and left
            to that host's binder.
        :param started_at: when the binding was asked for (naive UTC
            ``datetime``), for ``accel_bind_seconds``; default now.
        :returns: an opaque list for ``finish``; every ARQ of ``arqs`` is
            written (``conductor.bind_row.write``).
        """
        started_at = started_at or models.utcnow()
        mine = self._mine(arqs)
        kept = {id(a) for a in mine}
        others = [a for a in arqs if id(a) not in kept]
        if others:
            bind_row.write(session, others)
        return self._bind_arqs(session, mine, started_at)

    def finish(self, outcomes):
        """After the commit of ``bind_locked``: the events to Nova, then
        metrics, notifications and the log line.

        The first try runs on the calling thread when fewer than
        ``inline_events`` callers are sending one (the API thread calls
        this after its answer is sent: nothing waits on it), else on a
        delivery thread; retries always run on the delivery threads.
        Handing the first try to another thread costs a wake-up and a turn
        of the GIL before the POST starts, so the event reached Nova later
        (the contributor guide's "Design measurements").  The bound keeps
        a Nova that answers slowly ([nova] timeout) from holding more API
        threads than that.

        The event goes first (Nova's instance waits on it, and the rest
        would delay its POST), then metrics, notifications and the "Bound"
        line, even when the try raises.

        :returns: ``{arq_uuid: BindOutcome}``, as ``bind_many``.
        """
        now = models.utcnow()
        result = self._results(outcomes)
        try:
            if self._inline is not None and self._inline.acquire(False):
                try:
                    self.events.notify(result)
                finally:
                    self._inline.release()
            else:
                self.events.spawn(self.events.notify, result)
        finally:
            self._record(outcomes, now)
        return result

    @staticmethod
    def _results(outcomes):
        return {data['uuid']: BindOutcome(state, data['instance_uuid'], ev)
                for state, data, _, ev, _ in outcomes}

    def _record(self, outcomes, now):
        """Metrics, notifications and the log line of committed
        outcomes, bound at ``now`` (naive UTC ``datetime``)."""
        bound = []
        for state, data, started_at, _, reason in outcomes:
            if state != arq_states.BOUND:
                failure.record(self.notifications, data, reason)
                continue
            bound.append('%s to %s %s for instance %s' % (
                data['uuid'], data['attach_handle_type'],
                data['attach_handle_info'], data['instance_uuid']))
            if started_at is not None:
                metrics.BIND_SECONDS.labels(
                    host=data['hostname'] or '',
                    resource_class=data['resource_class'] or '').observe(
                    max(0.0, (now - started_at).total_seconds()))
            if self.notifications is not None:
                self.notifications.arq('accelerator.arq.bind.end', data)
        if bound:
            # Committed, so true; after the PATCH's answer and its event,
            # so off their path.  One line for all the ARQs of the
            # transaction: every log record costs CPU (the contributor
            # guide's "Design measurements").
            LOG.info('Bound %d ARQs: %s', len(bound), '; '.join(bound))

    def _mine(self, arqs):
        """The ARQs of ``arqs`` this binder may bind."""
        mine = []
        for arq in arqs:
            if arq.state != arq_states.BIND_STARTED:
                continue
            if self.host is not None and arq.hostname != self.host:
                LOG.warning('ARQ %s is for host %s, not this binder\'s (%s); '
                            'not binding it', arq.uuid, arq.hostname,
                            self.host)
                continue
            mine.append(arq)
        return mine

    def _bind_locked(self, session, arq_uuids):
        """The transaction of ``bind_many``: a list of ``(state,
        ARQPayload fields, time BindStarted was committed, event status,
        failure reason or None)``."""
        # Locked: an unbind, a delete or another worker binding the
        # same ARQs waits for this transaction, or finished before it.
        locked = bind_row.lock(session, arq_uuids)
        return self._bind_arqs(session, self._mine(locked))

    def _bind_arqs(self, session, arqs, started_at=None):
        """Claim handles for ``arqs`` (``conductor.bind_row.BindRow``, locked,
        ``BindStarted``, this binder's), move them to ``Bound`` or
        ``BindFailed`` and write them."""
        if not arqs:
            return []
        # Pools on several NUMA nodes: picked group by group.
        picked, numa_failed = numa_fit.claim_groups(session, arqs)
        wanted = collections.Counter(
            (arq.device_rp_uuid, arq.hostname) for arq in arqs
            if arq.uuid not in picked and arq.uuid not in numa_failed)
        claimed = claim.claim(session, wanted,
                              tolerated=claim.tolerated(arqs))
        # Counted before any handle is popped: the keys left short.
        reasons = failure.diagnose(session, [
            key for key, n in wanted.items()
            if len(claimed.get(key, ())) < n])
        outcomes = []
        for arq in arqs:
            began = started_at or arq.updated_at
            key = (arq.device_rp_uuid, arq.hostname)
            handles = claimed.get(key)
            reason = numa_failed.get(arq.uuid)
            if arq.uuid in picked:
                handles = [picked[arq.uuid]]
            if not handles and not reason and \
                    reasons[key] == failure.HOST_MIGRATING:
                # Kept BindStarted (written so): bound once the host's
                # pool migration is done (placement.reshape.finished).
                LOG.info('ARQ %s: host %s is migrating into pools; bound '
                         'once it is done', arq.uuid, arq.hostname)
                continue
            if not handles:
                reason = reason or reasons[key]
                LOG.warning('ARQ %s: no attach handle on resource provider '
                            '%s of host %s (%s)', arq.uuid,
                            arq.device_rp_uuid, arq.hostname, reason)
                arq_obj.transition(arq, arq_states.BIND_FAILED)
            else:
                arq.attach_handle = handles.pop(0)
                arq_obj.transition(arq, arq_states.BOUND)
            outcomes.append((arq.state, notifications.arq_data(arq),
                             began, arq.pending_event, reason))
        bind_row.write(session, arqs)
        return outcomes

    def _bind_and_notify(self, arq_uuids):
        self.events.notify(self.bind_many(arq_uuids))

    def stop(self, wait=True):
        """Stop retrying and wait for running tasks (bool ``wait``)."""
        self._stop.set()
        self._pool.shutdown(wait=wait)
        self._delivery.shutdown(wait=wait)

    def wait_idle(self, timeout=10.0):
        """Block until no task is queued or running (tests, shutdown).

        :param timeout: seconds.
        :returns: True when idle.
        """
        return utils.wait_until_empty(self._lock, self._futures, timeout)
