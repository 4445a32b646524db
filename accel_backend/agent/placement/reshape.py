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

"""Pooling turned on for a host with guests: Placement first, atomically.

``migrate`` runs at the start of a discovery pass (``Service
.discover_and_report``) when discovery pools functions that the
database still has as per-device deployables
(``conductor.pool_migration.moves``):

1. the host is recorded ``migrating`` (``common.host_states``), so that
   a bind that finds no handle on it meanwhile (one on the pool provider
   before the database has it) is kept ``BindStarted`` rather than
   failed (``conductor.failure.HOST_MIGRATING``), and bound by ``finished``;
2. the pool provider is created with its traits, as every provider of
   ours (``report.Reporter.ensure_provider``), then ONE ``POST
   /reshaper`` gives it its inventory and, for every consumer with
   allocations on the old per-device providers, writes its allocations
   with those units summed onto the pool provider (its other allocations
   unchanged), the old inventories emptied.  The contract is Placement's
   reshaper, microversion 1.30 (openstack/placement 16.0.0,
   ``placement/handlers/reshaper.py`` and
   ``placement/schemas/reshaper.py``; at this client's microversion,
   1.36, each consumer's ``allocations``, ``project_id``, ``user_id``
   and ``consumer_generation``); Nova makes the same call when its
   libvirt driver moves VGPU inventory to child providers (openstack/nova
   34.0.0, ``nova/scheduler/client/report.py``,
   ``SchedulerReportClient._reshape``).  Provider and
   consumer generations make a concurrent change fail it with 409: it
   is built again from a fresh read and retried (``agent.placement.retry``);
3. the database, in one transaction (``HostStore.migrate_pools``).

A pass that stops between 2 and 3 finds Placement already reshaped (the
old providers without inventory or allocations) and only does 3.  The
reporter then deletes the old providers, and ``finished`` records the
host ``ok`` again and binds the ARQs that waited.  An agent, which has no
database, does the Placement step itself and has the conductor do the
database step (``conductor.rpc``, API 1.1); the conductor binds the ARQs
that waited.
"""

from oslo_log import log as logging

from accel_backend.agent.placement import retry
from accel_backend.common import host_states
from accel_backend.common import ids
from accel_backend.common import pooling
from accel_backend.common import provider_records
from accel_backend import exception

LOG = logging.getLogger(__name__)


def _pool_record(move):
    return provider_records.ProviderRecord(
        rp_uuid=move.pool_rp_uuid, address=pooling.PREFIX,
        resource_class=move.resource_class, total=move.total,
        traits=move.traits, reserved=False, subname=move.subname)


def _old_state(client, rp_uuid):
    """``(inventories json, allocations json)`` of a provider, or None
    when it does not exist."""
    inv = client.get('/resource_providers/%s/inventories' % rp_uuid,
                     ok=(200, 404))
    allocs = client.get('/resource_providers/%s/allocations' % rp_uuid,
                        ok=(200, 404))
    if inv.status_code == 404 or allocs.status_code == 404:
        return None
    return inv.json(), allocs.json()


def _body(client, moves):
    """The ``POST /reshaper`` body for ``moves`` from a fresh read, or
    None when Placement already shows them done."""
    inventories, moving, done = {}, {}, True
    for move in moves:
        reserved = units = 0
        for rp_uuid in sorted(move.old):
            state = _old_state(client, rp_uuid)
            if state is None:
                continue
            inv, allocs = state
            done = done and not inv['inventories'] and \
                not allocs['allocations']
            reserved += sum(i['reserved'] for i in
                            inv['inventories'].values())
            inventories[rp_uuid] = {
                'resource_provider_generation':
                    min(inv['resource_provider_generation'],
                        allocs['resource_provider_generation']),
                'inventories': {}}
            for consumer, alloc in allocs['allocations'].items():
                moving.setdefault(consumer, {})[rp_uuid] = (
                    move.pool_rp_uuid, alloc['resources'])
                units += sum(alloc['resources'].values())
        pool = client.get('/resource_providers/%s/inventories' %
                          move.pool_rp_uuid).json()
        done = done and bool(pool['inventories'])
        # The next report sets ``reserved`` from the database; here it
        # must only leave room for the units moved.
        inventories[move.pool_rp_uuid] = {
            'resource_provider_generation':
                pool['resource_provider_generation'],
            'inventories': {move.resource_class: provider_records.inventory(
                move.total, min(reserved, max(0, move.total - units)))}}
    if done:
        return None
    allocations = {}
    for consumer, olds in sorted(moving.items()):
        have = client.get('/allocations/%s' % consumer).json()
        new = {rp: {'resources': dict(a['resources'])}
               for rp, a in have['allocations'].items() if rp not in olds}
        for pool_rp, resources in olds.values():
            into = new.setdefault(pool_rp, {'resources': {}})['resources']
            for rc, n in resources.items():
                into[rc] = into.get(rc, 0) + n
        allocations[consumer] = {
            'allocations': new, 'project_id': have['project_id'],
            'user_id': have['user_id'],
            'consumer_generation': have['consumer_generation']}
    return {'inventories': inventories, 'allocations': allocations}


def reshape(reporter, moves):
    """Step 2 of the module docstring: the pool providers of ``moves``
    created with their traits, then one ``POST /reshaper``.

    :param reporter: ``report.Reporter`` of the host.
    :param moves: list of ``conductor.pool_migration.Move``.
    :returns: True when this call reshaped, False when Placement already
        showed it done.
    :raises PlacementError: Placement failed, a pool provider's name is
        another provider's, or the reshape conflicted ``retry.RETRIES``
        times.
    """
    for move in moves:
        if not reporter.ensure_provider(_pool_record(move)):
            raise exception.PlacementError(
                method='POST', url='/resource_providers', status=409,
                body='the name of pool %s is taken' % move.subname)
    for attempt in retry.retrying():
        with attempt:
            body = _body(reporter.client, moves)
            if body is None:
                return False
            reporter.client.post('/reshaper', body, ok=(204,))
    LOG.info('Reshaped Placement: %s', '; '.join(
        '%s onto pool %s' % (', '.join(sorted(m.old)), m.pool_rp_uuid)
        for m in moves))
    return True


def migrate(store, reporter, found, force=False):
    """Migrate the host of ``store`` to the pools of ``found`` when its
    database still has their members as per-device deployables (see the
    module docstring); nothing when it has not.

    :param store: ``conductor.store.HostStore`` of the host, or an
        agent's ``conductor.rpcapi.RemoteHostStore`` (conductor API 1.1;
        below that cap it finds nothing to move).
    :param reporter: ``report.Reporter`` of the host.
    :param found: list of ``drivers.DiscoveredDeployable``.
    :param force: the operator's ``--force`` (``store.sync``'s).
    :returns: list of ``conductor.pool_migration.Move`` done (empty when
        there was nothing to migrate); the caller records the host ``ok``
        once the reporter deleted the old providers.
    :raises MassRemovalRefused: the pass would remove too many devices
        (``conductor.host_sync.check_removals``); nothing changed.
    :raises PoolMigrationIncomplete: a step failed; the host stays
        ``migrating`` and the next pass finishes it.
    """
    if all(item.members is None for item in found):
        return []  # no pool: nothing to ask (an agent: no RPC call)
    moves = store.pool_moves(found, force=force)
    if not moves:
        return []
    LOG.warning('Host %s: migrating %d per-device providers into %d '
                'pools', store.hostname,
                sum(len(m.old) for m in moves), len(moves))
    error = exception.PoolMigrationIncomplete(
        host=store.hostname, reason='started')
    # Persisted before anything is changed: binds on the host are
    # refused from now on.
    store.record_status(host_states.MIGRATING, reason=str(error),
                        code=error.code)
    try:
        reshape(reporter, moves)
        store.migrate_pools(found)
    except Exception as e:
        raise exception.PoolMigrationIncomplete(
            host=store.hostname, reason=e) from e
    return moves


def finished(store, binder):
    """After a pass that migrated (``migrate``) and reported: the host is
    recorded ``ok`` and the ARQs whose bind waited for the migration
    (kept ``BindStarted``, ``conductor.failure.HOST_MIGRATING``) are bound.
    Failures are logged: the next pass records the status again.

    :param store: ``conductor.store.HostStore`` of the host (or an
        agent's ``RemoteHostStore``: the conductor binds what waited).
    :param binder: ``conductor.binder.Binder`` of this process, or None.
    """
    try:
        store.record_status(host_states.OK)
        if binder is not None:
            binder.resume()
    except Exception as e:
        LOG.warning('Host %s migrated, but %s', store.hostname, e)


def spanning_in_use(client, hostname):
    """The ``keep_spanning`` of ``common.pooling.merge`` while
    ``[discovery] pool_numa_span`` is false: a callable given a spanning
    pool's name (str, ``10de_2330_numa_all``) that returns True when
    this host's provider of that pool has allocations in Placement (one
    GET of its usages, Placement API 1.0
    ``/resource_providers/{uuid}/usages``), and logs why it is kept.
    Splitting such a pool into per-NUMA-node pools would have to move
    guests' GPUs between providers, which nothing does: the pool stays
    until its allocations are gone (drain the host), then the next pass
    splits it.

    :param client: ``agent.placement.client.PlacementClient``.
    :param hostname: the host (str).
    :raises PlacementError: (from the callable) Placement failed.
    """
    def keep(name):
        rp_uuid = ids.deployable_ids(
            hostname, pooling.device_address(name), name)[1]
        resp = client.get('/resource_providers/%s/usages' % rp_uuid,
                          ok=(200, 404))
        if resp.status_code != 200 or not any(
                resp.json()['usages'].values()):
            return False
        LOG.error('Host %s: [discovery] pool_numa_span is false but pool '
                  '%s spans NUMA nodes and has allocations (%s); keeping '
                  'it as it is, since splitting it into per-node pools '
                  'would move guests\' GPUs. Drain the host (or set '
                  'pool_numa_span back to true); the first pass after '
                  'its allocations are gone splits it.', hostname, name,
                  resp.json()['usages'])
        return True
    return keep
