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

"""``accel-backend-agent``: the per-compute-node half of accel_backend.

Runs on every compute node with ``[DEFAULT] host`` = the node's
hypervisor hostname, without database credentials: discovers the node's
devices, stores them through the conductor (``[conductor] topic``,
oslo.messaging over ``[DEFAULT] transport_url``) and reports them to
Placement under its compute node provider; cleans released devices (the
API's ``clean`` casts wake it, topic ``[binding] agent_topic``, server =
host) and commits each step through the conductor.  At start it resumes
the cleanings of its host that a previous run left.  Binding, the events
to Nova and the audit are the conductor's (``accel-backend-conductor``).
No HTTP server.  Example::

    accel-backend-agent --config-file /etc/accel-backend/accel-backend.conf
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
    return runner.main(argv, service_mod.AGENT, 'accel-backend-agent')


if __name__ == '__main__':
    sys.exit(main())
