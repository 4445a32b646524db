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

"""The taints of a host's configuration file stored (issue 53 item 1):
each discovery pass makes the taints of ``set_by``
``accel_common.taints.CONFIG_SET_BY`` of a device it found those its
``[taints] devices`` rules give (``DiscoveredDeployable.taints``), in
the pass's transaction (``conductor.host_sync.sync``), as
``conductor.health_taints`` does for health faults.  A taint of the same
key set through the API on that device is replaced (the file wins for
its keys); one a line no longer gives is removed, and a device it
quarantined goes to cleaning.  A device the pass did not find keeps its
taints.  What a taint does is ``objects.taint``'s.
"""

from accel_backend.objects import quarantine
from accel_backend.objects import taint as taint_obj
from accel_common import taints


def wanted(items):
    """``{(function, key): (effect, value, reason)}`` of the taints
    ``items`` carry (the deployables found of one device; a later rule
    for the same function and key wins)."""
    out = {}
    for item in items:
        for t in item.taints or ():
            out[(t['function'], t['key'])] = (t['effect'], t.get('value'),
                                              t.get('reason'))
    return out


def reconcile(session, dev, items):
    """Make ``dev``'s configured taints those ``items`` carry, in the
    caller's transaction.

    :param session: a write transaction (``conductor.host_sync.sync``'s).
    :param dev: ``models.Device`` with its deployables and their taints
        loadable.
    :param items: the ``DiscoveredDeployable`` of ``dev`` this pass found.
    :returns: ``(set, removed)``: lists of the taints set (new or
        changed) and removed, as ``objects.taint.payload`` dicts.
    """
    want = wanted(items)
    added, removed = [], []
    for dep in dev.deployables:
        for taint in list(dep.taints):
            if taint.set_by == taints.CONFIG_SET_BY and \
                    (taint.function, taint.key) not in want:
                removed.append(taint_obj.payload(dep, taint))
                taint_obj.remove(session, dep, taint)
                quarantine.lift(session, dep)
        have = {(t.function, t.key): t for t in dep.taints}
        for (function, key), (effect, value, reason) in sorted(
                want.items()):
            taint = have.get((function, key))
            if taint is not None and taint.set_by == taints.CONFIG_SET_BY and (
                    taint.effect, taint.value, taint.reason) == (
                    effect, value, reason):
                continue
            if function != taint_obj.WHOLE and \
                    function not in taint_obj.members(dev):
                continue
            taint, _ = taint_obj.set_(
                session, dep, key, effect, value=value, reason=reason,
                set_by=taints.CONFIG_SET_BY, function=function)
            added.append(taint_obj.payload(dep, taint))
    return added, removed
