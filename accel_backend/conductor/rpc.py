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

"""oslo.messaging RPC between the agents and the conductor.

The conductor (``accel-backend-conductor``, or an embedded
``accel-backend`` with ``[binding] mode = agents``) serves the topic
``[conductor] topic`` (default ``accel-conductor``) in the exchange
``accel_backend``; any conductor may answer, so several can run.  It is
the only part of a multi-node deployment besides the API that holds the
database's credentials: agents call it for every row they need read or
changed.  Methods (namespace ``accel_conductor``):

calls, each naming the caller's ``host`` (``conductor.store.HostStore``
refuses rows of another host with ``NotThisHost``):

* ``sync_host(host, deployables, force=False)``: store what discovery
  found (``DiscoveredDeployable`` payloads, ``conductor.payloads``);
  returns ``ProviderRecord`` payloads for the agent's Placement report.
* ``reserved_units(host, rp_uuid)``: int or None.
* ``record_status(host, state, reason=None, code=None)``.
* ``handles_to_clean(host)``: ``[[handle_uuid, rp_uuid], ...]``.
* ``start_cleaning(host, handle_uuid)`` and ``finish_cleaning(host,
  handle_uuid, error=None)``: commit ``cleaning`` before the step runs
  and its outcome after.
* 1.1: ``pool_moves(host, deployables, force=False)``: what turning
  pooling on moves (``PoolMove`` payloads; ``MassRemovalRefused`` when
  the pass would be refused), and ``migrate_pools(host, deployables)``:
  move the rows after the agent reshaped Placement
  (``accel_backend.agent.placement.reshape``).  The ARQs of the host that
  waited ``BindStarted`` for the migration are bound when it has moved
  the rows, and again when the agent records the host out of
  ``migrating``.

cast:

* ``bind(arq_uuids, request_id=None)``: bind these ``BindStarted`` ARQs
  (the API committed ``BindStarted`` first); the conductor claims the
  attach handles, commits ``Bound``/``BindFailed`` with a pending event
  and delivers it to Nova.

* 1.2: ``hold_gpu(host, address)`` and ``release_gpu(host, address)``:
  a GPU held (or no longer) for a MIG repartition
  (``conductor.mig_hold``; the rp UUIDs of its deployables, or None
  from ``hold_gpu`` when it is not idle).

Versions: 1.0 as above, 1.1 adds the two pool migration calls, 1.2 the
two MIG repartition calls (an agent capped below 1.2 does not
repartition).  A minor
version only adds optional arguments or methods; cap what agents and APIs
send with ``[upgrade_levels] conductor`` while conductors of an older
release remain (an agent capped at 1.0 does not migrate a host to pools:
drain it first, as before 1.1).

Who may send: oslo.messaging carries no authenticated sender, so a
message's ``host`` is what the agent says it is.  The host check stops an
agent configured for one host from touching another's rows by mistake;
against a compromised compute node, give each node's RabbitMQ user only
the permissions the install guide lists.
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from accel_backend.common import host_states
from accel_backend.conductor import payloads
from accel_backend.conductor import rpcapi
from accel_backend.conductor import store as store_mod
from accel_backend import exception
from accel_common import rpc_server

LOG = logging.getLogger(__name__)


class ConductorEndpoint:
    """What a conductor serves.

    :param store_for: ``hostname -> conductor.store.HostStore``.
    :param binder: ``accel_backend.conductor.binder.Binder`` binding the
        ARQs of every host.
    """

    target = messaging.Target(namespace=rpcapi.NAMESPACE,
                              version=rpcapi.VERSION)

    def __init__(self, store_for, binder):
        self.store_for = store_for
        self.binder = binder

    @messaging.expected_exceptions(exception.AccelBackendError,
                                   payloads.PayloadError)
    def sync_host(self, ctxt, host, deployables, force=False):
        """Store discovery's findings of ``host``; returns
        ``ProviderRecord`` payloads."""
        found = [payloads.to_deployable(d) for d in deployables]
        return [payloads.provider_record(r) for r in
                self.store_for(host).sync(found, force=force)]

    @messaging.expected_exceptions(exception.AccelBackendError)
    def reserved_units(self, ctxt, host, rp_uuid):
        """Reserved units of a provider of ``host`` (int or None)."""
        return self.store_for(host).reserved_units(rp_uuid)

    def record_status(self, ctxt, host, state, reason=None, code=None):
        """Record the outcome of a discovery pass of ``host``; a host
        leaving ``migrating`` gets its waiting binds done."""
        store = self.store_for(host)
        before = store.record_status(state, reason=reason, code=code)
        if before == host_states.MIGRATING and state != before:
            self._bind_waiting(store)

    @messaging.expected_exceptions(exception.AccelBackendError,
                                   payloads.PayloadError)
    def pool_moves(self, ctxt, host, deployables, force=False):
        """1.1: ``HostStore.pool_moves`` of ``host``; ``PoolMove``
        payloads."""
        found = [payloads.to_deployable(d) for d in deployables]
        return [payloads.pool_move(m) for m in
                self.store_for(host).pool_moves(found, force=force)]

    @messaging.expected_exceptions(exception.AccelBackendError,
                                   payloads.PayloadError)
    def migrate_pools(self, ctxt, host, deployables):
        """1.1: ``HostStore.migrate_pools`` of ``host``, then its waiting
        binds; returns ``{old rp_uuid: pool rp_uuid}``."""
        store = self.store_for(host)
        moved = store.migrate_pools(
            [payloads.to_deployable(d) for d in deployables])
        self._bind_waiting(store)
        return moved

    def _bind_waiting(self, store):
        waiting = store.bind_started()
        if waiting:
            LOG.info('Host %s: binding %d ARQs that waited for its pool '
                     'migration', store.hostname, len(waiting))
            self.binder.submit(waiting)

    def hold_gpu(self, ctxt, host, address):
        """1.2: ``HostStore.hold_gpu`` of ``host``."""
        return self.store_for(host).hold_gpu(address)

    def release_gpu(self, ctxt, host, address):
        """1.2: ``HostStore.release_gpu`` of ``host``."""
        return self.store_for(host).release_gpu(address)

    def handles_to_clean(self, ctxt, host):
        """``[[handle_uuid, rp_uuid], ...]`` of ``host``."""
        return self.store_for(host).handles_to_clean()

    @messaging.expected_exceptions(exception.AccelBackendError)
    def start_cleaning(self, ctxt, host, handle_uuid):
        """``HostStore.start_cleaning`` for ``host``."""
        return self.store_for(host).start_cleaning(handle_uuid)

    @messaging.expected_exceptions(exception.AccelBackendError)
    def finish_cleaning(self, ctxt, host, handle_uuid, error=None):
        """``HostStore.finish_cleaning`` for ``host``."""
        return self.store_for(host).finish_cleaning(handle_uuid, error)

    def bind(self, ctxt, arq_uuids, request_id=None):
        """Cast ``bind``: queue ``arq_uuids`` on the binder."""
        LOG.info('Bind request for ARQs %s (API request %s)',
                 ', '.join(arq_uuids), request_id or 'not sent')
        self.binder.submit(list(arq_uuids))


def start_server(transport, topic, host, store_for, binder):
    """Serve ``topic`` (as server ``host``; any conductor answers a
    message sent to the topic) with the threading executor; returns the
    started RPC server."""
    return rpc_server.start(transport, rpcapi.EXCHANGE, topic, host,
                            [ConductorEndpoint(store_for, binder)],
                            'conductor')


def stop_server(server):
    """Stop and wait for a server of ``start_server`` (None is fine)."""
    rpc_server.stop(server, 'conductor')


def store_factory(db, conf, notifications=None):
    """``hostname -> HostStore`` for a conductor: stores built on demand
    with ``conf``'s ``[discovery]`` limits."""
    def store_for(hostname):
        return store_mod.HostStore.from_conf(db, conf, hostname=hostname,
                                             notifications=notifications)
    return store_for
