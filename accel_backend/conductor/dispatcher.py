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
    the embedded ``accel-backend``: every ARQ goes to the process's own
    ``Binder``, in the PATCH's transaction (``[binding] mode = inline``,
    the default) or after its commit (``mode = agents``, where the process
    is also the conductor of other hosts' agents, whose cleaners it wakes
    with ``clean`` casts).
``RpcDispatcher``
    ``accel-backend-api``: the ARQs are cast over oslo.messaging to a
    conductor (``accel_backend.conductor.rpc``), which binds them;
    releases wake the cleaner of the device's host with a ``clean`` cast
    to its agent (``accel_backend.agent.rpc``).

A cast that cannot be handed to the broker raises ``BindDispatchFailed``
(503); the ARQs stay ``BindStarted`` in the database, where a conductor
finds them when it (re)starts (``Binder.resume``) and its audit re-queues
them after ``[audit] grace_period``.
"""

from oslo_log import log as logging

from accel_backend.agent import rpcapi as agent_rpcapi
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend import conf as accel_conf
from accel_backend import exception

LOG = logging.getLogger(__name__)


class BindDispatchFailed(exception.AccelBackendError):
    """503: a bind PATCH committed ``BindStarted`` but the cast to a
    conductor could not be sent (broker unreachable); a conductor binds
    them when it (re)starts.

    :param arqs: the ARQ UUIDs joined by ``', '`` (str).
    :param host: the hosts of the ARQs (str).
    :param reason: the messaging error (exception or str).
    """
    status = 503
    code = exception.codes.ARQ_BIND_DISPATCH_FAILED
    msg_fmt = ('Could not hand the binding of ARQs %(arqs)s (host '
               '%(host)s) to a conductor: %(reason)s. They stay BindStarted '
               'and are bound when a conductor (re)starts.')


class LocalDispatcher:
    """Binds in this process.

    :param binder: the process's ``Binder``.
    :param in_transaction: bind in the PATCH's transaction (``mode =
        inline``), else after its commit.
    :param agent_api: ``agent.rpcapi.AgentAPI`` waking the cleaners of
        other hosts (``mode = agents``), or None.
    :param local_host: this process's host (its cleaner is woken by the
        commit itself).
    """

    def __init__(self, binder, in_transaction=True, agent_api=None,
                 local_host=None):
        self.binder = binder
        #: The PATCH handler binds in its own transaction (``bind_locked``).
        self.binds_in_transaction = in_transaction
        self.agent_api = agent_api
        self.local_host = local_host

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
        ``request_id`` is for the RPC dispatcher's conductors."""
        uuids = [u for host in sorted(arqs_by_host, key=str)
                 for u in arqs_by_host[host]]
        self.binder.submit(uuids)

    def clean(self, hosts):
        """Wake the cleaners of other hosts' agents (``mode = agents``);
        this host's is woken by the release's commit."""
        if self.agent_api is not None:
            _wake_cleaners(self.agent_api, set(hosts) - {self.local_host})

    def stop(self):
        """Nothing to stop: the binder is the ``Service``'s to stop."""


def _wake_cleaners(agent_api, hosts):
    """``clean`` casts to the agents of ``hosts`` (best effort: they also
    poll)."""
    for host in sorted(set(hosts) - {None}, key=str):
        try:
            agent_api.clean(host)
        except Exception as e:
            LOG.warning('Cannot wake the cleaner of host %s (it polls '
                        'every [cleaning] poll_interval): %s', host, e)


class RpcDispatcher:
    """Casts bind requests to a conductor, cleaning wake-ups to agents.

    ``bind`` is called after the PATCH's commit of ``BindStarted``: the
    conductor binds in a transaction of its own.

    :param conductor_api: ``accel_backend.conductor.rpcapi.ConductorAPI``.
    :param agent_api: ``accel_backend.agent.rpcapi.AgentAPI``.
    """

    def __init__(self, conductor_api, agent_api):
        self.conductor_api = conductor_api
        self.agent_api = agent_api

    binds_in_transaction = False

    def bind(self, arqs_by_host, request_id=None):
        """One cast of every ARQ to a conductor.

        :raises BindDispatchFailed: the cast could not be sent.
        """
        uuids = [u for host in sorted(arqs_by_host, key=str)
                 for u in arqs_by_host[host]]
        if not uuids:
            return
        try:
            self.conductor_api.bind(uuids, request_id=request_id)
        except Exception as e:
            hosts = ', '.join(sorted(str(h) for h in arqs_by_host))
            LOG.error('Cannot cast the binding of ARQs %s (host %s) to a '
                      'conductor: %s', uuids, hosts, e)
            raise BindDispatchFailed(arqs=', '.join(uuids), host=hosts,
                                     reason=e)

    def clean(self, hosts):
        """Wake the cleaners of ``hosts`` (best effort: they also poll)."""
        _wake_cleaners(self.agent_api, hosts)

    def stop(self):
        """Nothing to stop: the transport is the ``Service``'s to clean
        up."""


def for_service(conf, role, binder, transport):
    """The dispatcher of a ``Service``.

    :param role: ``service.EMBEDDED`` or ``service.API``.
    :param binder: the process's binder (None for the API).
    :param transport: the process's RPC transport (None for an embedded
        service in ``inline`` mode).
    :returns: a ``LocalDispatcher`` or ``RpcDispatcher``.
    """
    if role == 'embedded' and accel_conf.binding_mode(conf) == 'inline':
        return LocalDispatcher(binder)
    agents = agent_rpcapi.AgentAPI(transport, conf.binding.agent_topic,
                                   retry=conf.binding.cast_retry,
                                   version_cap=conf.upgrade_levels.agent)
    if role == 'embedded':
        return LocalDispatcher(binder, in_transaction=False,
                               agent_api=agents, local_host=conf.host)
    return RpcDispatcher(conductor_rpcapi.ConductorAPI.from_conf(
        conf, transport), agents)
