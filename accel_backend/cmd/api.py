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

"""``accel-backend-api``: the REST API alone, for many compute nodes.

Serves the Cyborg v2 API with cheroot (``[api] workers`` threads) on the
database the conductors share (PostgreSQL or MySQL; run
``accel-backend-manage db sync`` first).  Several processes may serve the
same database.  A bind PATCH commits ``BindStarted`` and casts ``bind``
over oslo.messaging (``[DEFAULT] transport_url``) to an
``accel-backend-conductor``, which binds and tells Nova.  Example::

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
