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

"""Replace a device under a running instance, on the same host (issue 53
item 2).

The pipeline, for one Bound ARQ of the instance (its device failed, or
an operator drains it with a ``NoExecute`` taint):

    the ARQ's request group (its device profile, group id) -> Placement
    allocation candidates on this compute node without the old device
    (a tainted one is reserved there already) -> none: stop, nothing
    changed, the instance gets a fault ->
    [persist the plan] -> hot-unplug the old device ->
    [persist] -> move the allocation old -> new in one ``PUT`` with the
    consumer generation -> [persist] -> unbind the ARQ (accel-backend
    quarantines a device under ``NoExecute``, never cleans and resells
    it) -> bind it to the new device, wait for
    ``accelerator-request-bound`` -> hot-plug the new device -> forget
    the plan.

The ARQ keeps its UUID, so Nova's later reads of the instance's ARQs
(reboot, rebuild) find the new device.  Each step is written to the
instance's ``system_metadata`` (``replace_accelerator:<arq>``: the old
and new providers, the group's resources and the step begun) before it
is acted on, and every step is idempotent: asking again for the
replacement of an ARQ with a plan (the command, or the failed-device
watch, after a crash of nova-compute) resumes it where it stopped.  The
whole is an instance action ``accelerator-replace`` with one event, so the
operator and the server's owner see it (``openstack server event
list``); a failure is also an instance fault.
"""

import traceback

from nova.compute import utils as compute_utils
from nova import context as nova_context
from nova import objects
from nova import utils as nova_utils
from oslo_log import log as logging
from oslo_serialization import jsonutils
from oslo_utils import excutils

from accel_common import arq_states
from nova_accel.arq_binding import waiter
import nova_accel.conf
from nova_accel.cyborg_client import requester_id
from nova_accel.hotplug import exception
from nova_accel.hotplug import manager
from nova_accel.hotplug import placement
from nova_accel.hotplug import state

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF

#: The instance action and its event.
ACTION = 'accelerator-replace'
EVENT = 'replace_accelerator'
#: ``system_metadata`` key prefix of a replacement in progress.
PLAN_PREFIX = 'replace_accelerator:'
#: The steps of a plan, in order.
UNPLUG, MOVE, REBIND, PLUG = 'unplug', 'move allocation', 'rebind', 'plug'


def plans(instance):
    """``{arq uuid: plan dict}`` of the replacements in progress on
    ``instance`` (``old``, ``new``: provider UUIDs; ``step``)."""
    found = {}
    for key, value in (instance.system_metadata or {}).items():
        if key.startswith(PLAN_PREFIX):
            try:
                found[key[len(PLAN_PREFIX):]] = jsonutils.loads(value)
            except ValueError:
                continue
    return found


class ReplaceManager(manager.HotplugManager):
    """``HotplugManager`` that also replaces devices (see the module
    docstring); same parameters."""

    def replace(self, context, instance_uuid, arq_uuid):
        """Give ``instance_uuid`` another device for its ARQ ``arq_uuid``.

        :returns: dict ``{"instance_uuid", "arq", "old", "new",
            "hostdevs"}`` (the providers replaced and the ``<hostdev>``
            XML plugged).
        :raises NoReplacementDevice: no free device satisfies the ARQ's
            request group on this host (nothing changed).
        :raises ARQNotReplaceable, InstanceNotHotpluggable: as named.
        :raises: the errors of the steps; a failure after the hot-unplug
            leaves the plan in ``system_metadata`` and a fault.
        """
        @nova_utils.synchronized(instance_uuid)
        def _locked():
            return self._replace_logged(context, instance_uuid, arq_uuid)
        return _locked()

    def _replace_logged(self, context, instance_uuid, arq_uuid):
        admin = nova_context.get_admin_context()
        instance = self._load(admin, instance_uuid)
        objects.InstanceAction.action_start(admin, instance_uuid, ACTION,
                                            want_result=False)
        objects.InstanceActionEvent.event_start(admin, instance_uuid, EVENT,
                                                want_result=False,
                                                host=self.host)
        try:
            result = self._replace(context, admin, instance, arq_uuid)
        except Exception as exc:
            with excutils.save_and_reraise_exception():
                objects.InstanceActionEvent.event_finish_with_failure(
                    admin, instance_uuid, EVENT, exc_val=exc,
                    exc_tb=traceback.format_exc(), want_result=False)
                compute_utils.add_instance_fault_from_exc(admin, instance,
                                                          exc)
        objects.InstanceActionEvent.event_finish(admin, instance_uuid, EVENT,
                                                 want_result=False)
        return result

    def _bound_arq(self, client, instance, arq_uuid):
        arqs = {a['uuid']: a for a in
                client.get_arqs_for_instance(instance.uuid)}
        arq = arqs.get(arq_uuid)
        if arq is None or arq.get('state') != arq_states.BOUND:
            raise exception.ARQNotReplaceable(
                arq=arq_uuid, instance_uuid=instance.uuid,
                reason='not a Bound ARQ of the instance (%s)' % (
                    arq and arq.get('state')))
        if arq.get('attach_handle_type') != 'PCI':
            # A mediated device is created by Nova at spawn only.
            raise exception.ARQNotReplaceable(
                arq=arq_uuid, instance_uuid=instance.uuid,
                reason='its attach handle is %s; only PCI devices are '
                       'replaced' % arq.get('attach_handle_type'))
        return arq

    def _choose(self, client, instance, arq):
        """``(group, node, candidates)``: the ARQ's request group, the
        compute node, and the allocation candidates of the group on this
        node, those on the ARQ's own provider first (a pool with another
        free unit: Placement offers it only then; a per-device provider,
        held by this very ARQ, never)."""
        groups = client.get_request_groups(arq['device_profile_name'])
        rid = requester_id(arq.get('device_profile_group_id') or 0)
        group = [g for g in groups if g.requester_id == rid]
        node = self._node(nova_context.get_admin_context(), instance)
        old = arq['device_rp_uuid']
        candidates = sorted(
            placement.device_candidates(self._placement, group, node.uuid),
            key=lambda c: old not in c[0]) if group else []
        if not candidates:
            raise exception.NoReplacementDevice(
                rp=old, arq=arq['uuid'], profile=arq['device_profile_name'],
                instance_uuid=instance.uuid, host=instance.host)
        return group[0], node, candidates

    @staticmethod
    def _persist(instance, arq_uuid, plan):
        key = PLAN_PREFIX + arq_uuid
        if plan is None:
            instance.system_metadata.pop(key, None)
        else:
            instance.system_metadata[key] = jsonutils.dumps(plan)
        instance.save()

    def _replace(self, context, admin, instance, arq_uuid):
        client = self._client_factory(context)
        plan = plans(instance).get(arq_uuid)
        if plan is not None:
            LOG.warning('Resuming the replacement of device %(old)s of ARQ '
                        '%(arq)s at step "%(step)s"', dict(plan, arq=arq_uuid),
                        instance=instance)
            return self._run(client, instance, arq_uuid, plan)
        arq = self._bound_arq(client, instance, arq_uuid)
        group, _, candidates = self._choose(client, instance, arq)
        plan = {'old': arq['device_rp_uuid'], 'new': None, 'step': UNPLUG,
                'resources': dict(group.resources),
                'old_handle': arq.get('attach_handle_uuid')}
        self._persist(instance, arq_uuid, plan)
        return self._run(client, instance, arq_uuid, plan, arq=arq,
                         candidates=candidates)

    def _run(self, client, instance, arq_uuid, plan, arq=None,
             candidates=None):
        """Run ``plan`` from its ``step`` on (each step idempotent, so
        that one a crash interrupted is done again safely)."""
        arq = arq or client.get_arq(arq_uuid)
        old = plan['old']
        if plan['step'] == UNPLUG:
            LOG.warning('Replacing device %(old)s of ARQ %(arq)s: '
                        'hot-unplugging it', {'old': old, 'arq': arq_uuid},
                        instance=instance)
            if arq.get('device_rp_uuid') == old and self.driver.accel_plugged(
                    instance, arq):
                self.driver.accel_unplug(instance, [arq])
            self._step(instance, arq_uuid, plan, MOVE)
        if plan['step'] == MOVE:
            self._move(client, instance, arq_uuid, arq, plan, candidates)
            self._step(instance, arq_uuid, plan, REBIND)
        if plan['step'] == REBIND:
            self._rebind(client, instance, arq_uuid, plan)
            self._step(instance, arq_uuid, plan, PLUG)
        (bound,) = waiter.wait_for_bound_arqs(
            self.driver.virtapi, client, instance, [arq_uuid],
            timeout=CONF.arq_binding_timeout)
        hostdevs = []
        if not self.driver.accel_plugged(instance, bound):
            hostdevs = self.driver.accel_plug(instance, [bound])
        state.move(instance, arq_uuid, plan['new'])
        self._persist(instance, arq_uuid, None)
        LOG.warning('Replaced device %(old)s of ARQ %(arq)s by %(new)s',
                    {'old': old, 'arq': arq_uuid, 'new': plan['new']},
                    instance=instance)
        return {'instance_uuid': instance.uuid, 'arq': arq_uuid, 'old': old,
                'new': plan['new'], 'hostdevs': hostdevs}

    def _step(self, instance, arq_uuid, plan, step):
        plan['step'] = step
        self._persist(instance, arq_uuid, plan)
        # After the write: the line says what a crash from now on resumes.
        LOG.info('Replacing device %(old)s of ARQ %(arq)s: step "%(step)s" '
                 'begun', dict(plan, arq=arq_uuid), instance=instance)

    def _move(self, client, instance, arq_uuid, arq, plan, candidates):
        """Move the allocation ``old`` -> a candidate, unless a ``PUT``
        before a crash did already (``new`` in it, ``old`` not); the
        candidate is persisted before each ``PUT``."""
        editor = placement.AllocationEditor(self._placement, instance.uuid)
        old = plan['old']
        if plan['new'] == old:
            return      # another unit of the same pool: nothing moves
        allocs = editor.read()['allocations']
        if old not in allocs and plan['new'] in allocs:
            return
        if candidates is None:
            _, _, candidates = self._choose(client, instance, dict(
                arq, device_rp_uuid=old))
        last = None
        for alloc, _ in candidates[:manager.CANDIDATE_ATTEMPTS]:
            plan['new'] = next(iter(alloc))
            self._persist(instance, arq_uuid, plan)
            if plan['new'] == old:
                return
            try:
                editor.move({old: {'resources': plan['resources']}}, alloc)
                return
            except exception.AllocationUpdateFailed as exc:
                LOG.info('Candidate %(c)s refused: %(e)s; trying the next',
                         {'c': sorted(alloc), 'e': exc}, instance=instance)
                last = exc
        raise last

    def _rebind(self, client, instance, arq_uuid, plan):
        """Bind the ARQ to ``new`` (unbinding it from ``old`` first),
        unless it is bound or binding there already, to another attach
        handle than the old one."""
        current = client.get_arq(arq_uuid)
        if (current.get('device_rp_uuid') == plan['new'] and
                current.get('state') in (arq_states.BOUND,
                                         arq_states.BIND_STARTED) and
                current.get('attach_handle_uuid') != plan['old_handle']):
            return
        if current.get('state') != arq_states.INITIAL:
            client.unbind_arqs([arq_uuid])
        node = self._node(nova_context.get_admin_context(), instance)
        client.bind_arqs({arq_uuid: {
            'hostname': node.hypervisor_hostname,
            'device_rp_uuid': plan['new'], 'instance_uuid': instance.uuid,
            'project_id': instance.project_id}})
