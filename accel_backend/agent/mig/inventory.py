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

"""MIG slices in Placement: one resource provider per GPU instance (GI),
kept equal to what a ``host.MigHost`` holds.

The scheme (one, for every query):

* Each GI is a resource provider, a child of the compute node's provider
  (not of a per-GPU provider: the GPU itself has no inventory, a GPU in
  MIG mode is never sold whole, and an empty middle level would cost a
  create and a delete per GPU and answer no query this scheme needs).
  UUID ``ids.stable_uuid('rp', hostname, 'mig', gpu, start)``; name
  ``<hostname>:mig:gpu<gpu>:slice<start>``, which does not start with
  ``<compute node name>_``, so ``agent.placement.report.Reporter`` never
  counts it among the deployables' providers it deletes.
* Its only inventory is ``CUSTOM_MIG_SLICE``, total 1, and its traits
  say which slice it is (``mig.traits``).
  A GI in use normally holds its allocation, which takes the unit; one
  the host has in use *without* an allocation in Placement is reserved
  (1; microversion 1.26 allows reserved equal to total) so it is not
  offered, and unreserved once it is free again or allocated.  Never
  reserved under an allocation: Nova's moves re-write a consumer's
  allocation on the same provider (``POST /allocations``), which a
  reserved unit would refuse.

The stable UUID is the GI's place, not its profile: a GI repartitioned
into another profile at the same start keeps the provider, whose traits
change; ``sync`` refuses that, as a delete, while an allocation holds it.

Placement contract (Placement API reference,
https://docs.openstack.org/api-ref/placement/, at the client's
microversion 1.36, ``agent.placement.client.MICROVERSION``): "List
resource providers" (``in_tree`` 1.14, ``resources`` 1.4), "Create
resource provider" (``parent_provider_uuid`` 1.14, the provider in the
answer 1.20), "Update resource provider inventories" and "Update
resource provider traits" (a ``resource_provider_generation``; 409 when
it is stale), "List resource provider usages", "Delete resource
provider" (409 while it has allocations), "Update resource classes" and
"Update traits" (custom ones, ``agent.placement.custom_names``).
"""

import collections

from accel_backend.agent.mig import traits as mig_traits
from accel_backend.agent.placement import custom_names
from accel_backend.agent.placement import retry
from accel_backend.common import ids
from accel_backend import exception

SLICE_RC = mig_traits.SLICE_RC

Provider = collections.namedtuple('Provider', [
    'uuid', 'name', 'parent', 'gpu', 'gi_id', 'profile', 'start',
    'inventories', 'traits'])
Provider.__doc__ = """A GI's resource provider as wanted: ``uuid``,
``name``, ``parent`` (str, the compute node's provider), ``gpu`` (the
host's GPU id), ``gi_id`` (int), ``profile`` (str), ``start`` (int,
memory slice), ``inventories`` (dict resource class -> inventory dict
as Placement shows it) and ``traits`` (frozenset of str)."""


class MigProviderAllocated(exception.Conflict):
    """409: a GI's provider would be deleted, or changed to another
    profile, while Placement holds an allocation against it.

    :param provider: the provider's UUID (str).
    :param usages: its usages (dict resource class -> int).
    """
    msg_fmt = ('MIG slice provider %(provider)s still has allocations '
               '(%(usages)s): not deleted or changed')


def name_prefix(hostname):
    """The start of the name of every GI provider of ``hostname``."""
    return '%s:mig:' % hostname


def provider_uuid(hostname, gpu, start):
    """The stable UUID (str) of the provider of a GI at memory slice
    ``start`` (int) of ``gpu``."""
    return ids.stable_uuid('rp', hostname, 'mig', str(gpu), str(start))


def inventory(reserved):
    """The ``SLICE_RC`` inventory dict, ``reserved`` 0 or 1."""
    return {'total': 1, 'reserved': reserved, 'min_unit': 1,
            'max_unit': 1, 'step_size': 1, 'allocation_ratio': 1.0}


def provider_tree(hostname, compute_rp_uuid, host, in_use,
                  unallocated=frozenset()):
    """The providers Placement should hold for ``host``'s GIs.

    :param hostname: the host's name (str).
    :param compute_rp_uuid: its compute node's provider (str).
    :param host: a ``host.MigHost``.
    :param in_use: set of ``(gpu, gi id)``: the GIs the host has in use.
    :param unallocated: UUIDs of providers without an allocation (set of
        str): a GI in use whose provider is one is reserved.
    :returns: dict UUID -> ``Provider``, one per GI; none for a GPU
        without GIs.
    :raises exception.MigModelUnknown: a GPU's model has no table.
    """
    wanted = {}
    for gpu in host.gpus():
        model = host.model(gpu)
        for gi in host.instances(gpu):
            uuid = provider_uuid(hostname, gpu, gi.start)
            traits = frozenset(mig_traits.slice_traits(model, gi.profile))
            wanted[uuid] = Provider(
                uuid, '%sgpu%s:slice%d' % (name_prefix(hostname), gpu,
                                           gi.start),
                compute_rp_uuid, gpu, gi.id, gi.profile, gi.start,
                {SLICE_RC: inventory(1 if (gpu, gi.id) in in_use and
                                     uuid in unallocated else 0)},
                traits)
    return wanted


class SyncState:
    """What ``sync`` last saw in Placement, kept by the caller between
    calls so that an unchanged provider costs no read.

    ``entries``: dict UUID -> ``[generation, inventories, traits]``,
    valid while Placement shows that generation (every write to a
    provider, an allocation's included, bumps it); ``custom``: the
    ``custom_names.CustomNames`` known to exist.
    """

    def __init__(self):
        self.entries = {}
        self.custom = custom_names.CustomNames()


def _refresh(client, state, uuid):
    inv = client.get('/resource_providers/%s/inventories' % uuid).json()
    traits = client.get('/resource_providers/%s/traits' % uuid).json()
    # A write between the two reads: the older generation is kept, so
    # that the next sync (or write) reads the provider again.
    state.entries[uuid] = [min(inv['resource_provider_generation'],
                               traits['resource_provider_generation']),
                           inv['inventories'], frozenset(traits['traits'])]


def _usages(client, uuid):
    return {rc: n for rc, n in client.get(
        '/resource_providers/%s/usages' % uuid).json()['usages'].items()
        if n}


def _write(client, state, uuid, what, body):
    """PUT ``body`` (without the generation) to the provider's
    ``what`` (``'inventories'`` or ``'traits'``), at the cached
    generation, re-reading and trying again on a generation conflict."""
    for attempt in retry.retrying(reread=lambda: _refresh(client, state,
                                                          uuid)):
        with attempt:
            entry = state.entries[uuid]
            data = client.put('/resource_providers/%s/%s' % (uuid, what),
                              dict(body, resource_provider_generation=entry[
                                  0])).json()
            entry[0] = data['resource_provider_generation']
            entry[1 if what == 'inventories' else 2] = (
                data['inventories'] if what == 'inventories' else
                frozenset(data['traits']))


def _same_inventories(have, want):
    return set(have) == set(want) and all(
        {k: have[rc].get(k) for k in inv} == inv for rc, inv in want.items())


def sync(placement_client, hostname, compute_rp_uuid, host, in_use,
         state=None):
    """Make Placement hold exactly ``provider_tree``'s providers.

    :param placement_client: ``agent.placement.client.PlacementClient``.
    :param hostname, compute_rp_uuid, host, in_use: as for
        ``provider_tree``.
    :param state: a ``SyncState`` kept between calls; None reads every
        provider of ours again.
    :returns: dict ``created``, ``updated``, ``deleted`` (sorted lists of
        UUIDs) and ``calls`` (int: Placement calls made).
    :raises MigProviderAllocated: a provider to delete, or whose traits
        (its profile) would change, has an allocation; nothing is
        written then.
    :raises exception.PlacementError: Placement failed, or a generation
        kept conflicting (``retry.RETRIES`` tries).

    One GET of the compute node's tree; two GETs (inventories, traits)
    per provider of ours whose generation is not the one ``state`` saw;
    when a GI is in use, one ``free_providers`` GET (which in-use GIs
    have no allocation) and one usages GET per provider reserved now;
    one usages GET per provider to delete or change profile; then only
    the writes that differ.  A provider of ours is one in the tree named
    ``name_prefix(hostname)...`` or with a wanted UUID.
    """
    client = placement_client
    before = client.calls
    state = state if state is not None else SyncState()
    have, want = _read(client, state, hostname, compute_rp_uuid, host,
                       in_use)
    gone = _checked_removals(client, state, have, want)
    result = _apply(client, state, have, want, gone)
    result['calls'] = client.calls - before
    return result


def _read(client, state, hostname, compute_rp_uuid, host, in_use):
    """``sync``'s reads: ``(have, want)``, the providers of ours in
    Placement (``{uuid: provider dict}``) and ``provider_tree`` with the
    reservations of in-use GIs that hold no allocation; ``state``
    refreshed where a generation moved."""
    # The UUIDs; the reservations once the allocations are known.
    want = provider_tree(hostname, compute_rp_uuid, host, in_use)
    prefix = name_prefix(hostname)
    have = {rp['uuid']: rp for rp in client.get(
        '/resource_providers?in_tree=%s' % compute_rp_uuid).json()[
            'resource_providers']
        if rp['uuid'] in want or rp['name'].startswith(prefix)}
    for uuid in set(state.entries) - set(have):
        del state.entries[uuid]
    for uuid, rp in sorted(have.items()):
        entry = state.entries.get(uuid)
        if uuid in want and (entry is None or entry[0] != rp['generation']):
            _refresh(client, state, uuid)
    busy = {u for u, p in want.items() if (p.gpu, p.gi_id) in in_use}
    unallocated = set(busy - set(have))
    if busy & set(have):
        unallocated |= free_providers(client, compute_rp_uuid)
        # Reserved by an earlier sync: no allocation could land since,
        # unless one raced that write.
        unallocated |= {u for u in busy & set(have)
                        if state.entries[u][1].get(SLICE_RC, {}).get(
                            'reserved') and not _usages(client, u)}
    return have, provider_tree(hostname, compute_rp_uuid, host, in_use,
                               unallocated)


def _checked_removals(client, state, have, want):
    """The providers ``sync`` deletes (sorted UUIDs), once neither they
    nor those whose profile changes hold an allocation: every check
    before the first write, all or nothing.

    :raises MigProviderAllocated: one of them has usages.
    """
    gone = sorted(set(have) - set(want))
    retyped = sorted(u for u in have if u in want and
                     state.entries[u][2] != want[u].traits)
    for uuid in gone + retyped:
        usages = _usages(client, uuid)
        if usages:
            raise MigProviderAllocated(provider=uuid, usages=usages)
    return gone


def _apply(client, state, have, want, gone):
    """``sync``'s writes: delete ``gone``, create what ``want`` has and
    Placement lacks, write inventories and traits that differ.

    :returns: dict ``created``, ``updated``, ``deleted``.
    :raises MigProviderAllocated: a provider to delete was allocated
        since ``_checked_removals`` (409).
    """
    result = {'created': [], 'updated': [], 'deleted': []}
    for uuid in gone:
        resp = client.delete('/resource_providers/%s' % uuid,
                             ok=(204, 404, 409))
        if resp.status_code == 409:   # allocated since the check
            raise MigProviderAllocated(provider=uuid, usages='?')
        state.entries.pop(uuid, None)
        result['deleted'].append(uuid)
    for uuid, prov in sorted(want.items()):
        if uuid not in have:
            rp = client.post('/resource_providers', {
                'uuid': uuid, 'name': prov.name,
                'parent_provider_uuid': prov.parent}).json()
            state.entries[uuid] = [rp['generation'], {}, frozenset()]
            result['created'].append(uuid)
        entry = state.entries[uuid]
        changed = False
        if not _same_inventories(entry[1], prov.inventories):
            state.custom.ensure_rc(client, SLICE_RC)
            _write(client, state, uuid, 'inventories',
                   {'inventories': prov.inventories})
            changed = True
        if entry[2] != prov.traits:
            state.custom.ensure_traits(client, prov.traits)
            _write(client, state, uuid, 'traits',
                   {'traits': sorted(prov.traits)})
            changed = True
        if changed and uuid in have:
            result['updated'].append(uuid)
    return result


def free_providers(placement_client, compute_rp_uuid):
    """The providers of the compute node's tree with a free
    ``SLICE_RC`` unit (set of UUIDs): neither reserved nor allocated.

    One ``GET /resource_providers?in_tree=...&resources=
    CUSTOM_MIG_SLICE:1`` (Placement counts total - reserved - used); its
    400 for a resource class that does not exist yet (no provider has
    any) is an empty set.

    :raises exception.PlacementError: Placement failed.
    """
    resp = placement_client.get(
        '/resource_providers?in_tree=%s&resources=%s:1' % (
            compute_rp_uuid, SLICE_RC), ok=(200, 400))
    if resp.status_code == 400:
        if SLICE_RC not in resp.text:
            raise exception.PlacementError(
                method='GET', url=resp.url, status=400,
                body=resp.text[:500])
        return set()
    return {rp['uuid'] for rp in resp.json()['resource_providers']}


def idle_gpus(placement_client, hostname, compute_rp_uuid, host, in_use):
    """The GPUs a repartitioning may touch (sorted list): no GI in use on
    the host, and no provider of one of its slices (named
    ``<prefix>gpu<gpu>:``, a GI's that is gone included) without a free
    unit in Placement: an allocation, or a reservation ``sync`` has not
    lifted yet, counts as busy.

    Two GETs: the tree, and ``free_providers``.

    :param in_use: set of ``(gpu, gi id)``.
    :raises exception.PlacementError: Placement failed.
    """
    names = {rp['uuid']: rp['name'] for rp in placement_client.get(
        '/resource_providers?in_tree=%s' % compute_rp_uuid).json()[
            'resource_providers']}
    free = free_providers(placement_client, compute_rp_uuid)
    idle = []
    for gpu in host.gpus():
        if any((gpu, gi.id) in in_use for gi in host.instances(gpu)):
            continue
        mine = '%sgpu%s:' % (name_prefix(hostname), gpu)
        if all(u in free for u, name in names.items()
               if name.startswith(mine)):
            idle.append(gpu)
    return idle
