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

"""Wait until the accelerator requests (ARQs) of an instance are bound.

Upstream contract (nova-cyborg-interaction spec; nova 34.0.0,
``nova/compute/manager.py`` waits for the event): the conductor starts binding
asynchronously; when a binding resolves, the accelerator service posts the
Nova external event ``accelerator-request-bound`` with ``tag`` = the ARQ
UUID and ``status`` ``completed`` or ``failed``.  Nova's compute manager
waits for one such event per ARQ, up to ``[DEFAULT] arq_binding_timeout``
seconds.  An event that arrives before the compute starts waiting is lost,
so the ARQ states are read *inside* the wait context and ARQs already
resolved are skipped with ``virtapi.exit_wait_early()``.

This module implements that waiter for nova_accel code (for instance a
future hot-add path) with typed errors instead of Nova's generic ones.
"""

import nova.conf
from nova import exception as nova_exception
from oslo_log import log as logging

from accel_common import arq_states
from nova_accel.arq_binding import exception

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF


def _select(arqs, arq_uuids):
    """Return ``{uuid: arq}`` for the ARQs of ``arqs`` named in arq_uuids."""
    wanted = set(arq_uuids)
    return {arq['uuid']: arq for arq in arqs or []
            if arq.get('uuid') in wanted}


def _bind_failed(arqs):
    return sorted(uuid for uuid, arq in arqs.items()
                  if arq.get('state') == arq_states.BIND_FAILED)


def wait_for_bound_arqs(virtapi, client, instance, arq_uuids, timeout=None):
    """Wait until every ARQ in ``arq_uuids`` is bound; return them.

    :param virtapi: the compute driver's ``nova.virt.virtapi.VirtAPI``
        (``ComputeVirtAPI`` in nova-compute).  Its Nova 34 contract is used:
        ``wait_for_instance_event(instance, event_names, timeout=seconds,
        error_callback=None)``, a context manager that registers the
        ``(name, tag)`` events on entry and waits for them on exit, raising
        ``nova.exception.InstanceEventTimeout`` after ``timeout`` seconds;
        and ``exit_wait_early(events)``, which leaves the context at once and
        skips waiting for the listed events.
    :param client: duck-typed accelerator client with
        ``get_arqs_for_instance(instance_uuid, only_resolved=False)`` returning
        a list of ARQ dicts (``only_resolved=True``: only states ``Bound``,
        ``BindFailed``, ``Deleting``), e.g.
        ``nova_accel.cyborg_client.AcceleratorClient``.
    :param instance: ``nova.objects.Instance`` (only ``uuid`` is read here;
        Nova's virtapi also logs ``vm_state``/``task_state``).
    :param arq_uuids: list of ARQ UUIDs (str) to wait for; ``None`` means
        every ARQ the service has for the instance.  An empty list returns
        ``[]`` without waiting.
    :param timeout: seconds (int or float) to wait in total; ``None`` means
        ``[DEFAULT] arq_binding_timeout``.
    :returns: list of ARQ dicts, one per UUID in ``arq_uuids`` and in that
        order, each in state ``Bound``.
    :raises ARQBindingFailed: an event arrived with status ``failed``, an
        ARQ is in state ``BindFailed``, or an ARQ is missing or not ``Bound``
        after all events arrived.
    :raises ARQBindingTimeout: not every event arrived within ``timeout``
        seconds (Nova raised ``InstanceEventTimeout``).
    """
    if timeout is None:
        timeout = CONF.arq_binding_timeout
    if arq_uuids is None:
        arq_uuids = [arq['uuid'] for arq in
                     client.get_arqs_for_instance(instance.uuid)]
    arq_uuids = list(arq_uuids)
    if not arq_uuids:
        return []

    resolved = _wait_for_events(virtapi, client, instance, arq_uuids,
                                timeout)
    return _bound_in_order(client, instance, arq_uuids, resolved)


def _wait_for_events(virtapi, client, instance, arq_uuids, timeout):
    """Wait for the ``accelerator-request-bound`` event of each ARQ of
    ``arq_uuids`` not already resolved (``wait_for_bound_arqs``'s
    arguments).

    :returns: ``{uuid: ARQ dict}`` of those found resolved before the
        wait (possibly empty).
    :raises ARQBindingFailed: an event came with status ``failed``, or an
        ARQ resolved before the wait is ``BindFailed``.
    :raises ARQBindingTimeout: not every event came within ``timeout``.
    """
    events = [(arq_states.EVENT_NAME, arq_uuid) for arq_uuid in arq_uuids]
    prefix = arq_states.EVENT_NAME + '-'

    def _on_failed_event(event_key, _instance):
        # Nova calls this with the event key "<name>-<tag>" when an event
        # arrives with a status other than 'completed'.
        tag = event_key[len(prefix):] if event_key.startswith(prefix) else (
            event_key)
        raise exception.ARQBindingFailed(
            instance.uuid, [tag],
            reason='accelerator service reported the binding as failed')

    resolved = {}
    try:
        with virtapi.wait_for_instance_event(
                instance, events, timeout=timeout,
                error_callback=_on_failed_event):
            resolved = _select(
                client.get_arqs_for_instance(instance.uuid,
                                             only_resolved=True),
                arq_uuids)
            failed = _bind_failed(resolved)
            if failed:
                raise exception.ARQBindingFailed(
                    instance.uuid, failed, reason='state BindFailed')
            if resolved:
                # Their events may have come before we started waiting and
                # been dropped: do not wait for them.
                LOG.debug('ARQs %s already resolved before waiting',
                          sorted(resolved), instance=instance)
                virtapi.exit_wait_early(
                    [(arq_states.EVENT_NAME, arq_uuid)
                     for arq_uuid in arq_uuids if arq_uuid in resolved])
    except nova_exception.InstanceEventTimeout:
        pending = [u for u in arq_uuids if u not in resolved]
        raise exception.ARQBindingTimeout(instance.uuid, pending, timeout)
    return resolved


def _bound_in_order(client, instance, arq_uuids, resolved):
    """The ARQs of ``arq_uuids``, in that order, once their events came:
    ``resolved`` (``{uuid: ARQ dict}``) read again when it lacks some.

    :raises ARQBindingFailed: an ARQ is ``BindFailed``, unknown to the
        service, or in another state than ``Bound``.
    """
    if len(resolved) != len(arq_uuids):
        resolved = _select(client.get_arqs_for_instance(instance.uuid),
                           arq_uuids)

    failed = _bind_failed(resolved)
    if failed:
        raise exception.ARQBindingFailed(instance.uuid, failed,
                                         reason='state BindFailed')
    missing = [u for u in arq_uuids if u not in resolved]
    if missing:
        raise exception.ARQBindingFailed(
            instance.uuid, missing,
            reason='unknown to the accelerator service')
    not_bound = [u for u in arq_uuids
                 if resolved[u].get('state') != arq_states.BOUND]
    if not_bound:
        raise exception.ARQBindingFailed(
            instance.uuid, not_bound,
            reason='states %s, expected Bound' % ', '.join(
                '%s=%s' % (u, resolved[u].get('state')) for u in not_bound))
    return [resolved[u] for u in arq_uuids]


def require_bound(instance_uuid, accel_info):
    """Refuse to build a guest with an ARQ that is not ``Bound``.

    Nova 34's compute manager hands the driver every *resolved* ARQ, and
    ``BindFailed`` counts as resolved: when the failure was recorded before
    the compute manager started waiting, Nova passes the failed ARQ on and
    its libvirt driver silently boots the guest without the device.  The
    bundle's drivers call this first so such a build fails (and Nova
    reschedules or sets the server to ERROR, deleting the ARQs).

    :param instance_uuid: UUID (str) of the instance being built.
    :param accel_info: list of ARQ dicts (or None) given to ``spawn``.
    :raises ARQBindingFailed: naming the ARQs that are not ``Bound``.
    """
    bad = [arq['uuid'] for arq in accel_info or []
           if arq.get('state') != arq_states.BOUND]
    if bad:
        raise exception.ARQBindingFailed(
            instance_uuid, bad,
            reason='accelerator service reports them not Bound')
