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

"""The accelerator API as a WSGI application: ``application``.

Serve it as ``accel-backend-api`` serves it with cheroot, from a WSGI
server::

    gunicorn --workers 4 --bind 0.0.0.0:6666 accel_backend.wsgi.api:application
    uwsgi --http-socket :6666 --module accel_backend.wsgi.api:application

It is the API role (``accel_backend.service``, ``role = api``): binds are
cast over oslo.messaging (``[DEFAULT] transport_url``) to an
``accel-backend-conductor`` (topic ``[conductor] topic``), cleanings to
the ``accel-backend-agent`` of the device's host, and the schema must be
at this code's revision (``accel-backend-manage db sync``).  With ``[api]
auth_strategy = noauth`` it refuses to load unless ``[api]
allow_remote_noauth = true``: the WSGI server's listening address is not
known here, and noauth makes whoever reaches it an administrator (the
rule of ``accel_backend.conf.noauth.refusal``, which ``accel-backend-api``
applies too).  The configuration is
``accel-backend.conf`` in the directory named by the environment variable
``OS_ACCEL_BACKEND_CONFIG_DIR`` (default ``/etc/accel-backend``), as
Placement reads ``OS_PLACEMENT_CONFIG_DIR``.  The metrics endpoint of
``[metrics]`` is not started: several worker processes cannot share its
port.  Nothing is lost: the ARQ and device gauges are served by the
``accel-backend-conductor`` processes (port 9733 by default), the binds
and event deliveries are the conductors' work, the rest the agents'.
"""

import os
import sys

from oslo_config import cfg
from oslo_log import log as logging

from accel_backend import conf as conf_mod
from accel_backend.conf import noauth
from accel_backend import service as service_mod

#: The environment variable naming the configuration directory.
CONFIG_DIR_ENV = 'OS_ACCEL_BACKEND_CONFIG_DIR'
DEFAULT_CONFIG_DIR = '/etc/accel-backend'
CONFIG_FILE = 'accel-backend.conf'

LOG = logging.getLogger(__name__)


def init_application(environ=os.environ):
    """Build the WSGI application from the configuration directory.

    :param environ: the process environment (a mapping).
    :returns: a WSGI callable.
    :raises oslo_config.cfg.Error: the configuration file is missing or
        does not parse, or sets ``[api] auth_strategy = noauth`` without
        ``[api] allow_remote_noauth = true`` (that refusal is logged
        first, ``accel_backend.conf.noauth.refusal``).
    :raises SchemaOutOfDate: ``accel-backend-manage db sync`` has not run.
    """
    config_dir = environ.get(CONFIG_DIR_ENV) or DEFAULT_CONFIG_DIR
    conf = conf_mod.new_conf(
        config_files=[os.path.join(config_dir, CONFIG_FILE)])
    logging.setup(conf, 'accel-backend-api')
    why = noauth.refusal(conf)
    if why:
        why = 'accel_backend.wsgi.api refuses to start: %s' % why
        # The log, and standard error: the WSGI server's error log.
        LOG.error('%s', why)
        print(why, file=sys.stderr, flush=True)
        raise cfg.Error(why)
    svc = service_mod.Service(conf, role=service_mod.API)
    return svc.app


application = init_application()
