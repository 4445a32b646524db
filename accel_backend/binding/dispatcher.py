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

"""Binding dispatchers: how a bind PATCH reaches a binder.

``PATCH /v2/accelerator_requests`` commits ``BindStarted`` and then calls
``dispatcher.bind({hostname: [arq_uuid, ...]})``:

``LocalDispatcher``
    the embedded ``accel-backend`` (``[binding] mode = inline``, the
    default): every ARQ goes to the process's own ``Binder`` threads.
``RpcDispatcher``
    ``accel-backend-api`` (always) and an embedded ``accel-backend`` with
    ``[binding] mode = agents``: the ARQs of each host are cast over
    oslo.messaging to the agent of that host
    (``accel_backend.binding.rpc``); ARQs of the process's own host, when
    it is an agent too, go to its own binder.

A cast that cannot be handed to the broker raises ``BindDispatchFailed``
(503); the ARQs stay ``BindStarted`` in the database, where the agent of
their host finds them when it (re)starts (``Binder.resume``) and the audit
re-queues them after ``[audit] grace_period``.
"""

from oslo_log import log as logging

from accel_backend import conf as accel_conf
from accel_backend import exception

LOG = logging.getLogger(__name__)


class BindDispatchFailed(exception.AccelBackendError):
    """503: a bind PATCH committed ``BindStarted`` but the cast to the
    agent of the ARQs' host could not be sent (broker unreachable); the
    agent binds them when it (re)starts.

    :param arqs: the ARQ UUIDs joined by ``', '`` (str).
    :param host: the host (str).
    :param reason: the messaging error (exception or str).
    """
    status = 503
    code = 'accel.arq.bind_dispatch_failed'
    msg_fmt = ('Could not hand the binding of ARQs %(arqs)s to the agent '
               'of host %(host)s: %(reason)s. They stay BindStarted and are '
               'bound when the agent (re)starts.')


class LocalDispatcher:
    """Binds in this process.

    :param binder: the process's ``Binder``.
    """

    def __init__(self, binder):
        self.binder = binder

    #: The PATCH handler binds in its own transaction (``bind_locked``).
    binds_in_transaction = True

    def bind_locked(self, session, arqs):
        """Bind ARQs the PATCH's transaction moved to ``BindStarted``, in
        that transaction (``Binder.bind_locked``).

        :returns: what to hand to ``bound`` after the commit.
        """
        return self.binder.bind_locked(session, arqs)

    def bound(self, outcomes):
        """After the commit of ``bind_locked``: events to Nova and the
        rest (``Binder.finish``)."""
        self.binder.finish(outcomes)

    def bind(self, arqs_by_host, request_id=None):
        """:param arqs_by_host: ``{hostname: [arq_uuid, ...]}``;
        ``request_id`` is for the RPC dispatcher's agents."""
        uuids = [u for host in sorted(arqs_by_host, key=str)
                 for u in arqs_by_host[host]]
        self.binder.submit(uuids)

    def clean(self, hosts):
        """Nothing to do: releases wake this process's cleaner at commit."""

    def stop(self):
        """Nothing to stop: the binder is the ``Service``'s to stop."""


class RpcDispatcher:
    """Casts to the agents of the ARQs' hosts.

    ``bind`` is called after the PATCH's commit of ``BindStarted``: the
    agent binds in a transaction of its own.

    :param agent_api: ``accel_backend.binding.rpc.AgentAPI``.
    :param local_host: this process's host when it also binds (embedded
        ``mode = agents``), else None.
    :param local_binder: the binder of ``local_host``.
    """

    def __init__(self, agent_api, local_host=None, local_binder=None):
        self.agent_api = agent_api
        self.local_host = local_host
        self.local_binder = local_binder

    binds_in_transaction = False

    def bind(self, arqs_by_host, request_id=None):
        """Cast per host; raises ``BindDispatchFailed`` for the first host
        whose cast failed (the other hosts were still cast to).
        ``request_id``: the API request's id, sent to the agents that
        take it (agent RPC 1.1)."""
        failed = None
        for host in sorted(arqs_by_host, key=str):
            uuids = list(arqs_by_host[host])
            if not uuids:
                continue
            if self.local_binder is not None and host == self.local_host:
                self.local_binder.submit(uuids)
                continue
            try:
                self.agent_api.bind(host, uuids, request_id=request_id)
            except Exception as e:
                LOG.error('Cannot cast the binding of ARQs %s to host %s: '
                          '%s', uuids, host, e)
                failed = failed or BindDispatchFailed(
                    arqs=', '.join(uuids), host=host, reason=e)
        if failed is not None:
            raise failed

    def clean(self, hosts):
        """Wake the cleaners of ``hosts`` (best effort: they also poll)."""
        for host in sorted(set(hosts) - {None}, key=str):
            if self.local_binder is not None and host == self.local_host:
                continue
            try:
                self.agent_api.clean(host)
            except Exception as e:
                LOG.warning('Cannot wake the cleaner of host %s (it polls '
                            'every [cleaning] poll_interval): %s', host, e)

    def stop(self):
        """Nothing to stop: the transport is the ``Service``'s to clean
        up."""


def for_service(conf, role, binder, transport=None):
    """The dispatcher of a ``Service``.

    :param role: ``service.EMBEDDED`` or ``service.API`` (an agent
        dispatches nothing).
    :param binder: the process's binder (None for the API).
    :param transport: an RPC transport; default ``[DEFAULT]
        transport_url``.
    :returns: ``(dispatcher, transport)``; transport None for local.
    """
    if role == 'embedded' and accel_conf.binding_mode(conf) == 'inline':
        return LocalDispatcher(binder), None
    from accel_backend.binding import rpc
    from accel_backend import transports
    if transport is None:
        transport = transports.get_rpc_transport(conf)
    api = rpc.AgentAPI(transport, conf.binding.agent_topic,
                       retry=conf.binding.cast_retry,
                       version_cap=conf.upgrade_levels.agent)
    if role == 'embedded':
        return RpcDispatcher(api, conf.host, binder), transport
    return RpcDispatcher(api), transport
