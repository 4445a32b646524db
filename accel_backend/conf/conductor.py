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

"""``[conductor]``: how agents and APIs reach the conductor
(``accel_backend.conductor.rpc``)."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'conductor', title='The conductor RPC API',
    help='The conductor (accel-backend-conductor, or an embedded '
         'accel-backend with [binding] mode = agents) does the database '
         'work of the agents, which hold no database credentials, and '
         'binds the ARQs the API hands it.')
OPTS = [
    cfg.StrOpt('topic', default='accel-conductor',
               help='oslo.messaging topic the conductors serve; the agents '
                    'call it and the API casts bind requests to it.'),
    cfg.IntOpt('call_timeout', default=60, min=1,
               help='Seconds an agent waits for the conductor to answer a '
                    'call before the work is left for its next pass (a '
                    'discovery pass, a cleaning poll).'),
]
