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

"""``[upgrade_levels]``: the RPC versions a process may send during a
rolling upgrade, as Nova's ``[upgrade_levels]`` (Nova 34,
``nova/conf/upgrade_levels.py``) caps its services' RPC APIs."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'upgrade_levels', title='RPC version caps for rolling upgrades',
    help='While agents of the previous release still run, cap what the '
         'API (and an embedded accel-backend in rpc mode) sends them; '
         'remove the cap once every agent is upgraded.')
OPTS = [
    cfg.StrOpt('agent', regex=r'^1\.[0-9]+$',
               help='Highest version of the agent RPC API '
                    '(``accel_backend.agent.rpc``) to send, e.g. '
                    '``1.0`` while agents of a release that serves only '
                    '1.0 remain. Unset: the newest this release knows. A '
                    'cap above that is refused at start.'),
    cfg.StrOpt('conductor', regex=r'^1\.[0-9]+$',
               help='Highest version of the conductor RPC API '
                    '(``accel_backend.conductor.rpc``) that agents and APIs '
                    'send, while conductors of an older release remain. '
                    'Unset: the newest this release knows. A cap above '
                    'that is refused at start.'),
]
