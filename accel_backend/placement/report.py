"""Report deployables to Placement as children of the compute node RP.

Contract (nova-cyborg-interaction spec, "Placement update"): create or
delete child RPs under the compute node RP, custom resource classes and
traits, keep inventories and traits of our own RPs in sync, and never
modify providers created by anyone else (ours carry ``OWNER_CYBORG`` and
the UUIDs accel_backend derived).  Writes are generation-safe: a 409 means
someone else changed the provider, so it is re-read and the write retried.
"""

import collections
import socket

import os_resource_classes as orc
import os_traits
from oslo_log import log as logging

from accel_backend import exception
from accel_backend.objects import device as device_obj

LOG = logging.getLogger(__name__)
OWNER_TRAIT = 'OWNER_CYBORG'
RETRIES = 4

ProviderRecord = collections.namedtuple(
    'ProviderRecord',
    ['rp_uuid', 'address', 'resource_class', 'total', 'traits', 'reserved'])
ProviderRecord.__doc__ = """What Placement must show for one deployable.

``address`` is the device's PCI address (names the RP), ``total`` the
number of accelerators (int), ``traits`` an iterable of names, ``reserved``
True when the device must not be scheduled (disabled or missing)."""


def compute_rp_names(conf):
    """Names to try for the compute node RP, most specific first."""
    if conf.discovery.resource_provider_name:
        return [conf.discovery.resource_provider_name]
    host = conf.host
    names = [host, host.split('.')[0]]
    try:
        names.append(socket.getfqdn(host))
    except OSError:
        pass
    seen = []
    for n in names:
        if n and n not in seen:
            seen.append(n)
    return seen


class Reporter:
    """Keeps Placement in step with the deployables of one host.

    :param client: ``PlacementClient``.
    :param rp_names: candidate names of the compute node RP (list of str).
    """

    def __init__(self, client, rp_names):
        self.client = client
        self.rp_names = rp_names
        self._known_rcs = set(orc.STANDARDS)
        self._known_traits = set(os_traits.get_traits())

    def find_compute_rp(self):
        """:returns: ``(uuid, name)`` of the compute node RP.

        :raises ComputeNodeProviderNotFound: none of the names exist.
        """
        for name in self.rp_names:
            rps = self.client.get('/resource_providers?name=%s' % name
                                  ).json()['resource_providers']
            if rps:
                return rps[0]['uuid'], rps[0]['name']
        raise exception.ComputeNodeProviderNotFound(names=self.rp_names)

    def report(self, providers):
        """Create/update our child RPs; delete ours that are gone.

        :param providers: list of ``ProviderRecord`` (one per deployable
            of this host).
        :returns: ``(compute_rp_uuid, compute_rp_name)``.
        """
        root_uuid, root_name = self.find_compute_rp()
        tree = {rp['uuid']: rp for rp in self.client.get(
            '/resource_providers?in_tree=%s' % root_uuid
        ).json()['resource_providers']}
        wanted = set()
        for prov in providers:
            wanted.add(prov.rp_uuid)
            if prov.rp_uuid not in tree and not self._create_rp(
                    prov, root_uuid, root_name):
                continue
            self._sync_inventory(prov)
            self._sync_traits(prov.rp_uuid,
                              set(prov.traits) | {OWNER_TRAIT})
        for rp_uuid, rp in tree.items():
            if rp_uuid == root_uuid or rp_uuid in wanted:
                continue
            if rp['name'].startswith(root_name + '_') and self._is_ours(
                    rp_uuid):
                self._delete_rp(rp_uuid)
        return root_uuid, root_name

    def _is_ours(self, rp_uuid):
        traits = self.client.get('/resource_providers/%s/traits' % rp_uuid
                                 ).json()['traits']
        return OWNER_TRAIT in traits

    def _create_rp(self, dep, root_uuid, root_name):
        """:returns: True when the provider exists now, False when
        another provider holds its name (logged; the device is skipped
        so that the others are still reported)."""
        name = device_obj.provider_name(root_name, dep.address)
        LOG.info('Creating resource provider %s (%s) under %s', name,
                 dep.rp_uuid, root_uuid)
        resp = self.client.post(
            '/resource_providers',
            {'uuid': dep.rp_uuid, 'name': name,
             'parent_provider_uuid': root_uuid}, ok=(200, 409))
        if resp.status_code == 409:
            # Created by an earlier run of ours that crashed before it
            # could write inventory (then the lookup finds it), or the
            # name is taken by a provider that is not ours.
            found = self.client.get('/resource_providers/%s' % dep.rp_uuid,
                                    ok=(200, 404))
            if found.status_code == 404:
                LOG.error('Cannot create resource provider %s for device '
                          '%s: another provider already has that name; '
                          'the device is not reported', name, dep.address)
                return False
        return True

    def _ensure_rc(self, rc):
        if rc not in self._known_rcs:
            self.client.put('/resource_classes/%s' % rc)
            self._known_rcs.add(rc)

    def _ensure_traits(self, traits):
        for trait in sorted(set(traits) - self._known_traits):
            self.client.put('/traits/%s' % trait)
            self._known_traits.add(trait)

    def _sync_inventory(self, dep):
        self._ensure_rc(dep.resource_class)
        total = dep.total
        want = {dep.resource_class: {
            'total': total, 'reserved': total if dep.reserved else 0,
            'min_unit': 1, 'max_unit': total, 'step_size': 1,
            'allocation_ratio': 1.0}}
        url = '/resource_providers/%s/inventories' % dep.rp_uuid
        for _ in range(RETRIES):
            cur = self.client.get(url).json()
            have = {rc: {k: inv[k] for k in want.get(rc, inv)}
                    for rc, inv in cur['inventories'].items()}
            if have == want:
                return
            resp = self.client.put(
                url, {'resource_provider_generation':
                      cur['resource_provider_generation'],
                      'inventories': want}, ok=(200, 409))
            if resp.status_code == 200:
                return
        raise exception.PlacementError(method='PUT', url=url, status=409,
                                       body='generation conflicts')

    def set_reserved(self, rp_uuid, reserved):
        """Reserve (``reserved=True``: reserved = total) or free
        (reserved = 0) the whole inventory of one of our providers, as
        disabling/enabling a device does; other inventory fields are
        kept.  Generation-safe: a 409 re-reads and retries.

        :param rp_uuid: the deployable's resource provider UUID.
        :param reserved: bool.
        :returns: True when Placement shows the wanted value now, False
            when the provider does not exist (yet): the next report
            creates it with the right ``reserved``.
        :raises PlacementError: Placement failed or kept conflicting.
        """
        url = '/resource_providers/%s/inventories' % rp_uuid
        for _ in range(RETRIES):
            resp = self.client.get(url, ok=(200, 404))
            if resp.status_code == 404:
                LOG.warning('Resource provider %s is not in Placement; '
                            'its reserved value is set when it is next '
                            'reported', rp_uuid)
                return False
            cur = resp.json()
            want = {}
            for rc, inv in cur['inventories'].items():
                inv = dict(inv)
                inv['reserved'] = inv['total'] if reserved else 0
                want[rc] = inv
            if want == cur['inventories']:
                return True
            resp = self.client.put(
                url, {'resource_provider_generation':
                      cur['resource_provider_generation'],
                      'inventories': want}, ok=(200, 409))
            if resp.status_code == 200:
                return True
        raise exception.PlacementError(method='PUT', url=url, status=409,
                                       body='generation conflicts')

    def _sync_traits(self, rp_uuid, traits):
        self._ensure_traits(traits)
        url = '/resource_providers/%s/traits' % rp_uuid
        for _ in range(RETRIES):
            cur = self.client.get(url).json()
            if set(cur['traits']) == traits:
                return
            resp = self.client.put(
                url, {'resource_provider_generation':
                      cur['resource_provider_generation'],
                      'traits': sorted(traits)}, ok=(200, 409))
            if resp.status_code == 200:
                return
        raise exception.PlacementError(method='PUT', url=url, status=409,
                                       body='generation conflicts')

    def _delete_rp(self, rp_uuid):
        resp = self.client.delete('/resource_providers/%s' % rp_uuid,
                                  ok=(204, 404, 409))
        if resp.status_code == 409:
            LOG.warning('Resource provider %s of a removed device still '
                        'has allocations; it stays until they are freed',
                        rp_uuid)
