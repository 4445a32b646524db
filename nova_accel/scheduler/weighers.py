"""Scheduler weighers of nova_accel.

``AcceleratorHostReservationWeigher`` keeps accelerator hosts free for
accelerator workloads: for a request whose flavor has no
``accel:device_profile``, a host weighs less the more free accelerators it
has.  Requests with a device profile are left alone (their allocation
candidates already name the device; every host gets the same weight).

Enable it in nova.conf of the scheduler::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,nova_accel.scheduler.weighers.AcceleratorHostReservationWeigher
    [nova_accel]
    accelerator_host_reservation_weight_multiplier = 1.0

What counts as a free accelerator: a resource provider carrying the trait
``OWNER_CYBORG`` (accel_backend, like Cyborg, reports every device as such
a child of the compute node's provider) that can still give one unit of
one of its resource classes, by Placement's own capacity arithmetic
(``(total - reserved) * allocation_ratio - used``).  Devices accel_backend
holds back (disabled, unhealthy, being cleaned: ``reserved = total``) are
not free.

Placement calls, once per ``weigh_objects`` (each instance a scheduling
request places), through Nova's report client and its ``[placement]``
credentials:

1. ``GET /resource_providers?required=OWNER_CYBORG`` (microversion 1.18):
   every accelerator provider with its root (the compute node) and its
   generation;
2. ``GET /resource_providers/{uuid}/inventories`` only for providers not
   seen before at their current generation (inventory changes bump the
   generation; the resource classes are cached per ``(uuid, generation)``);
3. ``GET /resource_providers?required=OWNER_CYBORG&resources={RC}:1`` once
   per accelerator resource class: the providers with a free unit.

So a scheduling decision costs ``1 + number of accelerator resource
classes`` calls, whatever the number of hosts and devices, once the
inventories are known.  If Placement cannot be asked, the weigher logs a
warning and stays neutral: it never fails a boot.
"""

import threading

from keystoneauth1 import exceptions as ks_exc
import nova.conf
from nova.scheduler.client import report
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights
from oslo_log import log as logging

from nova_accel import conf as accel_conf

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF
accel_conf.register_opts(CONF)

OWNER_TRAIT = 'OWNER_CYBORG'
DEVICE_PROFILE_KEY = 'accel:device_profile'
MULTIPLIER = 'accelerator_host_reservation_weight_multiplier'
PLACEMENT_VERSION = '1.18'


class PlacementQueryFailed(Exception):
    """Placement answered something else than 200."""


def wants_accelerators(spec_obj):
    """Whether the request asks for accelerators (a device profile).

    :param spec_obj: ``nova.objects.RequestSpec``.
    """
    flavor = getattr(spec_obj, 'flavor', None)
    extra_specs = getattr(flavor, 'extra_specs', None) or {}
    return bool(extra_specs.get(DEVICE_PROFILE_KEY))


class FreeAcceleratorCounter:
    """Counts the free accelerator providers under each compute node.

    :param client: Placement client with Nova's report client interface:
        ``get(url, version=..., global_request_id=...)`` returning a
        response with ``status_code`` and ``json()``.
    """

    def __init__(self, client):
        self.client = client
        self._lock = threading.Lock()
        # {(rp_uuid, generation): frozenset of resource class names}
        self._classes = {}

    def _get(self, url, global_request_id):
        resp = self.client.get(url, version=PLACEMENT_VERSION,
                               global_request_id=global_request_id)
        if resp is None or resp.status_code != 200:
            raise PlacementQueryFailed('GET %s: %s %s' % (
                url, getattr(resp, 'status_code', None),
                getattr(resp, 'text', '')))
        return resp.json()

    def _providers(self, url, global_request_id):
        return self._get(url, global_request_id)['resource_providers']

    def _resource_classes(self, rp, global_request_id):
        key = (rp['uuid'], rp['generation'])
        with self._lock:
            known = self._classes.get(key)
        if known is not None:
            return known
        inventories = self._get(
            '/resource_providers/%s/inventories' % rp['uuid'],
            global_request_id)['inventories']
        classes = frozenset(inventories)
        with self._lock:
            # Older generations of this provider are obsolete.
            for old in [k for k in self._classes if k[0] == rp['uuid']]:
                del self._classes[old]
            self._classes[key] = classes
        return classes

    def count(self, root_uuids, global_request_id=None):
        """Free accelerator providers per compute node.

        :param root_uuids: iterable of compute node (root provider) UUIDs
            (str) to count for; providers in other trees are not looked at.
        :param global_request_id: passed on to Placement (str or None).
        :returns: ``{root_uuid: number of free accelerator providers}`` for
            every UUID in ``root_uuids`` (0 when it has none).
        :raises PlacementQueryFailed: Placement answered an error.
        :raises keystoneauth1.exceptions.ClientException: Placement could
            not be reached.
        """
        roots = set(root_uuids)
        counts = dict.fromkeys(roots, 0)
        accel_rps = [
            rp for rp in self._providers(
                '/resource_providers?required=%s' % OWNER_TRAIT,
                global_request_id)
            if rp.get('root_provider_uuid') in roots]
        if not accel_rps:
            return counts
        root_of = {rp['uuid']: rp['root_provider_uuid'] for rp in accel_rps}
        classes = set()
        for rp in accel_rps:
            classes |= self._resource_classes(rp, global_request_id)
        free = set()
        for rc in sorted(classes):
            free.update(
                rp['uuid'] for rp in self._providers(
                    '/resource_providers?required=%s&resources=%s:1' % (
                        OWNER_TRAIT, rc), global_request_id))
        for rp_uuid in free & set(root_of):
            counts[root_of[rp_uuid]] += 1
        return counts


class AcceleratorHostReservationWeigher(weights.BaseHostWeigher):
    """Weigh hosts down by their free accelerators, for requests that do
    not ask for any.

    Raw weight of a host: minus the number of its free accelerator
    providers (so after Nova's normalisation the host with the most free
    accelerators gets 0 and hosts without any get 1, times the multiplier
    ``[nova_accel] accelerator_host_reservation_weight_multiplier``, which
    host aggregate metadata of the same name can override).  Every host
    weighs 0 for requests with an ``accel:device_profile``.
    """

    def __init__(self, client=None):
        super().__init__()
        self._client = client
        self._counter = None

    @property
    def counter(self):
        if self._counter is None:
            client = self._client or report.report_client_singleton()
            self._counter = FreeAcceleratorCounter(client)
        return self._counter

    def weight_multiplier(self, host_state):
        return scheduler_utils.get_weight_multiplier(
            host_state, MULTIPLIER,
            CONF.nova_accel.accelerator_host_reservation_weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        # Only used through weigh_objects, which fetches once for all
        # hosts; a lone call is neutral.
        return 0.0

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """One Placement round for all hosts of this scheduling request.

        :param weighed_obj_list: list of ``WeighedHost`` (``.obj`` is the
            ``HostState``; its ``uuid`` is the compute node's provider).
        :param weight_properties: the ``RequestSpec``.
        :returns: list of raw weights (float), in ``weighed_obj_list``'s
            order.
        """
        neutral = [0.0] * len(weighed_obj_list)
        if not weighed_obj_list or wants_accelerators(weight_properties):
            return neutral
        hosts = [w.obj for w in weighed_obj_list]
        context = getattr(weight_properties, '_context', None)
        request_id = getattr(context, 'global_id', None)
        try:
            counts = self.counter.count(
                [h.uuid for h in hosts if h.uuid], request_id)
        except (PlacementQueryFailed, ks_exc.ClientException) as e:
            LOG.warning('AcceleratorHostReservationWeigher: cannot read '
                        'accelerator providers from Placement, weighing '
                        'all hosts the same: %s', e)
            return neutral
        LOG.debug('Free accelerator providers per host: %s',
                  {h.host: counts.get(h.uuid, 0) for h in hosts})
        return [-float(counts.get(h.uuid, 0)) for h in hosts]
