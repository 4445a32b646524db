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

"""What the reporter last saw of the compute node's tree in Placement.

``ProviderTreeView`` keeps, for ``placement.report.Reporter``: the
compute node resource provider of the host; per provider of ours, the
generation, inventories and traits Placement last showed
(``records.Cached``); and the providers of the tree that are not ours.
It only reads Placement: every write is the reporter's (custom resource
classes and traits: ``placement.custom_names``).  The compute node's
tree is read in one GET
(every provider with its generation); a provider whose generation is the
cached one is unchanged (any write to it, allocations included, bumps the
generation), so only changed providers are read again.

A provider is ours when it carries ``OWNER_TRAIT``, the owner trait of
the accelerator service (``OWNER_CYBORG``: os-traits,
``os_traits/owner/__init__.py``, 3.9.0); the reporter never writes
another's (nova-specs,
``specs/ussuri/approved/nova-cyborg-interaction.rst``, "Placement
update").

Not thread-safe by itself: the reporter calls it under its own lock.
"""

import os_traits
from oslo_log import log as logging

from accel_backend import exception
from accel_backend.placement import records

LOG = logging.getLogger(__name__)
OWNER_TRAIT = os_traits.OWNER_CYBORG


class ProviderTreeView:
    """The reporter's view of one compute node's tree.

    :param client: ``accel_backend.placement.client.PlacementClient``.
    :param rp_names: candidate names of the compute node RP (list of str,
        tried in order).

    ``entries`` maps the UUID (str) of each provider of ours seen to its
    ``records.Cached`` (``generation``, ``inventories``, ``traits``); the
    reporter reads and updates them after each write it makes.
    """

    def __init__(self, client, rp_names):
        self.client = client
        self.rp_names = rp_names
        self.entries = {}
        self._root = None
        # Providers in our tree that are not ours: uuid -> generation at
        # which their traits were read.
        self._foreign = {}

    def find_compute_rp(self):
        """Look the compute node RP up by name (one GET per name tried).

        :returns: ``(uuid, name)`` of the compute node RP (str, str).
        :raises ComputeNodeProviderNotFound: none of the names exist.
        :raises PlacementError: Placement failed.
        """
        for name in self.rp_names:
            rps = self.client.get('/resource_providers?name=%s' % name
                                  ).json()['resource_providers']
            if rps:
                return rps[0]['uuid'], rps[0]['name']
        raise exception.ComputeNodeProviderNotFound(names=self.rp_names)

    def clear(self):
        """Drop the compute node RP, the entries and the providers known
        not to be ours (the next ``tree`` looks everything up again)."""
        self._root = None
        self.entries.clear()
        self._foreign.clear()

    def tree(self):
        """Read the compute node's tree.

        One GET when the compute node RP is known and still there under
        its name; when it is gone or renamed (nova-compute re-created it)
        it is looked up again and the entries are dropped.

        :returns: ``(root_uuid, root_name, {uuid: provider dict})``, each
            provider dict as Placement's ``GET /resource_providers``
            shows it (``uuid``, ``name``, ``generation``, ...).
        :raises ComputeNodeProviderNotFound: not found, or gone again
            right after it was looked up.
        :raises PlacementError: Placement failed.
        """
        for _ in range(2):
            if self._root is None:
                self._root = self.find_compute_rp()
            root_uuid, root_name = self._root
            tree = {rp['uuid']: rp for rp in self.client.get(
                '/resource_providers?in_tree=%s' % root_uuid
            ).json()['resource_providers']}
            root = tree.get(root_uuid)
            if root is not None and root['name'] == root_name:
                return root_uuid, root_name, tree
            LOG.info('Compute node resource provider %s (%s) changed; '
                     'looking it up again', root_name, root_uuid)
            self._root = None
            self.entries.clear()
        raise exception.ComputeNodeProviderNotFound(names=self.rp_names)

    def refresh(self, rp_uuid):
        """Re-read inventories and traits of one provider into the cache
        (two GETs).

        :param rp_uuid: the provider's UUID (str).
        :returns: the ``records.Cached`` entry, or None when the provider
            does not exist (its entry is dropped).
        :raises PlacementError: Placement failed.
        """
        inv = self.client.get('/resource_providers/%s/inventories' %
                              rp_uuid, ok=(200, 404))
        traits = self.client.get('/resource_providers/%s/traits' % rp_uuid,
                                 ok=(200, 404))
        if inv.status_code == 404 or traits.status_code == 404:
            self.entries.pop(rp_uuid, None)
            return None
        inv, traits = inv.json(), traits.json()
        # Both carry the generation; a write between the two reads shows
        # as a mismatch, and the lower one makes the next write 409.
        gen = min(inv['resource_provider_generation'],
                  traits['resource_provider_generation'])
        entry = records.Cached(gen, inv['inventories'],
                               set(traits['traits']))
        self.entries[rp_uuid] = entry
        return entry

    def is_ours(self, rp_uuid, generation):
        """Whether a provider of the tree carries ``OWNER_TRAIT``.

        Answered from the cache when it saw the provider at
        ``generation``, else from one GET of its traits.

        :param rp_uuid: the provider's UUID (str).
        :param generation: its generation in the tree just read (int).
        :returns: bool.
        :raises PlacementError: Placement failed.
        """
        cached = self.entries.get(rp_uuid)
        if cached is not None and cached.generation == generation:
            return OWNER_TRAIT in cached.traits
        if self._foreign.get(rp_uuid) == generation:
            return False
        traits = self.client.get('/resource_providers/%s/traits' % rp_uuid
                                 ).json()['traits']
        if OWNER_TRAIT in traits:
            return True
        self._foreign[rp_uuid] = generation
        return False
