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

"""Scheduler weighers of nova_accel.

``AcceleratorHostReservationWeigher`` keeps accelerator hosts free for
accelerator workloads: for a request whose flavor has no
``accel:device_profile``, a host weighs less the more free accelerators it
has.  Requests with a device profile are left alone (their allocation
candidates already name the device; every host gets the same weight).

Enable it in nova.conf of the scheduler::

    [filter_scheduler]
    weight_classes = nova.scheduler.weights.all_weighers,
        nova_accel.scheduler.weighers.AcceleratorHostReservationWeigher
    [nova_accel]
    accelerator_host_reservation_weight_multiplier = 1.0

What counts as a free accelerator: a resource provider carrying the trait
``OWNER_CYBORG`` (accel_backend, like Cyborg, reports every device as such
a child of the compute node's provider) that can still give one unit of
one of its resource classes, by Placement's own capacity arithmetic
(``(total - reserved) * allocation_ratio - used``).  Devices accel_backend
holds back (disabled, unhealthy, being cleaned: ``reserved = total``) are
not free.

What a scheduling request costs: nothing in Placement.  The free
accelerator providers of the whole cloud are read by a thread of the
scheduler (``AcceleratorCapacityView``), every ``[nova_accel]
accelerator_weigher_refresh_interval`` seconds and soon after a request
with a device profile went through; a request looks its candidate hosts
up in the last view, a dictionary lookup per host, once per
``weigh_objects`` (each instance of a multi-create), a small fraction of
the request's own ``GET /allocation_candidates``: ``benchmarks/weigher.py``
times both with a real Placement (the contributor guide's "Design
measurements").

One read, through Nova's report client and its ``[placement]``
credentials (microversion 1.18):

1. ``GET /resource_providers?required=OWNER_CYBORG``: every accelerator
   provider with its root (the compute node);
2. ``GET /resource_providers/{uuid}/inventories`` only for providers not
   seen before (their resource classes are kept for the provider's life:
   accel_backend and Cyborg give a device provider one resource class);
3. ``GET /resource_providers?required=OWNER_CYBORG&resources={RC}:1`` once
   per accelerator resource class: the providers with a free unit.

The view is therefore up to one interval old: a plain server scheduled
right after a device was freed may not see it yet.  If Placement cannot be
read, the last view is used until it is ``[nova_accel]
accelerator_weigher_max_age`` seconds old; before the first read and
after that, every host weighs the same.  The weigher never fails a boot.
"""

import threading
import time
import weakref

from keystoneauth1 import exceptions as ks_exc
from nova.scheduler.client import report
from nova.scheduler import utils as scheduler_utils
from nova.scheduler import weights
import os_traits
from oslo_log import log as logging

import nova_accel.conf

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF

OWNER_TRAIT = os_traits.OWNER_CYBORG
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
    """Reads the free accelerator providers of the cloud, per compute node.

    :param client: Placement client with Nova's report client interface:
        ``get(url, version=..., global_request_id=...)`` returning a
        response with ``status_code`` and ``json()``.
    """

    def __init__(self, client):
        self.client = client
        # {rp_uuid: frozenset of resource class names}
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

    def _resource_classes(self, rp_uuid, global_request_id):
        known = self._classes.get(rp_uuid)
        if known is None:
            known = self._classes[rp_uuid] = frozenset(self._get(
                '/resource_providers/%s/inventories' % rp_uuid,
                global_request_id)['inventories'])
        return known

    def count(self, global_request_id=None):
        """Free accelerator providers per compute node, cloud-wide.

        Not thread-safe: one caller at a time (the view's thread).

        :param global_request_id: passed on to Placement (str or None).
        :returns: ``{root_uuid: number of free accelerator providers}``
            for every compute node with at least one accelerator provider
            (0 when none of them is free).
        :raises PlacementQueryFailed: Placement answered an error.
        :raises keystoneauth1.exceptions.ClientException: Placement could
            not be reached.
        """
        accel_rps = self._providers(
            '/resource_providers?required=%s' % OWNER_TRAIT,
            global_request_id)
        root_of = {rp['uuid']: rp['root_provider_uuid'] for rp in accel_rps}
        for gone in set(self._classes) - set(root_of):
            del self._classes[gone]
        counts = dict.fromkeys(root_of.values(), 0)
        classes = set()
        for rp_uuid in root_of:
            classes |= self._resource_classes(rp_uuid, global_request_id)
        free = set()
        for rc in sorted(classes):
            free.update(
                rp['uuid'] for rp in self._providers(
                    '/resource_providers?required=%s&resources=%s:1' % (
                        OWNER_TRAIT, rc), global_request_id))
        for rp_uuid in free & set(root_of):
            counts[root_of[rp_uuid]] += 1
        return counts


class AcceleratorCapacityView:
    """The last read of ``FreeAcceleratorCounter.count``, kept fresh by a
    daemon thread.

    :param counter: a ``FreeAcceleratorCounter``.
    :param interval: seconds between two reads (float).
    :param max_age: seconds after which a view that could not be refreshed
        is no longer answered (float).

    The thread starts at the first ``lookup`` and ends when the view is
    garbage collected (it holds only a weak reference) or ``stop`` is
    called.  A thread waiting on an ``Event`` rather than futurist or
    oslo.service: see ``accel_backend.periodic`` for the reason.
    """

    def __init__(self, counter, interval, max_age):
        self.counter = counter
        self.interval = interval
        self.max_age = max_age
        self.reads = 0           # successful reads so far
        self._counts = None      # {root_uuid: free providers}
        self._read_at = None     # time.monotonic() of the last good read
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()   # one count() at a time
        self._thread = None

    def refresh(self):
        """Read Placement now, in the caller's thread; keep the last view
        when the read fails.

        :returns: True when the view was replaced.
        """
        try:
            with self._read_lock:
                counts = self.counter.count()
        except (PlacementQueryFailed, ks_exc.ClientException) as e:
            LOG.warning('AcceleratorHostReservationWeigher: cannot read '
                        'accelerator providers from Placement (the last '
                        'view is kept up to %ss): %s', self.max_age, e)
            return False
        with self._lock:
            self._counts, self._read_at = counts, time.monotonic()
            self.reads += 1
        return True

    def soon(self):
        """Ask the thread for a read now (devices are being allocated)."""
        self._wake.set()

    def stop(self):
        """End the thread (it finishes a read in progress first)."""
        self._stop.set()
        self._wake.set()

    def lookup(self, root_uuids):
        """Free accelerator providers of these compute nodes, from the view.

        :param root_uuids: iterable of compute node provider UUIDs (str).
        :returns: ``{root_uuid: count}`` (0 for nodes without any), or
            None when there is no view yet or it is older than
            ``max_age`` seconds.
        """
        self.start()
        with self._lock:
            counts, read_at = self._counts, self._read_at
        if counts is None or time.monotonic() - read_at > self.max_age:
            return None
        return {u: counts.get(u, 0) for u in root_uuids}

    def start(self):
        """Start the reading thread (idempotent; ``lookup`` does)."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=_read_loop,
                        args=(weakref.ref(self), self._wake, self._stop),
                        name='accel-weigher-view', daemon=True)
                    self._thread.start()


def _read_loop(view_ref, wake, stop):
    """Body of the view's thread; holds the view only while reading.

    :param view_ref: a ``weakref.ref`` to the view.
    :param wake: the view's ``threading.Event`` that cuts a wait short.
    :param stop: the view's ``threading.Event`` that ends the loop.
    """
    while True:
        view = view_ref()
        if view is None or stop.is_set():
            return
        view.refresh()
        interval = view.interval
        del view
        wake.wait(interval)
        wake.clear()
        if stop.is_set():
            return


class AcceleratorHostReservationWeigher(weights.BaseHostWeigher):
    """Weigh hosts down by their free accelerators, for requests that do
    not ask for any.

    Raw weight of a host: minus the number of its free accelerator
    providers (so after Nova's normalisation the host with the most free
    accelerators gets 0 and hosts without any get 1, times the multiplier
    ``[nova_accel] accelerator_host_reservation_weight_multiplier``, which
    host aggregate metadata of the same name can override).  Every host
    weighs 0 for requests with an ``accel:device_profile``.

    :param client: Placement client (Nova's report client interface);
        None: Nova's ``report_client_singleton()``, as Nova instantiates
        weighers without arguments.
    """

    def __init__(self, client=None):
        super().__init__()
        self._client = client
        self._view = None

    @property
    def view(self):
        """The ``AcceleratorCapacityView`` of this weigher (made at first
        use, with ``[nova_accel]``'s interval and max age)."""
        if self._view is None:
            client = self._client or report.report_client_singleton()
            self._view = AcceleratorCapacityView(
                FreeAcceleratorCounter(client),
                CONF.nova_accel.accelerator_weigher_refresh_interval,
                CONF.nova_accel.accelerator_weigher_max_age)
        return self._view

    def weight_multiplier(self, host_state):
        """The host aggregate's
        ``accelerator_host_reservation_weight_multiplier`` metadata when
        set, else ``[filter_scheduler]``'s option of that name (float;
        Nova's ``scheduler.utils.get_weight_multiplier``, Nova 34)."""
        return scheduler_utils.get_weight_multiplier(
            host_state, MULTIPLIER,
            CONF.nova_accel.accelerator_host_reservation_weight_multiplier)

    def _weigh_object(self, host_state, weight_properties):
        # Only used through weigh_objects, which looks all hosts up at
        # once; a lone call is neutral.
        return 0.0

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Weigh the candidate hosts of one scheduling request from the
        view (no Placement call).

        :param weighed_obj_list: list of ``WeighedHost`` (``.obj`` is the
            ``HostState``; its ``uuid`` is the compute node's provider).
        :param weight_properties: the ``RequestSpec``.
        :returns: list of raw weights (float), in ``weighed_obj_list``'s
            order; all 0.0 for a request with a device profile, before the
            first read of Placement, or when the view is too old.
        """
        neutral = [0.0] * len(weighed_obj_list)
        if not weighed_obj_list:
            return neutral
        if wants_accelerators(weight_properties):
            # Its devices are allocated right after: read again soon.
            self.view.soon()
            return neutral
        hosts = [w.obj for w in weighed_obj_list]
        counts = self.view.lookup([h.uuid for h in hosts if h.uuid])
        if counts is None:
            LOG.debug('AcceleratorHostReservationWeigher: no recent view of '
                      'the free accelerators, weighing all hosts the same')
            return neutral
        LOG.debug('Free accelerator providers per host: %s',
                  {h.host: counts.get(h.uuid, 0) for h in hosts})
        return [-float(counts.get(h.uuid, 0)) for h in hosts]
