"""``accel-backend-agent``: the per-compute-node half of accel_backend.

Runs on every compute node with ``[DEFAULT] host`` = the node's
hypervisor hostname: discovers the node's devices and reports them to
Placement under its compute node provider, serves the API's ``bind`` casts
(topic ``[binding] agent_topic``, server = host; oslo.messaging over
``[DEFAULT] transport_url``), binds the ARQs of its host in the shared
database, delivers ``accelerator-request-bound`` events to Nova, cleans
released devices and audits its host.  At start it resumes the
``BindStarted`` ARQs, undelivered events and cleanings of its host that a
previous run left.  No HTTP server.  Example::

    accel-backend-agent --config-file /etc/accel-backend/accel-backend.conf
"""

import signal
import sys
import threading

from oslo_log import log as logging

from accel_backend import conf as conf_mod
from accel_backend import service as service_mod

LOG = logging.getLogger(__name__)


def main(argv=None):
    """Console script entry point; returns the exit status (int)."""
    conf = conf_mod.new_conf(sys.argv[1:] if argv is None else argv)
    logging.setup(conf, 'accel-backend-agent')
    svc = service_mod.build_or_refuse(conf, service_mod.AGENT,
                                      'accel-backend-agent')
    if svc is None:
        return 1
    stop = threading.Event()
    started = threading.Event()

    def _stop(signum, frame):
        LOG.info('Signal %d: stopping', signum)
        stop.set()
        if not started.is_set():
            # Still starting (e.g. oslo.messaging retrying to reach the
            # broker): leave from wherever the main thread is.
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        svc.start()
        started.set()
        LOG.info('accel-backend-agent of host %s started', conf.host)
        while not stop.wait(3600):
            pass
    finally:
        svc.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
