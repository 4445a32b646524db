"""Cleaning devices between tenants (after Triton RFD 114).

A released attach handle whose deployable has a cleaning step is
``dirty`` (``objects.device.release_handle``); it is reserved in
Placement and never claimed until ``Cleaner`` has run the step and
marked it ``available`` again.  See ``worker.Cleaner``.
"""

from accel_backend.cleaning.worker import Cleaner  # noqa: F401
from accel_backend.cleaning.worker import run_method  # noqa: F401
