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

"""Placement side of accelerator hot-plug.

Two jobs, both over a Placement client with Nova's report client interface
(``get(url, version=...)``, ``put(url, data, version=...)`` returning a
keystoneauth/requests response; ``nova.scheduler.client.report
.SchedulerReportClient`` is one):

* :func:`device_candidates`: ``GET /allocation_candidates`` for the request
  groups of a device profile, every group restricted to the instance's
  compute node tree (``in_tree<suffix>``), microversion 1.36 (string
  suffixes 1.33, ``mappings`` 1.34);
* :class:`AllocationEditor`: grow or shrink the instance's existing
  allocation (``GET`` then ``PUT /allocations/<consumer>`` with its
  ``consumer_generation``), re-reading and retrying on a consumer
  generation conflict (``409 placement.concurrent_update``).  Growing and
  shrinking are deltas applied to the allocation as it is *now*, so a
  rollback never overwrites what somebody else changed in between.
"""

from urllib import parse

from oslo_log import log as logging
import tenacity

from accel_common import placement_errors
from nova_accel.hotplug import exception

LOG = logging.getLogger(__name__)

VERSION = '1.36'
DEFAULT_RETRIES = 4


def group_suffix(requester_id):
    """Placement suffix of a request group (``_<requester_id>``)."""
    return '_' + requester_id


def candidates_query(request_groups, in_tree, group_policy='none',
                     limit=None):
    """Build the query string of ``GET /allocation_candidates``.

    :param request_groups: list of ``nova.objects.RequestGroup`` (from
        ``AcceleratorClient.get_request_groups``): ``requester_id``,
        ``resources``, ``required_traits``, ``forbidden_traits``.
    :param in_tree: compute node resource provider UUID; every group gets
        ``in_tree<suffix>`` so only devices of that host qualify.
    :param group_policy: ``none`` or ``isolate``.
    :param limit: optional int.
    :returns: str, e.g. ``resources_device_profile_0=PGPU:1&...``.
    """
    params = []
    for group in request_groups:
        sfx = group_suffix(group.requester_id)
        params.append(('resources' + sfx, ','.join(
            '%s:%d' % (rc, amount)
            for rc, amount in sorted(group.resources.items()))))
        traits = sorted(group.required_traits or ()) + [
            '!' + t for t in sorted(group.forbidden_traits or ())]
        if traits:
            params.append(('required' + sfx, ','.join(traits)))
        params.append(('in_tree' + sfx, in_tree))
    params.append(('group_policy', group_policy))
    if limit:
        params.append(('limit', str(int(limit))))
    return parse.urlencode(params, safe=':,!')


def _text(resp):
    return (getattr(resp, 'text', '') or '')[:500]


def device_candidates(placement, request_groups, compute_rp_uuid,
                      group_policy='none', limit=None):
    """Return Placement's candidates for the groups on one compute node.

    :returns: list of ``(allocations, rg_rp_map)``: ``allocations`` is
        ``{rp_uuid: {"resources": {RC: n}}}`` (the device RPs only) and
        ``rg_rp_map`` ``{requester_id: [rp_uuid, ...]}`` from the
        candidate's ``mappings``; in Placement's order.
    :raises: HotplugError when Placement answers anything but 200.
    """
    url = '/allocation_candidates?' + candidates_query(
        request_groups, compute_rp_uuid, group_policy=group_policy,
        limit=limit)
    resp = placement.get(url, version=VERSION)
    if resp.status_code != 200:
        raise exception.HotplugError(
            reason='GET /allocation_candidates answered %s: %s' %
                   (resp.status_code, _text(resp)))
    result = []
    for areq in resp.json().get('allocation_requests', []):
        mappings = areq.get('mappings') or {}
        rg_rp_map = {g.requester_id: list(
            mappings.get(group_suffix(g.requester_id), []))
            for g in request_groups}
        result.append((areq['allocations'], rg_rp_map))
    return result


def add_resources(current, delta):
    """Return ``current`` + ``delta`` (both ``{rp: {"resources": {}}}``)."""
    out = {rp: {'resources': dict(a.get('resources', {}))}
           for rp, a in current.items()}
    for rp, alloc in delta.items():
        res = out.setdefault(rp, {'resources': {}})['resources']
        for rc, amount in alloc['resources'].items():
            res[rc] = res.get(rc, 0) + amount
    return out


def subtract_resources(current, delta):
    """Return ``current`` - ``delta``, clamped at zero, empties dropped."""
    out = {rp: {'resources': dict(a.get('resources', {}))}
           for rp, a in current.items()}
    for rp, alloc in delta.items():
        res = out.get(rp, {}).get('resources')
        if res is None:
            continue
        for rc, amount in alloc['resources'].items():
            left = res.get(rc, 0) - amount
            if left > 0:
                res[rc] = left
            else:
                res.pop(rc, None)
        if not res:
            del out[rp]
    return out


class _GenerationConflict(Exception):
    """Placement answered 409 ``placement.concurrent_update``."""


class AllocationEditor(object):
    """Apply deltas to one consumer's allocation with generation checks.

    :param placement: Placement client (see the module docstring).
    :param consumer_uuid: the instance UUID.
    :param retries: how many times a consumer generation conflict is
        answered by re-reading and trying again.
    """

    def __init__(self, placement, consumer_uuid, retries=DEFAULT_RETRIES):
        self.placement = placement
        self.consumer = consumer_uuid
        self.retries = retries

    def read(self):
        """Return Placement's ``GET /allocations/<consumer>`` body (1.36)."""
        resp = self.placement.get('/allocations/%s' % self.consumer,
                                  version=VERSION)
        if resp.status_code != 200:
            raise exception.AllocationUpdateFailed(
                instance_uuid=self.consumer,
                reason='GET answered %s: %s' % (resp.status_code,
                                                _text(resp)))
        return resp.json()

    def _modify(self, change, what):
        """Read, compute ``change(allocations)``, PUT; retry on conflict.

        :raises AllocationUpdateFailed: any refusal but a consumer
            generation conflict, or conflicts beyond ``retries``.
        """
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_GenerationConflict),
            stop=tenacity.stop_after_attempt(self.retries + 1),
            reraise=True)
        try:
            return retrying(self._modify_once, change, what)
        except _GenerationConflict:
            raise exception.AllocationUpdateFailed(
                instance_uuid=self.consumer,
                reason='still conflicting after %d attempts to %s' % (
                    self.retries + 1, what))

    def _modify_once(self, change, what):
        """One read-change-PUT; raises ``_GenerationConflict`` on a
        consumer generation conflict."""
        body = self.read()
        current = body.get('allocations') or {}
        if not current:
            raise exception.AllocationUpdateFailed(
                instance_uuid=self.consumer,
                reason='the instance has no allocation to %s' % what)
        payload = {
            'allocations': change(current),
            'consumer_generation': body.get('consumer_generation'),
            'project_id': body['project_id'],
            'user_id': body['user_id'],
        }
        resp = self.placement.put('/allocations/%s' % self.consumer,
                                  payload, version=VERSION)
        if resp.status_code == 204:
            return payload['allocations']
        if (resp.status_code == 409 and
                placement_errors.error_code(resp) ==
                placement_errors.CONCURRENT_UPDATE):
            LOG.info('Allocation of %(c)s changed while trying to '
                     '%(what)s it, re-reading',
                     {'c': self.consumer, 'what': what})
            raise _GenerationConflict()
        raise exception.AllocationUpdateFailed(
            instance_uuid=self.consumer,
            reason='PUT to %s answered %s: %s' % (
                what, resp.status_code, _text(resp)))

    def grow(self, delta):
        """Add ``delta`` (``{rp: {"resources": {RC: n}}}``)."""
        return self._modify(lambda cur: add_resources(cur, delta), 'grow')

    def move(self, remove, add):
        """Take ``remove`` off the allocation and add ``add``, in one
        ``PUT`` (a device replaced: the consumer never holds both nor
        neither)."""
        return self._modify(lambda cur: add_resources(
            subtract_resources(cur, remove), add), 'move')

    def shrink(self, delta):
        """Remove ``delta`` (what :meth:`grow` added)."""
        return self._modify(lambda cur: subtract_resources(cur, delta),
                            'shrink')
