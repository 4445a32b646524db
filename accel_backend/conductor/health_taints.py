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

"""Health faults as automatic device taints (issue 53 item 1).

Discovery judges each device's health on every pass (the driver's
verdict and fatal PCIe AER errors, ``common.aer``; each member of a
pooled deployable on its own, ``objects.pool_members``), and a device
that vanished while a guest holds it is kept ``missing``
(``conductor.host_sync``).  Each such fault is also a taint of key
``HEALTH_KEY`` set by ``SET_BY``, in the same transaction, so that
whatever keeps a device out of use is one kind of record, listed by
``GET /v2/deployables`` and ``GET /v2/deployables/{uuid}/taints``
(microversion 2.5) and counted by the ``accel_device_taints``
metric.  Its effect, as Kubernetes DRA's device taints put it
(KEP-5055):

``NoExecute``
    the device failed: it vanished from the host while in use (fell off
    the bus), the driver judged it unhealthy, or new fatal AER errors
    were counted in this pass.  Its guests need another device
    (replacement under a running guest is issue 53 item 2; until then
    the taint says so and nothing is moved).
``NoSchedule``
    a fatal AER error is recovering (``[discovery] aer_recovery_passes``
    passes without a new one): no new work, guests stay.

The taint of a whole device covers each of its deployables (function
``''``); an unhealthy member of a pool taints that function of the
pool's deployable.  When the fault is gone the taint is removed by the
same pass.  Its ``time_added`` is when the fault (with that effect)
was first seen; the reason follows the latest verdict.  An
administrator may remove it; the next pass that still finds the fault
sets it again.  What Placement reserves for an unhealthy device and
what the claim skips do not change with this module (the device's
health already does both, ``objects.deployable.reserved_units``,
``conductor.claim``).
"""

from accel_backend.common import aer
from accel_backend.common import discovered
from accel_backend.objects import device as device_obj
from accel_backend.objects import quarantine
from accel_backend.objects import taint as taint_obj
from accel_common import taints

#: The key of a health fault's taint.
HEALTH_KEY = 'accel.openstack.org/unhealthy'
#: ``set_by`` of a health fault's taint (no user set it).
SET_BY = 'accel_backend.health'
#: The reason of the taint of a device kept ``missing``.
MISSING_REASON = ('device no longer found on the host while in use (fell '
                  'off the bus or removed); kept until released')


def effect_of(health, reason):
    """The effect of a health verdict.

    :param health: ``common.discovered.HEALTHY`` or ``UNHEALTHY``.
    :param reason: the verdict's reason (str or None).
    :returns: ``taints.NO_SCHEDULE`` while a fatal AER error recovers,
        ``taints.NO_EXECUTE`` for any other fault, None when healthy.
    """
    if health != discovered.UNHEALTHY:
        return None
    if aer.is_recovering(reason):
        return taints.NO_SCHEDULE
    return taints.NO_EXECUTE


def wanted(dev):
    """The health taints ``dev`` should carry now.

    :param dev: ``models.Device`` after this pass's verdict.
    :returns: ``{function: (effect, reason)}``; function ``''``
        (``objects.taint.WHOLE``) for the whole device, a member's PCI
        address for an unhealthy member of a pool.
    """
    if dev.status == device_obj.MISSING:
        return {taint_obj.WHOLE: (taints.NO_EXECUTE, MISSING_REASON)}
    out = {}
    effect = effect_of(dev.health, dev.health_reason)
    if effect:
        out[taint_obj.WHOLE] = (effect, dev.health_reason)
    for address, member in taint_obj.members(dev).items():
        effect = effect_of(member.get('health'), member.get('health_reason'))
        if effect:
            out[address] = (effect, member.get('health_reason'))
    return out


def reconcile(session, dev):
    """Make the ``HEALTH_KEY`` taints of ``dev``'s deployables those of
    ``wanted(dev)``, in the caller's transaction.

    :param session: a write transaction (``conductor.host_sync.sync``'s).
    :param dev: ``models.Device`` with its deployables and their taints
        loadable, after this pass's verdict.
    :returns: ``(set, removed)``: lists of the taints set (new, or with
        another effect) and removed, as ``objects.taint.payload`` dicts.
    """
    want = wanted(dev)
    added, removed = [], []
    for dep in dev.deployables:
        have = {t.function: t for t in dep.taints if t.key == HEALTH_KEY}
        for function, taint in sorted(have.items()):
            if function not in want:
                removed.append(taint_obj.payload(dep, taint))
                taint_obj.remove(session, dep, taint)
                quarantine.lift(session, dep)
        for function, (effect, reason) in sorted(want.items()):
            taint = have.get(function)
            if taint is not None and taint.effect == effect:
                taint.reason = reason
                continue
            taint, _ = taint_obj.set_(
                session, dep, HEALTH_KEY, effect, reason=reason,
                set_by=SET_BY, function=function)
            added.append(taint_obj.payload(dep, taint))
    return added, removed
