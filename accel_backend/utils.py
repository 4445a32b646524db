"""Small helpers shared by the accel_backend layers."""

import time


def isotime(value):
    """ISO 8601 text of a naive-UTC ``datetime`` (``None`` stays None)."""
    if value is None:
        return None
    return value.strftime('%Y-%m-%dT%H:%M:%S+00:00')


def wait_until_empty(lock, items, timeout, poll=0.01):
    """Block until ``items`` is empty: the ``wait_idle`` of the binder and
    the cleaner, whose worker threads remove what they finished.

    :param lock: the ``threading.Lock`` under which the other threads
        change ``items``; held only to look.
    :param items: a container (a set of futures, of handle UUIDs...) that
        is empty when nothing is queued or running.
    :param timeout: seconds to wait at most (float).
    :param poll: seconds between two looks (float).
    :returns: True when ``items`` was seen empty, False after ``timeout``.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with lock:
            if not items:
                return True
        time.sleep(poll)
    return False
