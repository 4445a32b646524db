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

"""Client side of the agent RPC API (``accel_backend.agent.rpc``): what
the API and the conductor send to the agent of a host.

The topic, exchange, namespace and versions are in
``accel_backend.agent.rpc``'s docstring; the constants are here, where
both sides read them, as Nova keeps its services' clients in
``nova/compute/rpcapi.py`` and ``nova/conductor/rpcapi.py`` (openstack/nova
34.0.0).
"""

from oslo_log import log as logging

from accel_common import rpc_server

LOG = logging.getLogger(__name__)

EXCHANGE = 'accel_backend'
NAMESPACE = 'accel_agent'
#: The newest version of the agent API; see the module docstring.
VERSION = '1.1'


class AgentAPI:
    """Client side: the API wakes the cleaner of a host's agent.

    :param transport: an RPC transport
        (``accel_backend.transports.get_rpc_transport``).
    :param topic: ``[binding] agent_topic``.
    :param retry: reconnection attempts before a cast raises (int; None
        retries forever).
    :param version_cap: ``[upgrade_levels] agent`` (str ``1.N``) or None
        for ``VERSION``.
    :raises ValueError: a cap newer than ``VERSION`` (this release cannot
        speak it).
    """

    def __init__(self, transport, topic, retry=2, version_cap=None):
        self.client = rpc_server.client(
            transport, EXCHANGE, topic, NAMESPACE, VERSION, version_cap,
            '[upgrade_levels] agent')
        self.retry = retry
        if version_cap:
            LOG.info('Agent RPC capped at version %s ([upgrade_levels] '
                     'agent)', version_cap)

    def clean(self, host):
        """Cast ``clean`` (1.0) to the agent of ``host``."""
        self.client.prepare(server=host, retry=self.retry,
                            version='1.0').cast({}, 'clean')
