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

"""Why an ARQ ended ``BindFailed``: one fixed vocabulary, and the one
place that counts and announces a failure.

The reason is the ``reason`` label of ``accel_bind_failures`` and the
``bind_failure_reason`` of the ``accelerator.arq.bind.error``
notification's ``ARQPayload`` (1.1); both are listed in the admin guide
("Metrics").  The binder finds it with ``diagnose`` after a claim left
ARQs without a handle; the audit gives ``BOUND_WITHOUT_HANDLE``.
"""

import collections

import sqlalchemy as sa

from accel_backend.common import discovered
from accel_backend.common import host_states
from accel_backend.db import models
from accel_backend import metrics
from accel_backend.objects import device as device_obj
from accel_backend.objects import taint as taint_obj
from accel_common import handle_states

#: No device of the ARQ's host stands behind its ``device_rp_uuid`` (a
#: provider we do not have, or another host's).
NO_DEVICE = 'no_device'
#: The device vanished from the host (status ``missing``).
DEVICE_MISSING = 'device_missing'
#: An operator disabled the device (status ``maintaining``).
DEVICE_MAINTAINING = 'device_maintaining'
#: Discovery found the device unhealthy (fatal PCIe AER errors).
DEVICE_UNHEALTHY = 'device_unhealthy'
#: An operator tainted the deployable, or functions of the pool, and no
#: other handle is free (``objects.taint``).
DEVICE_TAINTED = 'device_tainted'
#: No handle is free, and some are waiting for or failed their cleaning
#: (``dirty``, ``cleaning``, ``clean_failed``).
DEVICE_NOT_CLEAN = 'device_not_clean'
#: Every handle is held by other ARQs (or was claimed by a concurrent
#: binder first): Placement allocated more than the device has free.
NO_FREE_HANDLE = 'no_free_handle'
#: The audit found the ARQ ``Bound`` without an attach handle.
BOUND_WITHOUT_HANDLE = 'bound_without_handle'
#: The host's providers are being migrated into pools
#: (``agent.placement.reshape``): the binder keeps the ARQ ``BindStarted`` and
#: binds it once the migration is done; never a ``BindFailed`` reason.
HOST_MIGRATING = 'host_migrating'

#: A pool spanning NUMA nodes has the units, but not where the request
#: group wants them: on one node, or on the node its trait requires
#: (``conductor.numa_fit``).
NUMA_UNFIT = 'numa_unfit'

REASONS = (NO_DEVICE, DEVICE_MISSING, DEVICE_MAINTAINING, DEVICE_UNHEALTHY,
           DEVICE_TAINTED, DEVICE_NOT_CLEAN, NO_FREE_HANDLE,
           BOUND_WITHOUT_HANDLE, NUMA_UNFIT)


def diagnose(session, keys):
    """Why no handle could be claimed for each ``(rp_uuid, hostname)``.

    Two SELECTs whatever the number of keys, run only when a claim left
    ARQs without a handle.  A device with several problems gets the first
    of ``REASONS`` that applies; any key of a host being migrated into
    pools (``common.host_states.MIGRATING``) gets ``HOST_MIGRATING``.

    :param session: a ``Session`` (the binder's transaction).
    :param keys: iterable of ``(rp_uuid, hostname)`` (str, str).
    :returns: ``{(rp_uuid, hostname): reason}`` for every key, a reason
        of ``REASONS`` or ``HOST_MIGRATING``.
    """
    keys = set(keys)
    if not keys:
        return {}
    rows = session.execute(
        sa.select(models.Deployable.rp_uuid, models.Device.hostname,
                  models.Device.status, models.Device.health,
                  taint_obj.TAINTED, models.AttachHandle.state)
        .join(models.Device, models.Deployable.device_id == models.Device.id)
        .outerjoin(models.AttachHandle, models.AttachHandle.deployable_id ==
                   models.Deployable.id)
        .where(models.Deployable.rp_uuid.in_(sorted({r for r, _ in keys})),
               models.Device.hostname.in_(sorted({h for _, h in keys})))
    ).all()
    found = collections.defaultdict(list)
    for rp, host, status, health, tainted, state in rows:
        if (rp, host) in keys:
            found[(rp, host)].append((status, health, tainted, state))
    migrating = set(session.scalars(
        sa.select(models.HostStatus.hostname).where(
            models.HostStatus.hostname.in_(sorted({h for _, h in keys})),
            models.HostStatus.state == host_states.MIGRATING)))
    return {key: HOST_MIGRATING if key[1] in migrating
            else _reason(found.get(key)) for key in keys}


def _reason(rows):
    if not rows:
        return NO_DEVICE
    status, health, tainted = rows[0][:3]
    if status == device_obj.MISSING:
        return DEVICE_MISSING
    if status == device_obj.MAINTAINING:
        return DEVICE_MAINTAINING
    if health != discovered.HEALTHY:
        return DEVICE_UNHEALTHY
    if tainted:
        return DEVICE_TAINTED
    # Out of service states are never in use (accel_common.handle_states).
    if any(state in handle_states.OUT_OF_SERVICE_STATES
           for _, _, _, state in rows):
        return DEVICE_NOT_CLEAN
    return NO_FREE_HANDLE


def record(notifications, data, reason):
    """Count one ``BindFailed`` ARQ and send
    ``accelerator.arq.bind.error``, after the failure was committed.

    :param notifications: ``accel_backend.notifications.Notifications``,
        or None (count only).
    :param data: the ARQ's ``notifications.arq_data`` (``hostname``,
        ``resource_class``...); its ``bind_failure_reason`` is set here.
    :param reason: one of ``REASONS``.
    :raises ValueError: ``reason`` is not one of ``REASONS`` (a
        programming error: the metric's label set must stay fixed).
    """
    if reason not in REASONS:
        raise ValueError('unknown bind failure reason %r' % (reason,))
    metrics.BIND_FAILURES.labels(
        host=data['hostname'] or '',
        resource_class=data['resource_class'] or '', reason=reason).inc()
    data['bind_failure_reason'] = reason
    if notifications is not None:
        notifications.arq('accelerator.arq.bind.error', data, 'error')
