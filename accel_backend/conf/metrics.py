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

"""``[metrics]``: the Prometheus endpoint of each long-running process
(``accel_backend.metrics``), and the port each role listens on when
``[metrics] port`` is unset, so that the API, a conductor and an agent can
share one host and one configuration file."""

from oslo_config import cfg

GROUP = cfg.OptGroup('metrics', title='Prometheus metrics')
#: ``[metrics] port`` by default, per role (``accel_backend.service``):
#: the API, conductor and agent may share a host and one configuration
#: file, so each role listens on its own port; the embedded service (the
#: API with everything else) keeps the API's.
PORTS = {
    'embedded': 9732,
    'api': 9732,
    'conductor': 9733,
    'agent': 9734,
}

OPTS = [
    cfg.BoolOpt('enabled', default=False,
                help='Serve Prometheus metrics (``GET /metrics``) on '
                     '``host``:``port`` from every long-running '
                     'accel_backend process (accel-backend, '
                     'accel-backend-api, accel-backend-conductor, '
                     'accel-backend-agent; not the WSGI application, whose '
                     'database gauges the conductors serve). The metrics '
                     'are listed in the admin guide.'),
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address the metrics endpoint listens on; the '
                            'default lets only local scrapers in.'),
    cfg.PortOpt('port', default=None,
                help='Port of the metrics endpoint (0: any free port, '
                     'logged at start). Unset: the port of the process\'s '
                     'role, so that the roles can share a host and this '
                     'file: 9732 for accel-backend and accel-backend-api, '
                     '9733 for accel-backend-conductor, 9734 for '
                     'accel-backend-agent. Set, it applies to every role '
                     'reading this file.'),
]
