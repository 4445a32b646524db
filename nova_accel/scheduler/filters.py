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

"""Scheduler filters of nova_accel: ``AcceleratorNumaFitFilter``.

Why there is a filter for NUMA and none for health
---------------------------------------------------

accel_backend pools the identical GPUs of a host into one resource
provider spanning its NUMA nodes (``[discovery] pool_numa_span``, on by
default): a two-socket server of 4 + 4 GPUs is one provider of 8, with
every node's trait ``CUSTOM_NUMA_NODE_<N>``, so ``resources:PGPU=8`` is
one request group.  Placement counts the pool's units, not where they
are: a group requiring ``trait:CUSTOM_NUMA_NODE_0`` (or asking
``accel:numa_local: "true"``) can be offered a pool whose node 0 (or
every node) is short, and the bind then fails (``numa_unfit``) and Nova
34 aborts the build (``ComputeManager._build_resources`` raises
``BuildAbortException``: no reschedule).  ``AcceleratorNumaFitFilter``
reads the free units of each node of those pools from accel_backend
(``GET /v2/deployables/free_by_numa_node``, microversion 2.4) and drops
the allocation candidates, and the hosts left without one, whose pool
cannot give such a group its count on the wanted node; Nova then picks
another host, or answers "No valid host" when none has room.

Health needs no filter, as Placement already expresses it: accel_backend
reports every device it holds back (disabled, unhealthy, being cleaned,
gone) with ``reserved = total``, so Placement never offers it; a host
whose every matching device is held back has no candidate and is never
seen by a filter, and one with a healthy and an unhealthy device gets
candidates for the healthy one only (dropping the host would lose it).
The window between a report and a bind is closed at bind time:
accel_backend never binds a held-back device (``BindFailed``) and Nova
reschedules.  A health filter could never reject a host Placement
offered, so there is none.

What a request costs
--------------------

Nothing, unless a group of the flavor's device profile wants NUMA
locality:

* a required ``CUSTOM_NUMA_NODE_<N>`` trait is in the request spec
  (``RequestSpec.requested_resources``: the ``RequestGroup`` of profile
  group N has ``requester_id = device_profile_<N>``, Nova 34
  ``nova/accelerator/cyborg.py``), no call needed to see it;
* ``accel:numa_local`` is not (Nova passes ``accel:`` keys by), so the
  profile (``GET /v2/device_profiles?name=``) is read once per
  ``PROFILE_TTL`` seconds per profile name and kept in the scheduler
  (profiles are created and deleted, never changed).

A request with locality then makes ONE call for all its candidate hosts
(``filter_all``, once per instance of a multi-create).  Both calls use
Nova's ``[service_user]`` credentials (its service user, ``service``
role: install guide, "Roles") over the ``[cyborg]`` adapter options,
as ``nova_accel.cyborg_client`` talks to the service.

If accel_backend cannot be read (down, an older one without 2.4, a
refusal), every host passes, as without the filter; the binder still
fails a group that does not fit (``numa_unfit``), so the boot may be
aborted, as before.  A warning says so.  Pools on one node and other
providers are not in the answer and always pass: Placement's count is
already per node for them.  Groups of a port's device profile
(``requester_id`` with the port's UUID) are left to the binder.

Enable it in nova.conf of the scheduler, after Nova's defaults
(``all_filters`` here is Nova's ``all_filters`` and this filter)::

    [filter_scheduler]
    enabled_filters = ...,AcceleratorNumaFitFilter
    available_filters = nova_accel.scheduler.filters.all_filters
"""

import collections
import re
import threading
import time

from keystoneauth1 import loading as ks_loading
from nova.scheduler import filters
from nova.scheduler import utils as scheduler_utils
from oslo_log import log as logging

from nova_accel.cyborg_client import client as accel_client
from nova_accel.cyborg_client import exception as accel_exc
from nova_accel.cyborg_client import transport

LOG = logging.getLogger(__name__)

#: Flavor extra spec naming the device profile (Nova 34).
PROFILE_SPEC = 'accel:device_profile'
#: Requester id of profile group N (Nova 34,
#: ``cyborg.get_device_profile_group_requester_id``).
REQUESTER = re.compile(r'^device_profile_(\d+)$')
#: The node trait accel_backend gives a device or pool on node N
#: (``accel_backend/agent/discovery/drivers/base.py``, ``numa_trait``).
NODE_TRAIT = re.compile(r'^CUSTOM_NUMA_NODE_(\d+)$')
#: Profile group key asking all of a group's units on one node
#: (accel_backend, ``conductor/numa_fit.py``).
LOCAL_KEY = 'accel:numa_local'
#: The accel_backend microversion that serves the per-node counts.
VERSION = 'accelerator 2.4'
FREE_PATH = '/deployables/free_by_numa_node'
#: Seconds a device profile's groups are kept.
PROFILE_TTL = 60.0

#: What a group asks of NUMA: ``node`` (int or None), ``local`` (bool),
#: ``count`` (units, int).
Wish = collections.namedtuple('Wish', 'node local count')


def profile_locals(groups):
    """Indexes (set of int) of the device profile groups (list of dict)
    with ``accel:numa_local: "true"``."""
    return {i for i, g in enumerate(groups or ())
            if isinstance(g, dict) and
            str(g.get(LOCAL_KEY, '')).lower() == 'true'}


def wishes(request_groups, local_groups=()):
    """The groups of a request that want NUMA locality.

    :param request_groups: ``RequestSpec.requested_resources`` (list of
        ``nova.objects.RequestGroup``).
    :param local_groups: indexes of profile groups with
        ``accel:numa_local`` (``profile_locals``).
    :returns: ``{requester_id: Wish}``; groups that want nothing of NUMA
        (and groups of ports) are left out.
    """
    out = {}
    for group in request_groups or ():
        match = REQUESTER.match(getattr(group, 'requester_id', None) or '')
        if match is None:
            continue
        nodes = [int(m.group(1)) for m in map(
            NODE_TRAIT.match, sorted(group.required_traits or ())) if m]
        local = int(match.group(1)) in local_groups
        if nodes or local:
            out[group.requester_id] = Wish(
                nodes[0] if nodes else None, local,
                sum((group.resources or {}).values()))
    return out


def fits(free, wish):
    """Whether a pool with ``free`` (``{"<node>": units}``) can give
    ``wish`` its units: all on ``wish.node`` when set, else all on one
    node."""
    if wish.node is not None:
        return free.get(str(wish.node), 0) >= wish.count
    return any(units >= wish.count for units in free.values())


def candidate_fits(candidate, group_wishes, pools):
    """Whether an allocation candidate (``{"mappings": {requester_id:
    [rp_uuid]}, ...}``) gives every wishing group a provider that can
    serve it; providers absent from ``pools`` (``{rp_uuid: free}``)
    always can."""
    mappings = candidate.get('mappings') or {}
    for requester_id, wish in group_wishes.items():
        for rp in mappings.get(requester_id, ()):
            if rp in pools and not fits(pools[rp], wish):
                return False
    return True


class _Service(object):
    """accel_backend as the filter reads it: Nova's ``[service_user]``
    credentials over the ``[cyborg]`` adapter, built on first use."""

    def __init__(self):
        self._lock = threading.Lock()
        self._adapter = None
        self._profiles = {}

    def adapter(self):
        with self._lock:
            if self._adapter is None:
                import nova.conf
                auth = ks_loading.load_auth_from_conf_options(
                    nova.conf.CONF, 'service_user')
                self._adapter = transport.conf_adapter(auth)
            return self._adapter

    def local_groups(self, name, now=None):
        """Indexes of the ``accel:numa_local`` groups of profile
        ``name``, from the cache when younger than ``PROFILE_TTL``.

        :raises: the ``AcceleratorClientError`` family.
        """
        now = time.monotonic() if now is None else now
        kept = self._profiles.get(name)
        if kept is not None and now - kept[0] < PROFILE_TTL:
            return kept[1]
        found = profile_locals(self.read_profile(name).get('groups'))
        self._profiles[name] = (now, found)
        return found

    def read_profile(self, name):
        """The device profile ``name`` (dict), as Nova reads it."""
        client = accel_client.AcceleratorClient(self.adapter())
        return client.get_device_profile(name)

    def free_by_numa_node(self):
        """``{rp_uuid: {"<node>": free units}}`` of the pools spanning
        NUMA nodes.

        :raises: the ``AcceleratorClientError`` family (an answer other
            than 200 included).
        """
        resp = transport.request(
            self.adapter(), 'GET', FREE_PATH,
            headers={'OpenStack-API-Version': VERSION})
        if resp.status_code != 200:
            raise transport.failure(resp, accel_exc.AcceleratorClientError,
                                    reason='GET %s' % FREE_PATH)
        pools = transport.json_body(resp, FREE_PATH).get('deployables')
        if not isinstance(pools, list):
            raise accel_exc.AcceleratorClientError(
                reason='%s answer lacks "deployables"' % FREE_PATH)
        return {p['rp_uuid']: p['free_by_numa_node'] for p in pools}


class AcceleratorNumaFitFilter(filters.BaseHostFilter,
                               filters.CandidateFilterMixin):
    """Drop the allocation candidates, and the hosts left without one,
    whose pool spanning NUMA nodes cannot give a locality-wanting device
    profile group its units on the wanted node (module docstring)."""

    RUN_ON_REBUILD = False
    #: One accel_backend per scheduler process (tests give their own).
    service = _Service()

    def _group_wishes(self, spec_obj):
        groups = (spec_obj.requested_resources or []
                  if spec_obj.obj_attr_is_set('requested_resources') else [])
        if not any(REQUESTER.match(getattr(g, 'requester_id', None) or '')
                   for g in groups):
            return {}
        name = ((spec_obj.flavor.extra_specs or {}).get(PROFILE_SPEC)
                if spec_obj.obj_attr_is_set('flavor') else None)
        local = set()
        if name:
            try:
                local = self.service.local_groups(name)
            except accel_exc.AcceleratorClientError as exc:
                LOG.warning('AcceleratorNumaFitFilter: device profile %s '
                            'not read (%s); its accel:numa_local groups '
                            'are left to the binder', name, exc)
        return wishes(groups, local)

    def filter_all(self, filter_obj_list, spec_obj):
        """Yield the hosts that keep a candidate (see the module
        docstring); at most one call to accel_backend for all of them.

        :param filter_obj_list: iterable of ``HostState``.
        :param spec_obj: ``nova.objects.RequestSpec``.
        """
        hosts = list(filter_obj_list)
        if not hosts or scheduler_utils.request_is_rebuild(spec_obj):
            return hosts
        group_wishes = self._group_wishes(spec_obj)
        if not group_wishes:
            return hosts
        try:
            pools = self.service.free_by_numa_node()
        except accel_exc.AcceleratorClientError as exc:
            LOG.warning('AcceleratorNumaFitFilter: free GPUs per NUMA node '
                        'not read (%s); every host passes, and a group '
                        'that does not fit its node fails to bind', exc)
            return hosts
        return [h for h in hosts if self._keeps(h, group_wishes, pools)]

    def _keeps(self, host_state, group_wishes, pools):
        if not host_state.allocation_candidates:
            return True     # nothing to judge (no candidates were given)
        kept = self.filter_candidates(
            host_state,
            lambda c: candidate_fits(c, group_wishes, pools))
        if not kept:
            LOG.debug('%s: no NUMA node of its pools has room for %s',
                      host_state, group_wishes)
        return bool(kept)

    def host_passes(self, host_state, spec_obj):
        """One host (``filter_all`` is what Nova calls)."""
        return bool(self.filter_all([host_state], spec_obj))


def all_filters():
    """Nova's filters (``nova.scheduler.filters.all_filters``, Nova 34) and
    ``AcceleratorNumaFitFilter``: a list of classes, for ``[filter_scheduler]
    available_filters = nova_accel.scheduler.filters.all_filters`` (one
    value, where the option's default is Nova's function alone)."""
    return filters.all_filters() + [AcceleratorNumaFitFilter]
