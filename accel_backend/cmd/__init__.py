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

``one_line_errors`` is what every console script's ``main`` does with a
bad configuration or a service that is down.
"""

import functools
import logging
import os
import sys

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_service import backend as _backend
from sqlalchemy import exc as sa_exc

_backend.init_backend(_backend.BackendType.THREADING)


def one_line_errors(main):
    """Decorate a console script's ``main``: a configuration file that is
    missing, unreadable or invalid, a database that does not answer, or
    a Placement or Nova that cannot be reached end the command with one
    line on standard error (``<program>: <what>``), logged as well once
    oslo.log is set up, and exit status 2 (configuration) or 1 (a service
    down), never a traceback.

    :param main: ``main(argv=None, ...)`` returning the exit status.
    :returns: the wrapped function.
    """
    @functools.wraps(main)
    def wrapper(*args, **kwargs):
        prog = os.path.basename(sys.argv[0]) or 'accel-backend'
        try:
            return main(*args, **kwargs)
        except cfg.Error as e:
            _refused('%s: configuration error: %s' % (prog, e))
            return 2
        except (db_exc.DBConnectionError, sa_exc.OperationalError) as e:
            _refused('%s: the database does not answer: %s' % (
                prog, str(e).splitlines()[0] if str(e) else e))
            return 1
        except ks_exc.ConnectFailure as e:
            _refused('%s: cannot connect: %s' % (prog, e))
            return 1
    return wrapper


def _refused(line):
    """Write ``line`` (str) to standard error and, when oslo.log is set up
    to log elsewhere than a terminal's streams (``[DEFAULT] log_file`` or
    ``log_dir``, syslog, the journal), log it at ERROR there too: an
    option found invalid after ``logging.setup`` (oslo.config checks a
    value when it is read) must reach the log file as well as standard
    error, which a supervisor keeps."""
    print(line, file=sys.stderr)
    if any(isinstance(h, logging.FileHandler) or
           not isinstance(h, logging.StreamHandler)
           for h in logging.getLogger().handlers):
        logging.getLogger(__name__).error('%s', line)
