"""Stopping an oslo.messaging RPC server, for both halves: accel_backend's
agent (binding casts) and nova_accel's compute-side hot-plug endpoint."""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def stop(server, what):
    """Stop ``server`` (an ``oslo_messaging.MessageHandlingServer``, or
    None: nothing to do) and wait for its in-flight requests.

    Never raises: a failure is logged with ``what`` (str, the server's
    purpose) and the caller's shutdown goes on.
    """
    if server is None:
        return
    try:
        server.stop()
        server.wait()
    except Exception:
        LOG.exception('Stopping the %s RPC server failed', what)
