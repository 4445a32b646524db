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

"""``accel-backend``: the embedded accelerator service in one process.

Serves the Cyborg v2 API with cheroot (a threaded WSGI server), binds ARQs
and reports devices to Placement.  Example::

    accel-backend --config-file /etc/accel-backend/accel-backend.conf
"""

import sys

from cheroot import wsgi as cheroot_wsgi
from oslo_log import log as logging

from accel_backend import cmd
from accel_backend.cmd import runner
from accel_backend import conf as conf_mod
from accel_backend.conf import noauth
from accel_backend import service as service_mod

LOG = logging.getLogger(__name__)


@cmd.one_line_errors
def main(argv=None, role=service_mod.EMBEDDED, name='accel-backend'):
    """Console script entry point; returns the exit status (int).

    ``accel-backend-api`` (``accel_backend.cmd.api``) is the same server
    with ``role = api``.  Signals: see ``accel_backend.cmd.runner``.
    """
    conf = conf_mod.new_conf(sys.argv[1:] if argv is None else argv)
    logging.setup(conf, name)
    # noauth takes identity and roles from request headers: anyone who
    # can reach the port would be an administrator.
    why = noauth.refusal(conf, conf.api.host_ip)
    if why:
        why = '%s refuses to start: %s' % (name, why)
        LOG.error('%s', why)
        print(why, file=sys.stderr)
        return 1
    svc = runner.build_or_refuse(conf, role, name)
    if svc is None:
        return 1
    server = cheroot_wsgi.Server((conf.api.host_ip, conf.api.port), svc.app,
                                 numthreads=conf.api.workers,
                                 request_queue_size=conf.api.backlog)
    return runner.run(conf, runner.Command(
        svc, '%s listening on %s:%s' % (name, conf.api.host_ip,
                                        conf.api.port), server=server))


if __name__ == '__main__':
    sys.exit(main())
