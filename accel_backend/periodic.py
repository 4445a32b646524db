"""Running the audit periodically.

The audit (``accel_backend.audit.Auditor``) says what to repair; this
module says when: ``AuditLoop`` calls ``Auditor.run`` every ``[audit]
interval`` seconds in a daemon thread of its own, which ``Service`` starts
and stops with the other background work of a host (the binder, the
cleaner, the discovery loop).

Why a thread waiting on an ``Event``, and not futurist's
``PeriodicWorker`` nor oslo.service's ``FixedIntervalLoopingCall``
(measured in this project's environment): ``import futurist`` imports
eventlet whenever it is installed, as it is beside Nova (futurist,
``futurist/_utils.py``, 3.5.0: an EventletDeprecationWarning at import),
and oslo.service's looping calls run on a process-wide backend whose
default is eventlet and which a Nova in the same process chooses too
(oslo.service, ``oslo_service/backend/__init__.py``, 4.8.0).  The project
runs no eventlet; a thread waiting on an ``Event`` stops at once.  The
discovery loop of ``Service``, the cleaner's poll and the scheduler
weigher's capacity view follow the same rule.
"""

import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class AuditLoop:
    """Runs ``auditor.run`` every ``interval`` seconds in a thread.

    The first run comes one interval after ``start``, not at once (the
    binder and the cleaner resume half-done work at start; the audit is
    the safety net behind them).  A run that raises is logged and the loop
    goes on.

    :param auditor: an ``accel_backend.audit.Auditor`` (anything with a
        ``run()`` returning an ``AuditReport``).
    :param interval: seconds between two runs (int or float); 0 or None
        disables the loop (``start`` does nothing).

    ``last_report`` holds the ``AuditReport`` of the last run that
    returned, None before.
    """

    def __init__(self, auditor, interval):
        self.auditor = auditor
        self.interval = interval
        self._stop = threading.Event()
        self._thread = None
        self.last_report = None

    def start(self):
        """Start the thread (``accel-audit``); no-op when disabled."""
        if not self.interval:
            return
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='accel-audit')
        self._thread.start()

    def _loop(self):
        while not self._stop.wait(self.interval):
            try:
                self.last_report = self.auditor.run()
            except Exception:  # never let the thread die
                LOG.exception('Audit failed')

    def stop(self):
        """Stop the loop; waits up to 10 seconds for a run in progress to
        end (the thread is a daemon: one that hangs does not keep the
        process alive)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
