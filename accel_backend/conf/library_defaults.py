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

"""accel_backend's defaults for options of the libraries it uses, for
``oslo-config-generator``.

The services set these defaults on their own ``ConfigOpts``
(``accel_backend.conf.register_opts``) or, for ``[cors]``, when the API
application is built (``accel_backend.api.deploy``).  The generator cannot
see either, so ``set_lib_defaults`` (the ``oslo.config.opts.defaults``
entry point ``accel_backend``, as oslo.config documents under "Modifying
defaults from other namespaces" and Placement 13 ships it,
placement/conf/base.py) sets them on the libraries' option objects for
the sample file (etc/accel-backend.conf.sample).
"""

from oslo_config import cfg
from oslo_db import options as db_options
from oslo_middleware import cors
from oslo_middleware.healthcheck import opts as healthcheck_opts

from accel_backend import conf as conf_mod

#: ``oslo_middleware.cors.set_defaults`` arguments of the API: the headers
#: the API reads and sends and its methods, as Placement sets them
#: (placement/deploy.py); ``[cors] allowed_origin`` stays unset.
CORS_DEFAULTS = {
    'allow_headers': ['X-Auth-Token', 'X-Service-Token',
                      'X-OpenStack-Request-ID', 'OpenStack-API-Version',
                      'Content-Type'],
    'expose_headers': ['X-OpenStack-Request-ID', 'OpenStack-API-Version'],
    'allow_methods': ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
}


def set_lib_defaults():
    """Set accel_backend's defaults on the library options of the process
    (``[database] connection``, ``[healthcheck] backends`` of the
    embedded ``accel-backend``, the ``[cors]`` headers and methods).

    For ``oslo-config-generator`` only: it changes the option objects of
    oslo.db and oslo.middleware for every configuration of the process
    (the services use per-configuration defaults instead).
    """
    cors.set_defaults(**CORS_DEFAULTS)
    cfg.set_defaults(db_options.database_opts,
                     connection=conf_mod.DATABASE_DEFAULT)
    cfg.set_defaults(healthcheck_opts.HEALTHCHECK_OPTS,
                     backends=list(conf_mod.HEALTH_BACKENDS['embedded']))
