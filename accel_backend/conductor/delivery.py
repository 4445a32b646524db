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

"""Delivery of the ``accelerator-request-bound`` events of bound ARQs to
Nova (nova 34.0.0, ``nova/api/openstack/compute/server_external_events.py``
takes them), with retries and exponential backoff.

Every event was committed with its ARQ (``pending_event``) before it is
sent; each one Nova accepted (or that is obsolete, or was given up after
``retry_timeout``) is cleared with ``objects.arq.forget_events``, so a
restarted binder sends again exactly what is left.

``conductor.binder.Binder`` holds one ``EventDelivery`` and hands it, at
construction, everything it uses: nothing here reads the binder.
"""

from oslo_log import log as logging
import sqlalchemy as sa
import tenacity

from accel_backend.db import models
from accel_backend.objects import arq as arq_obj

# Logged as the binder's, which it serves.
LOG = logging.getLogger('accel_backend.conductor.binder')

#: Longest wait between two tries of an event (seconds).
MAX_BACKOFF = 30.0


class EventDelivery:
    """Sends the pending events of ARQs to Nova and forgets those done.

    :param db: ``accel_backend.db.api.Database``.
    :param notifier: ``conductor.nova_notifier.NovaNotifier`` or anything with
    its
        ``send(events) -> (done, retry)``: ``events`` a list of
        ``(instance_uuid, arq_uuid, status)`` (str), ``done`` and
        ``retry`` iterables of ARQ UUIDs.  Public and replaceable
        (``Binder.notifier`` sets it).
    :param retry_interval: seconds before the first retry (float > 0);
        doubles after each try, up to ``MAX_BACKOFF``.
    :param retry_timeout: seconds (int or float) after which an ARQ's
        event is given up and forgotten.
    :param stop_event: ``threading.Event``; once set, no try starts and the
        backoff waits end at once (the event stays pending for the next
        process).
    :param spawn: ``spawn(fn, *args)``, runs ``fn(*args)`` on a thread
        of the delivery pool and returns at once (the binder's, which
        tracks the task for ``Binder.wait_idle``).
    """

    def __init__(self, db, notifier, retry_interval, retry_timeout,
                 stop_event, spawn):
        self.db = db
        self.notifier = notifier
        self.retry_interval = retry_interval
        self.retry_timeout = retry_timeout
        self.stop_event = stop_event
        self.spawn = spawn

    def notify(self, outcomes):
        """The first try of the events of a bind, on the calling thread;
        the retries, if any, are spawned (``deliver``).

        :param outcomes: ``{arq_uuid: outcome}`` of committed binds, each
            outcome with ``instance_uuid`` and ``event`` (the status
            committed as ``pending_event``, or None for no event), such as
            ``conductor.binder.BindOutcome``.
        """
        # The events just committed (as ``_pending`` would read them
        # back: one transaction less on the way to Nova).
        retry = self._send_once([
            (o.instance_uuid, arq_uuid, o.event)
            for arq_uuid, o in sorted(outcomes.items()) if o.event])
        if retry and not self.stop_event.is_set():
            self.spawn(self.deliver, sorted(retry), 1)

    def _send_once(self, events):
        """Send ``events`` (``[(instance_uuid, arq_uuid, status)]``) once
        and forget those Nova took or dropped.

        :returns: set of the ARQ UUIDs whose events are to be tried again.
        """
        if not events:
            return set()
        sent = {arq: status for _, arq, status in events}
        done, retry = self.notifier.send(events)
        if done:
            self.forget({u: sent[u] for u in done if u in sent})
        return set(retry)

    def _pending(self, arq_uuids):
        """``[(instance_uuid, arq_uuid, status)]`` of the ARQs of
        ``arq_uuids`` (iterable of str) that still have a pending event."""
        with self.db.transaction() as session:
            rows = session.execute(
                sa.select(models.ARQ.instance_uuid, models.ARQ.uuid,
                          models.ARQ.pending_event)
                .where(models.ARQ.uuid.in_(list(arq_uuids)),
                       models.ARQ.pending_event.isnot(None))).all()
        return [tuple(r) for r in rows]

    def forget(self, sent):
        """Forget delivered (or abandoned) events, in one transaction.

        :param sent: ``{arq_uuid: status}`` of the events sent; an ARQ whose
            pending event changed since (unbound and bound again) keeps it.
        """
        self.db.write(arq_obj.forget_events, sent)

    def deliver(self, arq_uuids, tried=0):
        """Send pending events until Nova took them, they are obsolete,
        ``stop_event`` is set or ``retry_timeout`` seconds passed (then
        they are given up); waits ``retry_interval`` seconds, doubling up
        to ``MAX_BACKOFF``, between tries.  Blocks: the binder runs it on
        a delivery thread.

        :param arq_uuids: list of ARQ UUIDs whose pending events to send.
        :param tried: tries already made (``notify`` made one): the
            backoff goes on from there, starting with a wait.
        """
        remaining = set(arq_uuids)
        sent = {}

        def send_pending():
            if self.stop_event.is_set():
                return
            events = self._pending(remaining)
            sent.clear()
            sent.update((arq, status) for _, arq, status in events)
            remaining.intersection_update(self._send_once(events))

        def give_up(_retry_state):
            LOG.error('Giving up delivering events for ARQs %s',
                      sorted(remaining))
            self.forget({u: sent[u] for u in remaining if u in sent})

        def backoff(retry_state):
            # After the n-th try overall: retry_interval * 2 ** (n - 1).
            return min(MAX_BACKOFF, self.retry_interval * 2 ** (
                retry_state.attempt_number - 1 + tried))

        if tried and self.stop_event.wait(min(
                MAX_BACKOFF, self.retry_interval * 2 ** (tried - 1))):
            return
        tenacity.Retrying(
            retry=tenacity.retry_if_result(
                lambda _: bool(remaining) and not self.stop_event.is_set()),
            wait=backoff,
            stop=tenacity.stop_before_delay(self.retry_timeout),
            # Setting ``stop_event`` ends the wait at once.
            sleep=self.stop_event.wait,
            retry_error_callback=give_up)(send_pending)
