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

"""``accel-backend-conductor``: the database work of the agents.

Runs next to ``accel-backend-api`` (one or more, anywhere that reaches
the database and the broker): serves the conductor RPC API (topic
``[conductor] topic``, ``accel_backend.conductor.rpc``) through which the
``accel-backend-agent`` of every compute node, which holds no database
credentials, stores what it discovered and commits its cleanings; binds
the ARQs the API casts to it, delivers ``accelerator-request-bound``
events to Nova, and audits every host.  At start it resumes the
``BindStarted`` ARQs and undelivered events a previous run left.  No
HTTP server.  Example::

    accel-backend-conductor --config-file /etc/accel-backend/accel-backend.conf
"""

import sys

from accel_backend import cmd
from accel_backend.cmd import runner
from accel_backend import service as service_mod


@cmd.one_line_errors
def main(argv=None):
    """Console script entry point; returns the exit status (int).

    Signals: see ``accel_backend.cmd.runner``.
    """
    return runner.main(argv, service_mod.CONDUCTOR, 'accel-backend-conductor')


if __name__ == '__main__':
    sys.exit(main())
