"""``accel-backend-api``: the REST API alone, for many compute nodes.

Serves the Cyborg v2 API with cheroot (``[api] workers`` threads) on the
database the agents share (PostgreSQL or MySQL; run ``accel-backend-manage
db sync`` first).  Several processes may serve the same database.  A bind
PATCH commits ``BindStarted`` and casts ``bind`` over oslo.messaging
(``[DEFAULT] transport_url``) to the ``accel-backend-agent`` of each ARQ's
host, which binds and tells Nova.  Example::

    accel-backend-api --config-file /etc/accel-backend/accel-backend.conf
"""

import sys

from accel_backend import cmd
from accel_backend.cmd import server
from accel_backend import service as service_mod


@cmd.one_line_errors
def main(argv=None):
    """Console script entry point; returns the exit status (int)."""
    return server.main(argv, role=service_mod.API,
                       name='accel-backend-api')


if __name__ == '__main__':
    sys.exit(main())
