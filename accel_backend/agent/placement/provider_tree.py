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

``ProviderTreeView`` keeps, for ``agent.placement.report.Reporter``: the
compute node resource provider of the host; per provider of ours, the
generation, inventories and traits Placement last showed
(``provider_records.Cached``); and the providers of the tree that are not ours.
It only reads Placement: every write is the reporter's (custom resource
classes and traits: ``agent.placement.custom_names``).  The compute node's
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

The view survives a restart: ``save()`` checkpoints it in
``$state_path/placement-view.json`` (atomic rename) after each report,
and a new view loads it, so that a restarted agent whose devices did not
change reads its tree in one GET and writes nothing (every cached entry
is still checked against the generation Placement shows; the compute
node RP against its name).  A checkpoint that cannot be read, of another
format version or for other compute node names, is ignored with a
warning: the view then reads everything, as on a first start.

Not thread-safe by itself: the reporter calls it under its own lock.
"""

import json
import os

import os_traits
from oslo_log import log as logging

from accel_backend.agent.placement import retry
from accel_backend.common import provider_records
from accel_backend import exception

LOG = logging.getLogger(__name__)
OWNER_TRAIT = os_traits.OWNER_CYBORG
#: The view's checkpoint under ``[DEFAULT] state_path``, and its format.
CHECKPOINT = 'placement-view.json'
CHECKPOINT_VERSION = 1


class _ComputeNodeChanged(exception.ComputeNodeProviderNotFound):
    """The compute node RP was gone or renamed when its tree was read:
    ``tree`` looks it up again once."""


class ProviderTreeView:
    """The reporter's view of one compute node's tree.

    :param client: ``accel_backend.agent.placement.client.PlacementClient``.
    :param rp_names: candidate names of the compute node RP (list of str,
        tried in order).
    :param checkpoint: path of the view's checkpoint (str), loaded now
        and written by ``save()``; None keeps the view in memory only.

    ``entries`` maps the UUID (str) of each provider of ours seen to its
    ``provider_records.Cached`` (``generation``, ``inventories``, ``traits``);
    the
    reporter reads and updates them after each write it makes.
    """

    def __init__(self, client, rp_names, checkpoint=None):
        self.client = client
        self.rp_names = rp_names
        self.entries = {}
        self._root = None
        # Providers in our tree that are not ours: uuid -> generation at
        # which their traits were read.
        self._foreign = {}
        self.checkpoint = checkpoint
        self._saved = None
        self._save_failed = False
        if checkpoint:
            self._load()

    def _state(self):
        return {'version': CHECKPOINT_VERSION,
                'rp_names': list(self.rp_names),
                'root': list(self._root) if self._root else None,
                'entries': {u: {'generation': e.generation,
                                'inventories': e.inventories,
                                'traits': sorted(e.traits)}
                            for u, e in self.entries.items()},
                'foreign': dict(self._foreign)}

    def _load(self):
        """Take the checkpoint's view, when there is a usable one."""
        try:
            with open(self.checkpoint) as f:
                raw = json.load(f)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            LOG.warning('Ignoring the Placement view checkpoint %s (%s); '
                        'reading the whole tree again', self.checkpoint, e)
            return
        try:
            if raw['version'] != CHECKPOINT_VERSION or \
                    raw['rp_names'] != list(self.rp_names):
                LOG.info('The Placement view checkpoint %s is of another '
                         'version or compute node; reading the whole tree '
                         'again', self.checkpoint)
                return
            root = tuple(raw['root']) if raw['root'] else None
            entries = {str(u): provider_records.Cached(
                int(e['generation']), dict(e['inventories']),
                set(e['traits'])) for u, e in raw['entries'].items()}
            foreign = {str(u): int(g) for u, g in raw['foreign'].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            LOG.warning('Ignoring the malformed Placement view checkpoint '
                        '%s (%r); reading the whole tree again',
                        self.checkpoint, e)
            return
        if root is not None and len(root) != 2:
            return
        self._root, self.entries, self._foreign = root, entries, foreign
        self._saved = json.dumps(self._state(), sort_keys=True)

    def save(self):
        """Checkpoint the view (atomic rename), when it changed since it
        was last saved or loaded.  A checkpoint that cannot be written is
        logged (a warning, once) and costs only the reads a restart then
        makes."""
        if not self.checkpoint:
            return
        text = json.dumps(self._state(), sort_keys=True)
        if text == self._saved:
            return
        tmp = self.checkpoint + '.tmp'
        try:
            os.makedirs(os.path.dirname(self.checkpoint) or '.',
                        exist_ok=True)
            with open(tmp, 'w') as f:
                f.write(text)
            os.replace(tmp, self.checkpoint)
        except OSError as e:
            log = LOG.debug if self._save_failed else LOG.warning
            self._save_failed = True
            log('Cannot write the Placement view checkpoint %s: %s; a '
                'restart reads the whole tree again', self.checkpoint, e)
            return
        self._saved = text

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
        for attempt in retry.retrying(
                retry_on=lambda e: isinstance(e, _ComputeNodeChanged),
                attempts=2):
            with attempt:
                return self._read_tree()

    def _read_tree(self):
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
        raise _ComputeNodeChanged(names=self.rp_names)

    def refresh(self, rp_uuid):
        """Re-read inventories and traits of one provider into the cache
        (two GETs).

        :param rp_uuid: the provider's UUID (str).
        :returns: the ``provider_records.Cached`` entry, or None when the
        provider
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
        entry = provider_records.Cached(gen, inv['inventories'],
                                        set(traits['traits']))
        self.entries[rp_uuid] = entry
        return entry

    def is_ours(self, rp_uuid, generation):
        """Whether a provider of the tree carries ``OWNER_TRAIT``.

        Answered from the cache when it saw the provider at
        ``generation`` or later (a write of ours after the tree was read
        bumped it; generations only grow), else from one GET of its
        traits.

        :param rp_uuid: the provider's UUID (str).
        :param generation: its generation in the tree just read (int).
        :returns: bool.
        :raises PlacementError: Placement failed.
        """
        cached = self.entries.get(rp_uuid)
        if cached is not None and cached.generation >= generation:
            return OWNER_TRAIT in cached.traits
        if self._foreign.get(rp_uuid) == generation:
            return False
        traits = self.client.get('/resource_providers/%s/traits' % rp_uuid
                                 ).json()['traits']
        if OWNER_TRAIT in traits:
            return True
        self._foreign[rp_uuid] = generation
        return False
