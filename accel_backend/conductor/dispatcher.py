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

"""The bind flow, from ``PATCH /v2/accelerator_requests`` to Nova's
``accelerator-request-bound`` event, in the order the code runs it.

Nova 34 (``nova/accelerator/cyborg.py``, ``bind_arqs``) sends the PATCH
and waits for the event (``nova/compute/manager.py``,
``_wait_for_accel_requests``), as with Cyborg 17
(``cyborg/api/controllers/v2/arqs.py``, ``cyborg/conductor/manager.py``).
The contributor guide's "The bind flow" draws the same sequence.

0. ``api.handlers.arq.update`` checks ``accelerator:arq:update`` and
   validates the body (``api.schemas.arq.parse_patch``), then runs
   ``_update_locked`` in one transaction (``Database.write``, run again
   after a database deadlock), which calls steps 1 to 3 of this module:
1. ``lock``: the ARQs are locked and read in id order
   (``bind_row.lock``);
2. ``start``: each one to bind moves to ``BindStarted``
   (``objects.arq.start_binding``);
3. ``bind_in_transaction``: with ``[binding] mode = inline`` (the
   embedded service's default) ``Binder.bind_locked`` claims the attach
   handles and writes ``Bound`` or ``BindFailed`` with the
   ``pending_event``, in the PATCH's transaction; in every other
   deployment ``bind_row.write`` writes ``BindStarted``.  The
   transaction commits;
4. ``hand_over``, after the commit: inline, ``Binder.finish`` once the
   202 is sent (``api.util.after_response``), which goes on at step 6;
   otherwise ``Dispatcher.bind``: ``Binder.submit`` of this process
   (embedded, ``mode = agents``) or one ``bind`` cast to a conductor
   (``accel-backend-api``: ``rpcapi.ConductorAPI.bind``, served by
   ``rpc.ConductorEndpoint.bind``, which calls the conductor's
   ``Binder.submit``);
5. on a binder thread (``Binder.submit`` -> ``_bind_and_notify``),
   ``Binder.bind_many`` binds in a transaction of its own: the same
   ``bind_row.lock``, handles claimed (``numa_fit.claim_groups``,
   ``claim.claim``; ``failure.diagnose`` says why some are short),
   ``objects.arq.transition`` to ``Bound`` or ``BindFailed`` (which sets
   ``pending_event``), ``bind_row.write``, commit;
6. ``delivery.EventDelivery.notify`` sends the events
   (``nova_notifier.NovaNotifier.send``: ``POST
   /os-server-external-events``);
7. ``EventDelivery.forget`` clears the ``pending_event`` of those Nova
   took (``objects.arq.forget_events``); the others are tried again by
   ``EventDelivery.deliver`` on a delivery thread, with backoff.

The callee of each step is named in the code, and which one runs depends
only on configuration, read once by ``for_service``: the role of the
process (``accel-backend`` or ``accel-backend-api``) and ``[binding]
mode``.  Anything that stands in for a binder (a test's, a benchmark's)
is given to the ``Dispatcher`` constructor as ``binder``.

A cast that cannot be handed to the broker raises ``BindDispatchFailed``
(503); the ARQs stay ``BindStarted`` in the database, where a conductor
finds them when it (re)starts (``Binder.resume``) and its audit re-queues
them after ``[audit] grace_period``.  Releases (unbind, delete) wake the
cleaner of the device's host (``Dispatcher.clean``).
"""

from oslo_log import log as logging

from accel_backend.agent import rpcapi as agent_rpcapi
from accel_backend.conductor import bind_row
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend import conf as accel_conf
from accel_backend import exception
from accel_backend.objects import arq as arq_obj

LOG = logging.getLogger(__name__)


# Steps 1 to 3: in the PATCH's transaction.

def lock(session, arq_uuids):
    """Step 1: lock and read the ARQs of a PATCH (those to bind and to
    unbind) in id order, the one lock order of every multi-ARQ writer
    (``bind_row.lock``).

    :param session: the PATCH's ``Session`` (``Database.write``).
    :param arq_uuids: iterable of ARQ UUIDs (str).
    :returns: ``{arq_uuid: bind_row.BindRow}`` of those that exist.
    """
    return {row.uuid: row for row in bind_row.lock(session, arq_uuids)}


def start(session, binds, locked):
    """Step 2: move each ARQ to bind to ``BindStarted``
    (``objects.arq.start_binding``); asking again for the binding an ARQ
    has or is getting changes nothing.

    :param session: the PATCH's ``Session``.
    :param binds: ``{arq_uuid: {'hostname', 'device_rp_uuid',
        'instance_uuid'[, 'project_id']}}`` of
        ``api.schemas.arq.parse_patch``.
    :param locked: ``locked(arq_uuid) -> bind_row.BindRow``, the row of
        ``lock``; raises what the caller may not see or change
        (``ARQNotFound``, ``Forbidden``).
    :returns: ``(started, moved)``: ``{hostname: [arq_uuid, ...]}`` and
        the list of the ``BindRow`` moved, host by host.
    :raises ARQInvalidState: an ARQ is bound elsewhere or not bindable
        (409).
    """
    started = {}
    rows = {}
    for arq_uuid, fields in binds.items():
        row = locked(arq_uuid)
        if arq_obj.start_binding(session, row, fields['hostname'],
                                 fields['device_rp_uuid'],
                                 fields['instance_uuid'],
                                 fields.get('project_id')):
            started.setdefault(fields['hostname'], []).append(arq_uuid)
            rows[arq_uuid] = row
    return started, [rows[u] for uuids in started.values() for u in uuids]


def bind_in_transaction(session, dispatcher, moved):
    """Step 3: bind ``moved`` in the PATCH's transaction
    (``Binder.bind_locked``: handles claimed, ``Bound`` or ``BindFailed``
    with the ``pending_event`` written) when the dispatcher does
    (``binds_in_transaction``, ``[binding] mode = inline``), else write
    them ``BindStarted`` (``bind_row.write``) for ``hand_over``.

    :param moved: list of ``bind_row.BindRow`` of ``start``.
    :returns: what ``hand_over`` takes: the outcomes of
        ``Binder.bind_locked``, or None when nothing was bound here.
    """
    if moved and dispatcher.binds_in_transaction:
        return dispatcher.binder.bind_locked(session, moved)
    if moved:
        bind_row.write(session, moved)
    return None


# Step 4: after the PATCH's commit.

def hand_over(dispatcher, started, outcomes, request_id, after_response):
    """Step 4: what follows the commit of the PATCH's transaction.

    Bound in that transaction (``outcomes`` not None): the events and
    the rest go after the 202 (``Binder.finish`` given to
    ``after_response``).  Otherwise the ``BindStarted`` ARQs go to a
    binder (``Dispatcher.bind``).

    :param started: ``{hostname: [arq_uuid, ...]}`` of ``start``.
    :param outcomes: what ``bind_in_transaction`` returned.
    :param request_id: the PATCH's request ID (str), logged by the
        conductor.
    :param after_response: ``after_response(fn)`` runs ``fn()`` once the
        answer is sent (``api.util.after_response``).
    :raises BindDispatchFailed: the cast to a conductor could not be sent
        (503).
    """
    if outcomes is not None:
        after_response(lambda: dispatcher.binder.finish(outcomes))
    else:
        dispatcher.bind(started, request_id=request_id)


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


class Dispatcher:
    """Where the ARQs of a PATCH are bound, and whom a release wakes.

    Exactly one of ``binder`` and ``conductor_api`` is given:

    * ``binder``: this process binds (the embedded ``accel-backend``):
      in the PATCH's transaction when ``in_transaction`` (``[binding]
      mode = inline``), else after its commit (``mode = agents``, where
      the process is also the conductor of other hosts' agents);
    * ``conductor_api``: ``accel-backend-api`` casts the ARQs to a
      conductor, which binds them in a transaction of its own.

    :param binder: ``conductor.binder.Binder``, or anything with its
        ``submit``, ``bind_locked`` and ``finish`` (a test's or a
        benchmark's stand-in), or None.
    :param in_transaction: bind in the PATCH's transaction (bool; only
        with ``binder``).
    :param conductor_api: ``conductor.rpcapi.ConductorAPI`` or None.
    :param agent_api: ``agent.rpcapi.AgentAPI`` waking the cleaners of the
        agents, or None (no agents).
    :param local_host: this process's host, whose cleaner the commit of a
        release wakes itself (str or None).
    """

    def __init__(self, binder=None, in_transaction=False, conductor_api=None,
                 agent_api=None, local_host=None):
        if (binder is None) == (conductor_api is None):
            raise ValueError('a Dispatcher takes a binder or a '
                             'conductor_api, not both or neither')
        self.binder = binder
        #: Step 3 binds in the PATCH's transaction (``bind_in_transaction``).
        self.binds_in_transaction = bool(in_transaction) and \
            binder is not None
        self.conductor_api = conductor_api
        self.agent_api = agent_api
        self.local_host = local_host

    def bind(self, arqs_by_host, request_id=None):
        """Hand ``BindStarted`` ARQs to a binder, every host's in one go:
        this process's ``Binder.submit``, or one ``bind`` cast to a
        conductor (``ConductorAPI.bind``).

        :param arqs_by_host: ``{hostname: [arq_uuid, ...]}``.
        :param request_id: the PATCH's request ID (str or None), logged by
            the conductor.
        :raises BindDispatchFailed: the cast could not be sent.
        """
        uuids = [u for host in sorted(arqs_by_host, key=str)
                 for u in arqs_by_host[host]]
        if self.binder is not None:
            self.binder.submit(uuids)
            return
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
        """Wake the cleaners of the agents of ``hosts`` (iterable of
        hostnames or None) with ``clean`` casts, best effort (they also
        poll every ``[cleaning] poll_interval``); this process's own host
        is woken by the release's commit, and without agents there is
        nothing to wake."""
        if self.agent_api is None:
            return
        for host in sorted(set(hosts) - {None, self.local_host}, key=str):
            try:
                self.agent_api.clean(host)
            except Exception as e:
                LOG.warning('Cannot wake the cleaner of host %s (it polls '
                            'every [cleaning] poll_interval): %s', host, e)

    def stop(self):
        """Nothing to stop: the binder and the transport are the
        ``Service``'s."""


class LocalDispatcher(Dispatcher):
    """The embedded service's ``Dispatcher``: this process binds.

    :param binder: as ``Dispatcher``'s.
    :param in_transaction: bind in the PATCH's transaction (``mode =
        inline``, the default), else after its commit.
    :param agent_api: as ``Dispatcher``'s (``mode = agents``).
    :param local_host: as ``Dispatcher``'s.
    """

    def __init__(self, binder, in_transaction=True, agent_api=None,
                 local_host=None):
        super().__init__(binder=binder, in_transaction=in_transaction,
                         agent_api=agent_api, local_host=local_host)


class RpcDispatcher(Dispatcher):
    """``accel-backend-api``'s ``Dispatcher``: binds are cast to a
    conductor, wake-ups to the agents.

    :param conductor_api: ``conductor.rpcapi.ConductorAPI``.
    :param agent_api: ``agent.rpcapi.AgentAPI``.
    """

    def __init__(self, conductor_api, agent_api):
        super().__init__(conductor_api=conductor_api, agent_api=agent_api)


def for_service(conf, role, binder, transport):
    """The dispatcher of a ``Service``, from its configuration.

    ===============  ====================  ================================
    role             ``[binding] mode``    dispatcher
    ===============  ====================  ================================
    ``embedded``     ``inline`` (default)  ``LocalDispatcher(binder)``
    ``embedded``     ``agents``            ``LocalDispatcher`` after commit
    ``api``          (any)                 ``RpcDispatcher``
    ===============  ====================  ================================

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
