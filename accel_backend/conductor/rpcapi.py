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

"""Client side of the conductor RPC API (``accel_backend.conductor.rpc``):
``ConductorAPI`` (the agents' calls, the API's ``bind`` casts),
``RemoteHostStore`` (``conductor.store.HostStore``'s interface for an
agent, which holds no database credentials) and ``BindForwarder``.

Methods, versions and who may send are in ``accel_backend.conductor
.rpc``'s docstring; the constants are here, where both sides read them,
as Nova keeps its services' clients in ``nova/conductor/rpcapi.py``
(openstack/nova 34.0.0).
"""

from oslo_log import log as logging
import oslo_messaging as messaging

from accel_backend.conductor import payloads
from accel_backend import exception
from accel_common import rpc_server

LOG = logging.getLogger(__name__)

EXCHANGE = 'accel_backend'
NAMESPACE = 'accel_conductor'
#: The newest version of the conductor API; see the module docstring.
VERSION = '1.2'
#: The version that added the pool migration calls.
POOLS_VERSION = '1.1'
#: The version that added the MIG repartition calls.
MIG_VERSION = '1.2'


class ConductorAPI:
    """Client side, for the agents (calls) and the API (``bind`` casts).

    :param transport: an RPC transport
        (``accel_backend.transports.get_rpc_transport``).
    :param topic: ``[conductor] topic``.
    :param timeout: seconds a call waits for its answer (``[conductor]
        call_timeout``).
    :param retry: reconnection attempts before a call or cast raises (int;
        None retries forever).
    :param version_cap: ``[upgrade_levels] conductor`` or None.
    :raises ValueError: a cap newer than ``VERSION``.
    """

    def __init__(self, transport, topic, timeout=60, retry=2,
                 version_cap=None):
        self.client = rpc_server.client(
            transport, EXCHANGE, topic, NAMESPACE, VERSION, version_cap,
            '[upgrade_levels] conductor')
        self.timeout = timeout
        self.retry = retry

    @classmethod
    def from_conf(cls, conf, transport, timeout=None):
        """A client with ``[conductor]``'s topic and timeout, ``[binding]
        cast_retry`` and ``[upgrade_levels] conductor``.

        :param timeout: seconds, instead of ``[conductor] call_timeout``.
        """
        return cls(transport, conf.conductor.topic,
                   timeout=timeout or conf.conductor.call_timeout,
                   retry=conf.binding.cast_retry,
                   version_cap=conf.upgrade_levels.conductor)

    def can_send(self, version):
        """Whether ``[upgrade_levels] conductor`` lets this client send
        ``version`` (bool)."""
        return self.client.can_send_version(version)

    def call(self, method, version='1.0', **kwargs):
        """Call ``method`` (of API ``version``) on any conductor.

        :raises ConductorUnavailable: no answer within ``timeout``, or the
            broker cannot be reached.
        :raises AccelBackendError: what the conductor raised
            (``NotThisHost``, ``MassRemovalRefused``...).
        """
        cctxt = self.client.prepare(version=version, timeout=self.timeout,
                                    retry=self.retry)
        try:
            return cctxt.call({}, method, **kwargs)
        except (messaging.MessagingTimeout,
                messaging.MessageDeliveryFailure) as e:
            raise exception.ConductorUnavailable(method=method, reason=e)

    def bind(self, arq_uuids, request_id=None):
        """Cast ``bind`` (1.0) to a conductor.

        :raises oslo_messaging.MessagingException: the message could not be
            handed to the broker.
        """
        self.client.prepare(version='1.0', retry=self.retry).cast(
            {}, 'bind', arq_uuids=list(arq_uuids), request_id=request_id)


class RemoteHostStore:
    """``conductor.store.HostStore``'s interface over the conductor RPC
    API, for an ``accel-backend-agent``, which holds no database
    credentials.

    :param api: ``ConductorAPI``.
    :param hostname: the agent's ``[DEFAULT] host``.

    Every method raises ``ConductorUnavailable`` when the conductor does
    not answer, and what ``HostStore`` raises.
    """

    #: No engine here: releases reach the agent as ``clean`` casts.
    engine = None

    def __init__(self, api, hostname):
        self.api = api
        self.hostname = hostname

    def sync(self, found, force=False):
        """See ``HostStore.sync``."""
        return [payloads.to_provider_record(r) for r in self.api.call(
            'sync_host', host=self.hostname,
            deployables=[payloads.deployable(d) for d in found],
            force=force)]

    def reserved_units(self, rp_uuid):
        """See ``HostStore.reserved_units``."""
        return self.api.call('reserved_units', host=self.hostname,
                             rp_uuid=rp_uuid)

    def record_status(self, state, reason=None, code=None):
        """See ``HostStore.record_status``."""
        self.api.call('record_status', host=self.hostname, state=state,
                      reason=reason, code=code)

    def handles_to_clean(self):
        """See ``HostStore.handles_to_clean``."""
        return self.api.call('handles_to_clean', host=self.hostname)

    def start_cleaning(self, handle_uuid):
        """See ``HostStore.start_cleaning``."""
        return self.api.call('start_cleaning', host=self.hostname,
                             handle_uuid=handle_uuid)

    def finish_cleaning(self, handle_uuid, error=None):
        """See ``HostStore.finish_cleaning``."""
        return self.api.call('finish_cleaning', host=self.hostname,
                             handle_uuid=handle_uuid, error=error)

    def pool_moves(self, found, force=False):
        """See ``HostStore.pool_moves``; nothing to move (``[]``, with a
        warning) while ``[upgrade_levels] conductor`` is below 1.1: the
        host's pools then replace its providers as before 1.1."""
        if not self.api.can_send(POOLS_VERSION):
            LOG.warning('[upgrade_levels] conductor is below %s: host %s '
                        'is not migrated to pools; drain it before turning '
                        'pooling on', POOLS_VERSION, self.hostname)
            return []
        return [payloads.to_pool_move(m) for m in self.api.call(
            'pool_moves', version=POOLS_VERSION, host=self.hostname,
            deployables=[payloads.deployable(d) for d in found],
            force=force)]

    def hold_gpu(self, address):
        """See ``HostStore.hold_gpu``; None (nothing held) while
        ``[upgrade_levels] conductor`` is below 1.2."""
        if not self.api.can_send(MIG_VERSION):
            LOG.warning('The conductor API is capped below %s: host %s '
                        'does not repartition MIG GPUs', MIG_VERSION,
                        self.hostname)
            return None
        return self.api.call('hold_gpu', version=MIG_VERSION,
                             host=self.hostname, address=address)

    def release_gpu(self, address):
        """See ``HostStore.release_gpu``."""
        if not self.api.can_send(MIG_VERSION):
            return []
        return self.api.call('release_gpu', version=MIG_VERSION,
                             host=self.hostname, address=address)

    def migrate_pools(self, found):
        """See ``HostStore.migrate_pools``."""
        return self.api.call(
            'migrate_pools', version=POOLS_VERSION, host=self.hostname,
            deployables=[payloads.deployable(d) for d in found])


class BindForwarder:
    """What an agent's RPC endpoint binds with (``conductor.rpc
    .AgentEndpoint``): a ``bind`` cast from an API of an earlier release,
    which cast to the agents, goes on to a conductor.

    :param api: ``ConductorAPI``.
    """

    def __init__(self, api):
        self.api = api

    def submit(self, arq_uuids):
        """Cast ``bind`` of ``arq_uuids`` (list of str) to a conductor."""
        self.api.bind(arq_uuids)
