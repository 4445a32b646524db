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

"""Report deployables to Placement as children of the compute node RP.

Contract (nova-cyborg-interaction spec, "Placement update"): create or
delete child RPs under the compute node RP, custom resource classes and
traits, keep inventories and traits of our own RPs in sync, and never
modify providers created by anyone else (ours carry ``OWNER_CYBORG`` and
the UUIDs accel_backend derived).  Writes are generation-safe: a 409 means
someone else changed the provider, so it is re-read and the write retried
(``agent.placement.retry``).

Reads are kept to a minimum: the reporter caches per provider of ours
what Placement last showed (``agent.placement.provider_tree``, checkpointed
across restarts), and a run reads the compute node's tree (one GET).  An
unchanged generation is an unchanged provider, so a no-change resync, a
restart's included, costs one GET; a changed provider is re-read.
"""

import threading

from oslo_log import log as logging

from accel_backend.agent.placement import client as pclient
from accel_backend.agent.placement import custom_names
from accel_backend.agent.placement import provider_tree
from accel_backend.agent.placement import reserved as reserved_mod
from accel_backend.agent.placement import retry
from accel_backend.agent.placement import traits as traits_mod
from accel_backend.common import provider_records
from accel_backend.common import removal
from accel_backend import exception

LOG = logging.getLogger(__name__)


class Reporter:
    """Keeps Placement in step with the deployables of one host.

    Thread-safe: the periodic report, the cleaner and API actions share
    one reporter (and its view).

    :param client: ``PlacementClient``.
    :param rp_names: candidate names of the compute node RP (list of str).
    :param reserved_for, reserved_for_many, traits_for: optional, what
        the database wants now (``reserved.ReservedUnits``,
        ``traits.ProviderTraits``).
    :param max_removal_share: largest share (0.0 to 1.0) of our providers
        one report may delete (``common.removal``).
    :param checkpoint: path of the view's checkpoint
        (``provider_tree.ProviderTreeView``), saved after each report;
        None: in memory only.

    ``view``: the ``provider_tree.ProviderTreeView`` of what Placement
    last showed (it holds ``client``); ``custom``: the ``CustomNames``
    that exist; ``reserved`` and ``traits`` write at once.
    """

    def __init__(self, client, rp_names, reserved_for=None,
                 max_removal_share=1.0, checkpoint=None,
                 reserved_for_many=None, traits_for=None):
        self.max_removal_share = max_removal_share
        self.rp_names = rp_names
        self.view = provider_tree.ProviderTreeView(client, rp_names,
                                                   checkpoint=checkpoint)
        self.custom = custom_names.CustomNames()
        self._lock = threading.RLock()
        self.reserved = reserved_mod.ReservedUnits(
            self._lock, self.view.refresh, self.put_inventories,
            reserved_for=reserved_for, reserved_for_many=reserved_for_many)
        self.traits = traits_mod.ProviderTraits(
            self._lock, self.view.refresh, self.put_traits, traits_for)
        # Providers of removed devices whose DELETE got a 409, and those
        # whose inventory of some classes could not be removed
        # (placement.inventory.inuse: uuid -> those classes): kept and
        # reserved until their usages are zero.
        self._undeletable, self._in_use = {}, {}

    @property
    def client(self):
        """The ``PlacementClient``: the view's, so that reads and writes
        go through one client (replace ``view.client`` to change it)."""
        return self.view.client

    def forget(self):
        """Drop every cached view (the next report re-reads all)."""
        with self._lock:
            self.view.clear()
            self._undeletable.clear()
            self._in_use.clear()

    def report(self, providers, force=False, replaced=frozenset()):
        """Create/update our child RPs; delete ours that are gone.

        :param providers: list of ``ProviderRecord`` (one per deployable
            of this host).
        :param force: delete every provider of ours that is gone, even
            more than ``max_removal_share`` of them (operator's
            ``--force``).
        :param replaced: UUIDs of providers whose functions a pool of
            ``providers`` offers now
            (``conductor.pool_migration.replaced_providers``): deleted when
            gone, but no removal for ``max_removal_share``.
        :returns: ``(compute_rp_uuid, compute_rp_name)``.
        :raises MassRemovalRefused: more than ``max_removal_share`` of our
            providers would be deleted: none is (the others are still
            created and updated first).
        """
        with self._lock:
            root_uuid, root_name, tree = self.view.tree()
            wanted = set()
            contended = []
            for prov in providers:
                wanted.add(prov.rp_uuid)
                rp = tree.get(prov.rp_uuid)
                if rp is None:
                    self.view.entries.pop(prov.rp_uuid, None)
                    if not self._create_rp(prov, root_uuid, root_name):
                        continue
                else:
                    cached = self.view.entries.get(prov.rp_uuid)
                    if cached is None or \
                            cached.generation != rp['generation']:
                        self.view.refresh(prov.rp_uuid)
                try:
                    self._sync_inventory(prov)
                    self.put_traits(prov.rp_uuid,
                                    set(prov.traits) |
                                    {provider_tree.OWNER_TRAIT})
                except exception.PlacementError as e:
                    if e.kwargs.get('status') != 409:
                        raise
                    # Someone keeps writing this provider: report the
                    # others (one busy provider must not hold them all
                    # back) and fail the run at the end, so it is retried.
                    LOG.warning('Resource provider %s kept changing '
                                'under us; retried on the next report',
                                prov.rp_uuid)
                    contended.append(e)
            ours = {rp_uuid: rp for rp_uuid, rp in tree.items()
                    if rp_uuid != root_uuid and
                    rp['name'].startswith(root_name + '_') and
                    self.view.is_ours(rp_uuid, rp['generation'])}
            gone = {u: rp for u, rp in ours.items() if u not in wanted}
            removal.check(root_name, 'resource providers', len(ours),
                          [rp['name'] for u, rp in gone.items()
                           if u not in replaced],
                          self.max_removal_share, force)
            for rp_uuid, rp in gone.items():
                self._delete_rp(rp_uuid, rp['generation'])
            entries = self.view.entries
            for gone in set(entries) - set(tree) - wanted:
                del entries[gone]
            self.view.save()
            if contended:
                raise contended[0]
            return root_uuid, root_name

    def ensure_provider(self, prov):
        """Create one provider of ours with its traits, when missing, and
        its resource class; leave its inventory alone
        (``agent.placement.reshape`` writes it).

        :param prov: ``ProviderRecord``.
        :returns: True when it exists now, False when another provider
            holds its name.
        :raises PlacementError: Placement failed.
        """
        with self._lock:
            root_uuid, root_name, tree = self.view.tree()
            if prov.rp_uuid not in tree and not self._create_rp(
                    prov, root_uuid, root_name):
                return False
            self.custom.ensure_rc(self.client, prov.resource_class)
            self.put_traits(prov.rp_uuid, set(prov.traits) |
                            {provider_tree.OWNER_TRAIT})
            return True

    def _create_rp(self, dep, root_uuid, root_name):
        """:returns: True when the provider exists now, False when
        another provider holds its name (logged; the device is skipped
        so that the others are still reported)."""
        name = provider_records.provider_name(root_name, dep.address,
                                              dep.subname)
        LOG.info('Creating resource provider %s (%s) under %s', name,
                 dep.rp_uuid, root_uuid)
        resp = self.client.post(
            '/resource_providers',
            {'uuid': dep.rp_uuid, 'name': name,
             'parent_provider_uuid': root_uuid}, ok=(200, 409))
        if resp.status_code == 200:
            self.view.entries[dep.rp_uuid] = provider_records.Cached(
                resp.json()['generation'], {}, set())
            return True
        # Created by an earlier run of ours that crashed before it could
        # write inventory (then the lookup finds it), or the name is
        # taken by a provider that is not ours.
        if self.view.refresh(dep.rp_uuid) is None:
            LOG.error('Cannot create resource provider %s for device '
                      '%s: another provider already has that name; '
                      'the device is not reported', name, dep.address)
            return False
        return True

    def _put(self, rp_uuid, what, make_body, done, in_use=None):
        """Generation-safe PUT of ``/resource_providers/<rp>/<what>``.

        :param make_body: ``(cached) -> body`` without the generation, or
            None when the cache already shows what is wanted.
        :param done: ``(cached, response json)`` updating the cache.
        :param in_use: for inventories, ``(cached) -> body`` to send
            instead once Placement answered ``placement.inventory.inuse``
            (the body removed a resource class that has allocations):
            never retried as if it were a generation conflict.
        :returns: True when Placement shows the wanted state (or, after
            ``inventory.inuse``, the ``in_use`` body), False when the
            provider does not exist.
        :raises PlacementError: failure, or conflicts ``retry.RETRIES`` times.
        """
        url = '/resource_providers/%s/%s' % (rp_uuid, what)
        # ``stale``: the last try conflicted on the generation, so the
        # next one reads the provider again; after ``inventory.inuse``
        # it writes the ``in_use`` body from the same read.
        state = {'cached': (self.view.entries.get(rp_uuid) or
                            self.view.refresh(rp_uuid)),
                 'make_body': make_body, 'in_use': in_use, 'stale': False}

        def reread():
            if state['stale']:
                state['cached'] = self.view.refresh(rp_uuid)

        def attempt():
            cached, state['stale'] = state['cached'], False
            if cached is None:
                return False
            body = state['make_body'](cached)
            if body is None:
                return True
            body['resource_provider_generation'] = cached.generation
            resp = self.client.put(url, body, ok=(200, 404, 409))
            if resp.status_code == 200:
                done(cached, resp.json())
                return True
            if resp.status_code == 404:
                self.view.entries.pop(rp_uuid, None)
                return False
            if state['in_use'] is not None and pclient.error_code(resp) == \
                    pclient.INVENTORY_INUSE:
                state['make_body'], state['in_use'] = state['in_use'], None
            else:
                state['stale'] = True
            raise exception.PlacementError(method='PUT', url=url,
                                           status=409,
                                           body='generation conflicts')

        for try_ in retry.retrying(reread=reread):
            with try_:
                return attempt()

    def put_inventories(self, rp_uuid, make_body):
        """Generation-safe PUT of a provider's inventories, the cache
        updated (``reserved.ReservedUnits`` writes through it); the
        caller holds the reporter's lock.

        :param rp_uuid: the provider's UUID (str).
        :param make_body: ``(provider_records.Cached) -> {'inventories': ...}``
            without the generation, or None when the cache already shows
            what is wanted.
        :returns: True when Placement shows it, False when the provider
            does not exist.
        :raises PlacementError: failure, or conflicts ``retry.RETRIES`` times.
        """
        return self._put(rp_uuid, 'inventories', make_body,
                         self._took_inventories)

    @staticmethod
    def _took_inventories(cached, data):
        cached.generation = data['resource_provider_generation']
        cached.inventories = data['inventories']

    def _sync_inventory(self, dep):
        total = dep.total
        # Placement refuses a total of 0 (e.g. an mdev type with no
        # instance left): such a provider has no inventory.
        want = {dep.resource_class: provider_records.inventory(
            total, dep.reserved)} if total > 0 else {}

        def writing(cached, body):  # a class it shows exists already
            if set(body['inventories']) - set(cached.inventories):
                self.custom.ensure_rc(self.client, dep.resource_class)
            return body

        def kept(cached):
            # ``want`` plus, reserved in full, the classes that still have
            # allocations but are no longer wanted.
            merged = dict(want, **{
                rc: dict(inv, reserved=inv['total'])
                for rc, inv in cached.inventories.items()
                if rc not in want and rc in self._in_use[dep.rp_uuid]})
            return None if merged == cached.inventories else writing(
                cached, {'inventories': merged})

        def body(cached):
            if dep.rp_uuid in self._in_use:
                if self._still_allocated(dep.rp_uuid):
                    return kept(cached)
                del self._in_use[dep.rp_uuid]
            have = {rc: {k: inv.get(k) for k in want.get(rc, inv)}
                    for rc, inv in cached.inventories.items()}
            if have == want:
                return None
            # ``dep.reserved`` was read before this report took the lock;
            # a release or a cleaning may have changed it since and
            # written Placement: a write reads it again, so that a stale
            # value never lands last.
            reserved_for = self.reserved.reserved_for
            units = (reserved_for(dep.rp_uuid)
                     if reserved_for is not None and want else None)
            if units is not None:
                want[dep.resource_class] = provider_records.inventory(
                    total, units)
                if have == want:
                    return None
            return writing(cached, {'inventories': want})

        def keep_allocated(cached):
            # A class that has allocations cannot be removed (the device
            # lost capacity: e.g. the kernel lowered an mdev type's
            # available_instances to 0): keep its inventory, reserve all
            # of it so nothing new lands, and try again once they are
            # freed (never in a loop: a 409 of this kind is no conflict).
            gone = sorted(set(cached.inventories) - set(want))
            LOG.warning('Resource provider %s (device %s) still has '
                        'allocations of %s, which it can no longer hold; '
                        'that inventory is kept and reserved until they '
                        'are freed', dep.rp_uuid, dep.address,
                        ', '.join(gone))
            self._in_use[dep.rp_uuid] = set(gone)
            return kept(cached)
        self._put(dep.rp_uuid, 'inventories', body, self._took_inventories,
                  in_use=keep_allocated)

    def _usages(self, rp_uuid):
        """A provider's usages (dict, ``{}`` once it is gone): freeing
        allocations does not bump its generation, so they are asked."""
        resp = self.client.get('/resource_providers/%s/usages' % rp_uuid,
                               ok=(200, 404))
        return resp.json()['usages'] if resp.status_code == 200 else {}

    def _still_allocated(self, rp_uuid):
        """True while a provider still has allocations of the classes
        kept in ``_in_use``."""
        usages = self._usages(rp_uuid)
        return any(usages.get(rc) for rc in self._in_use[rp_uuid])

    def put_traits(self, rp_uuid, traits):
        """Make one of our providers show ``traits`` (set of str, owner
        trait included), as ``put_inventories`` writes (same answers and
        errors); the caller holds the lock."""
        def body(cached):
            if cached.traits == traits:
                return None
            # Traits a provider shows exist; the others may not yet.
            self.custom.ensure_traits(self.client, traits - cached.traits)
            return {'traits': sorted(traits)}

        def done(cached, data):
            cached.generation = data['resource_provider_generation']
            cached.traits = set(data['traits'])
        return self._put(rp_uuid, 'traits', body, done)

    def _delete_rp(self, rp_uuid, generation):
        # Its usages, not a 409 each run, say when it may go.
        if rp_uuid in self._undeletable and any(
                self._usages(rp_uuid).values()):
            return
        resp = self.client.delete('/resource_providers/%s' % rp_uuid,
                                  ok=(204, 404, 409))
        if resp.status_code != 409:
            self.view.entries.pop(rp_uuid, None)
            self._undeletable.pop(rp_uuid, None)
            return
        if rp_uuid not in self._undeletable:
            LOG.warning('Resource provider %s of a removed device still '
                        'has allocations; it is reserved and stays until '
                        'they are freed', rp_uuid)
        # Nothing new may land on it meanwhile.
        with self._lock:   # no reserved_for: the device is gone
            self.reserved.write(rp_uuid, True)
        self._undeletable[rp_uuid] = generation
