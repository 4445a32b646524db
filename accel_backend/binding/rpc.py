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

Every ``accel-backend-agent`` (and an embedded ``accel-backend`` with
``[binding] mode = rpc``) serves the topic ``[binding] agent_topic``
(default ``accel-agent``) with ``server`` = its ``[DEFAULT] host``, in the
exchange ``accel_backend``; the API casts to the server named by the ARQ's
``hostname``, so a request reaches the agent of the host Nova bound the ARQ
to.  Methods (namespace ``accel_agent``, version 1.0), all casts:

* ``bind(ctxt, arq_uuids)``: bind these ``BindStarted`` ARQs (the API has
  committed ``BindStarted`` before casting; the agent claims the attach
  handle, commits ``Bound``/``BindFailed`` with a pending event and
  delivers it to Nova).  Idempotent: an ARQ no longer ``BindStarted``, or
  of another host, is skipped.
* ``clean(ctxt)``: look for released devices to clean now (instead of at
  the next ``[cleaning] poll_interval``).

The transport is ``[DEFAULT] transport_url`` (``rabbit://...`` in
production, ``fake://`` in unit tests), built by
``accel_backend.transports.get_rpc_transport``.  The exchange is given in
every ``Target``, never through ``set_transport_defaults``, so nothing
global changes (Nova may run in the same process in tests).
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from accel_common import rpc_server

LOG = logging.getLogger(__name__)

EXCHANGE = 'accel_backend'
NAMESPACE = 'accel_agent'
VERSION = '1.0'


class AgentEndpoint:
    """What an agent serves; delegates to its ``Binder`` and ``Cleaner``.

    :param binder: ``accel_backend.binding.binder.Binder`` of the host.
    :param cleaner: ``accel_backend.cleaning.Cleaner`` or None.
    """

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def __init__(self, binder, cleaner=None):
        self.binder = binder
        self.cleaner = cleaner

    def bind(self, ctxt, arq_uuids):
        """RPC cast ``bind``: queue ``arq_uuids`` (list of str) on this
        host's binder; returns at once (the binder commits and tells
        Nova)."""
        LOG.info('Bind request for ARQs %s', ', '.join(arq_uuids))
        self.binder.submit(list(arq_uuids))

    def clean(self, ctxt):
        """RPC cast ``clean``: wake this host's cleaner (released handles
        to clean); no-op without one."""
        if self.cleaner is not None:
            self.cleaner.kick()


def start_server(transport, topic, host, binder, cleaner=None):
    """Serve ``topic`` as server ``host`` (threading executor); returns
    the started RPC server."""
    target = messaging.Target(exchange=EXCHANGE, topic=topic, server=host)
    server = messaging.get_rpc_server(
        transport, target, [AgentEndpoint(binder, cleaner)],
        executor='threading')
    server.start()
    LOG.info('Serving binding requests on topic %s, server %s', topic, host)
    return server


def stop_server(server):
    """Stop and wait for a server of ``start_server`` (None is fine)."""
    rpc_server.stop(server, 'agent')


class AgentAPI:
    """Client side: the API casts to the agent of a host.

    :param transport: an RPC transport
        (``accel_backend.transports.get_rpc_transport``).
    :param topic: ``[binding] agent_topic``.
    :param retry: reconnection attempts before a cast raises (int; None
        retries forever).
    """

    def __init__(self, transport, topic, retry=2):
        target = messaging.Target(exchange=EXCHANGE, topic=topic,
                                  namespace=NAMESPACE, version=VERSION)
        self.client = messaging.get_rpc_client(transport, target)
        self.retry = retry

    def bind(self, host, arq_uuids):
        """Cast ``bind`` to the agent of ``host``.

        :raises oslo_messaging.MessagingException: the message could not be
            handed to the broker.
        """
        self.client.prepare(server=host, retry=self.retry).cast(
            {}, 'bind', arq_uuids=list(arq_uuids))

    def clean(self, host):
        """Cast ``clean`` to the agent of ``host``."""
        self.client.prepare(server=host, retry=self.retry).cast({}, 'clean')
