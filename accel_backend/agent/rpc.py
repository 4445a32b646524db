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

"""oslo.messaging RPC between ``accel-backend-api`` and the agents.

Every ``accel-backend-agent`` serves the topic ``[binding] agent_topic``
(default ``accel-agent``) with ``server`` = its ``[DEFAULT] host``, in the
exchange ``accel_backend``; the API casts to the server named by a
released device's host.  Methods (namespace ``accel_agent``), all casts:

* ``clean(ctxt)``: look for released devices to clean now (instead of at
  the next ``[cleaning] poll_interval``).
* ``bind(ctxt, arq_uuids, request_id=None)``: what the API of earlier
  releases cast to the agent of the ARQs' host; binding is the
  conductor's now (``accel_backend.conductor.rpc``), so the agent hands
  the ARQs on to a conductor (``conductor.rpcapi.BindForwarder``), which
  binds them.  ``request_id`` (1.1) is the API request's ``req-<uuid>``,
  logged.

Versions: 1.0 ``bind(arq_uuids)``, ``clean()``; 1.1 ``bind`` takes
``request_id``.  A minor version only adds optional arguments or methods,
so an agent serves every older 1.x sender.  The API sends ``clean`` at
1.0; ``[upgrade_levels] agent`` caps what it may send while agents of an
older release remain (an agent refuses a version above its own with
oslo.messaging's ``UnsupportedVersion``, logged by the agent).

The transport is ``[DEFAULT] transport_url`` (``rabbit://...`` in
production, ``fake://`` in unit tests), built by
``accel_backend.transports.get_rpc_transport``.  The exchange is given in
every ``Target``, never through ``set_transport_defaults``, so nothing
global changes (Nova may run in the same process in tests).
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from accel_backend.agent import rpcapi
from accel_common import rpc_server

LOG = logging.getLogger(__name__)


class AgentEndpoint:
    """What an agent serves.

    :param binder: what ``bind`` hands ARQs to (anything with
        ``submit(arq_uuids)``: the agent's
        ``conductor.rpcapi.BindForwarder``).
    :param cleaner: ``accel_backend.agent.cleaning.Cleaner`` or None.
    """

    target = messaging.Target(namespace=rpcapi.NAMESPACE,
                              version=rpcapi.VERSION)

    def __init__(self, binder, cleaner=None):
        self.binder = binder
        self.cleaner = cleaner

    def bind(self, ctxt, arq_uuids, request_id=None):
        """RPC cast ``bind`` (from an API of an earlier release): hand
        ``arq_uuids`` (list of str) to ``binder``; returns at once.
        ``request_id`` (str, 1.1): the API request's id, logged."""
        LOG.info('Bind request for ARQs %s (API request %s)',
                 ', '.join(arq_uuids), request_id or 'not sent')
        self.binder.submit(list(arq_uuids))

    def clean(self, ctxt):
        """RPC cast ``clean``: wake this host's cleaner (released handles
        to clean); no-op without one."""
        if self.cleaner is not None:
            self.cleaner.kick()


def start_server(transport, topic, host, binder, cleaner=None):
    """Serve ``topic`` as server ``host`` (threading executor); returns
    the started RPC server."""
    return rpc_server.start(transport, rpcapi.EXCHANGE, topic, host,
                            [AgentEndpoint(binder, cleaner)], 'agent')


def stop_server(server):
    """Stop and wait for a server of ``start_server`` (None is fine)."""
    rpc_server.stop(server, 'agent')
