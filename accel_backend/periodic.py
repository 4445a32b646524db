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

"""Running the audit periodically.

The audit (``accel_backend.conductor.audit.Auditor``) says what to repair; this
module says when: ``AuditLoop`` calls ``Auditor.run`` every ``[audit]
interval`` seconds in a daemon thread of its own, which ``Service`` starts
and stops with the other background work of a host (the binder, the
cleaner, the discovery loop).

The schedule is futurist's ``PeriodicWorker`` (futurist 3.5.0,
``futurist/periodics.py``): first run one interval after start, a run
that raises is logged and the next one comes as planned, ``stop`` wakes
the worker at once (the contributor guide's "Design measurements").  It
is independent of oslo.service's process-wide backend, which matters: a
library module cannot know which backend its process chose, and
oslo.service's ``FixedIntervalLoopingCall`` under the default (eventlet)
backend in a process that is not monkey-patched never runs (observed with
oslo.service 4.8.0: 0 runs in 2 seconds at a 0.1-second interval; 19 with
the threading backend).  ``import futurist`` imports eventlet when it is
installed (without patching anything); every accel_backend process imports
both anyway: oslo.messaging imports ``oslo_service.service``, whose
threading backend imports futurist.

The discovery loop of ``Service`` (5-second retries until a first
success, then ``[discovery] report_interval``, or one pass when that is
0), the cleaner's poll (woken when work is queued) and the scheduler
weigher's capacity view (woken on demand, ended when garbage collected)
wait on a ``threading.Event`` of their own: a fixed spacing does not
express them.
"""

import threading

from futurist import periodics
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class AuditLoop:
    """Runs ``auditor.run`` every ``interval`` seconds in a thread.

    The first run comes one interval after ``start``, not at once (the
    binder and the cleaner resume half-done work at start; the audit is
    the safety net behind them).  A run that raises is logged and the loop
    goes on.

    :param auditor: an ``accel_backend.conductor.audit.Auditor`` (anything
    with a
        ``run()`` returning an ``AuditReport`` and a ``check_scope()``,
        called once in the thread before the first run).
    :param interval: seconds between two runs (int or float); 0 or None
        disables the loop (``start`` does nothing).

    ``last_report`` holds the ``AuditReport`` of the last run that
    returned, None before.
    """

    def __init__(self, auditor, interval):
        self.auditor = auditor
        self.interval = interval
        self._worker = None
        self._thread = None
        self.last_report = None

    def start(self):
        """Start the thread (``accel-audit``); no-op when disabled."""
        if not self.interval:
            return

        @periodics.periodic(self.interval, run_immediately=False)
        def audit():
            self.last_report = self.auditor.run()

        # PeriodicWorker logs a run that raised and goes on.
        self._worker = periodics.PeriodicWorker([(audit, (), {})])
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='accel-audit')
        self._thread.start()

    def _run(self):
        # What the audit may delete is known from the start (log line,
        # metric, health check), not one interval later.
        try:
            self.auditor.check_scope()
        except Exception:
            LOG.exception('Audit: checking the [nova] credentials failed')
        self._worker.start()

    def stop(self):
        """Stop the loop; waits up to 10 seconds for a run in progress to
        end (the thread is a daemon: one that hangs does not keep the
        process alive)."""
        if self._worker is not None:
            self._worker.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
