"""Console scripts of accel_backend.

Importing this package selects oslo.service's threading backend for the
whole process, before any of the scripts imports oslo.messaging: its
``server`` module imports ``oslo_service.service``, which resolves
oslo.service's process-wide backend at import and, when none was chosen,
takes the default one, eventlet (oslo.service,
``oslo_service/backend/__init__.py``, ``DEFAULT_BACKEND_TYPE``, 4.8.0;
oslo.messaging, ``oslo_messaging/server.py``).  accel_backend runs no
eventlet; ``accel_backend.cmd.runner`` runs the long-lived commands on
this backend.  In a process where the backend is already chosen as
threading (Nova's native-threading mode, the test suite) this is a no-op;
where eventlet was chosen, oslo.service raises ``BackendAlreadySelected``.
"""

from oslo_service import backend as _backend

_backend.init_backend(_backend.BackendType.THREADING)
