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

"""Hot-add and hot-remove accelerators to a running instance.

The pipeline, run on the instance's compute host (see
:mod:`nova_accel.hotplug.rpc` for how a request gets there):

attach
    load the instance (ACTIVE, on this host, no task running) ->
    translate the device profile into request groups (cyborg_client) ->
    Placement allocation candidates on this compute node's tree ->
    *grow* the instance's allocation with the chosen device RPs ->
    create ARQs -> match ARQs to RPs by requester_id -> bind ->
    wait for ``accelerator-request-bound`` (``arq_binding_timeout``) ->
    compose ``<hostdev>`` elements -> hot-plug them into the guest ->
    record the ARQs in the instance's system_metadata.

    Any failure undoes the steps done so far in reverse order (detach the
    hostdevs already plugged, delete the ARQs, which unbinds them, shrink
    the allocation by what was added) and re-raises.

detach
    find the ARQs of one attach of the profile (system_metadata) ->
    hot-unplug their hostdevs -> delete the ARQs -> shrink the allocation
    by their device RPs -> forget them.

The caller serializes with Nova's own per-instance lock
(``nova.utils.synchronized(instance_uuid)``, the one Nova's compute manager
takes for reboot, delete, ...), so no Nova operation runs on the instance
in the middle of a hot-plug.

The driver passed in is seen through a narrow interface (hot-plug is a
capability of the driver, :mod:`nova_accel.virt.hotplug_mixins`; this package
imports nothing of :mod:`nova_accel.virt`): ``virtapi``
(``wait_for_instance_event``, ``reportclient``),
``accel_plug(instance, arqs) -> [hostdev XML]`` and
``accel_unplug(instance, arqs)``, each all or nothing.
"""

from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova import utils as nova_utils
from oslo_log import log as logging
from oslo_utils import excutils

from accel_common import arq_states
from nova_accel.arq_binding import waiter
from nova_accel.cyborg_client import match_arqs_to_providers
from nova_accel.cyborg_client import requester_id
from nova_accel.hotplug import clients
from nova_accel.hotplug import exception
from nova_accel.hotplug import placement
from nova_accel.hotplug import state

LOG = logging.getLogger(__name__)
CONF = nova.conf.CONF

# How many allocation candidates to try when the chosen one was taken by
# someone else between GET /allocation_candidates and the PUT.
CANDIDATE_ATTEMPTS = 3


class HotplugManager(object):
    """Runs attach/detach for the instances of one compute host.

    :param driver: the compute driver (see the module docstring).
    :param host: this compute service's host name (``CONF.host``).
    :param accel_client_factory: ``f(context) -> AcceleratorClient``;
        defaults to :func:`nova_accel.hotplug.clients.accel_client`.
    """

    def __init__(self, driver, host, accel_client_factory=None):
        self.driver = driver
        self.host = host
        self._client_factory = (accel_client_factory or
                                clients.accel_client)

    # -- helpers ---------------------------------------------------------

    @property
    def _placement(self):
        return self.driver.virtapi.reportclient

    def _load(self, context, instance_uuid):
        try:
            instance = objects.Instance.get_by_uuid(
                context, instance_uuid,
                expected_attrs=['system_metadata', 'flavor'])
        except nova_exception.InstanceNotFound:
            raise exception.InstanceNotHotpluggable(
                instance_uuid=instance_uuid, reason='no such instance')
        if instance.host != self.host:
            raise exception.InstanceNotHotpluggable(
                instance_uuid=instance_uuid,
                reason='it runs on host %s, not on %s' % (instance.host,
                                                          self.host))
        if instance.vm_state != vm_states.ACTIVE or instance.task_state:
            raise exception.InstanceNotHotpluggable(
                instance_uuid=instance_uuid,
                reason='vm_state %s, task_state %s (must be active with no '
                       'task)' % (instance.vm_state, instance.task_state))
        return instance

    def _node(self, context, instance):
        return objects.ComputeNode.get_by_host_and_nodename(
            context, instance.host, instance.node)

    @staticmethod
    def _rollback(instance, undo):
        for what, func in reversed(undo):
            try:
                func()
            except Exception:
                LOG.exception('Hot-plug rollback step "%s" failed; it must '
                              'be cleaned up by hand', what,
                              instance=instance)

    # -- attach ------------------------------------------------------------

    def attach(self, context, instance_uuid, device_profile):
        """Hot-add the accelerators of ``device_profile``.

        :returns: dict ``{"instance_uuid", "device_profile", "arqs":
            [arq uuid], "devices": [device RP uuid], "hostdevs": [XML]}``.
        :raises: HotplugError subclasses, AcceleratorClientError
            subclasses, ARQBindingFailed / ARQBindingTimeout,
            InvalidAttachHandle; nothing is left changed.
        """
        @nova_utils.synchronized(instance_uuid)
        def _locked():
            return self._attach(context, instance_uuid, device_profile)
        return _locked()

    def _grow(self, instance, editor, candidates):
        last = None
        for allocations, rg_rp_map in candidates[:CANDIDATE_ATTEMPTS]:
            try:
                editor.grow(allocations)
                return allocations, rg_rp_map
            except exception.AllocationUpdateFailed as exc:
                # Most likely the device was taken since the GET.
                LOG.info('Candidate %(c)s refused: %(e)s; trying the next',
                         {'c': sorted(allocations), 'e': exc},
                         instance=instance)
                last = exc
        raise last

    def _attach(self, context, instance_uuid, device_profile):
        admin = nova_context.get_admin_context()
        instance = self._load(admin, instance_uuid)
        node = self._node(admin, instance)
        client = self._client_factory(context)
        groups = client.get_request_groups(device_profile)
        candidates = placement.device_candidates(self._placement, groups,
                                                 node.uuid)
        if not candidates:
            raise exception.NoAcceleratorCandidates(
                profile=device_profile, host=instance.host,
                node=node.hypervisor_hostname, instance_uuid=instance_uuid)
        LOG.info('Hot-plugging device profile %(dp)s: %(n)d candidate(s) on '
                 '%(node)s', {'dp': device_profile, 'n': len(candidates),
                              'node': node.hypervisor_hostname},
                 instance=instance)

        editor = placement.AllocationEditor(self._placement, instance_uuid)
        undo = []
        try:
            delta, rg_rp_map = self._grow(instance, editor, candidates)
            undo.append(('shrink allocation', lambda: editor.shrink(delta)))

            arqs = client.create_arqs(device_profile)
            arq_uuids = [a['uuid'] for a in arqs]
            undo.append(('delete ARQs',
                         lambda: client.delete_arqs(arq_uuids)))

            rps = match_arqs_to_providers(arqs, rg_rp_map)
            client.bind_arqs({
                arq_uuid: {'hostname': node.hypervisor_hostname,
                           'device_rp_uuid': rp,
                           'instance_uuid': instance_uuid,
                           'project_id': instance.project_id}
                for arq_uuid, rp in rps.items()})
            bound = waiter.wait_for_bound_arqs(
                self.driver.virtapi, client, instance, arq_uuids,
                timeout=CONF.arq_binding_timeout)

            hostdevs = self.driver.accel_plug(instance, bound)
            undo.append(('unplug devices',
                         lambda: self.driver.accel_unplug(instance, bound)))

            state.record(instance, device_profile,
                         self._entries(arqs, rps, groups))
            instance.save()
        except Exception:
            with excutils.save_and_reraise_exception():
                LOG.warning('Hot-plug of device profile %s failed, rolling '
                            'back', device_profile, instance=instance)
                self._rollback(instance, undo)
        LOG.info('Hot-plugged device profile %(dp)s: ARQs %(arqs)s',
                 {'dp': device_profile, 'arqs': ','.join(arq_uuids)},
                 instance=instance)
        return {'instance_uuid': instance_uuid,
                'device_profile': device_profile,
                'arqs': arq_uuids,
                'devices': [rps[u] for u in arq_uuids],
                'hostdevs': hostdevs}

    # -- detach ------------------------------------------------------------

    def detach(self, context, instance_uuid, device_profile):
        """Hot-remove the accelerators of one attach of ``device_profile``.

        :returns: dict ``{"instance_uuid", "device_profile", "arqs",
            "devices"}`` (what was released).
        :raises: ProfileNotAttached, InstanceNotHotpluggable, and the
            errors of the steps; a failure before the ARQs are deleted
            re-plugs the hostdevs already removed.
        """
        @nova_utils.synchronized(instance_uuid)
        def _locked():
            return self._detach(context, instance_uuid, device_profile)
        return _locked()

    def _detach(self, context, instance_uuid, device_profile):
        admin = nova_context.get_admin_context()
        instance = self._load(admin, instance_uuid)
        attach_id = state.find(instance, device_profile)
        if attach_id is None:
            raise exception.ProfileNotAttached(instance_uuid=instance_uuid,
                                               profile=device_profile)
        entry = state.attachments(instance)[attach_id]
        arq_uuids, delta = entry['arqs'], entry['allocation']
        client = self._client_factory(context)
        known = {a['uuid']: a for a in
                 client.get_arqs_for_instance(instance_uuid)}
        bound = [known[u] for u in arq_uuids
                 if known.get(u, {}).get('state') == arq_states.BOUND]

        # All or nothing: a failure re-plugs what was unplugged.
        self.driver.accel_unplug(instance, bound)
        # The guest no longer has the devices: from here on, go forward.
        client.delete_arqs(arq_uuids)
        if delta:
            placement.AllocationEditor(self._placement,
                                       instance_uuid).shrink(delta)
        state.forget(instance, attach_id)
        instance.save()
        LOG.info('Hot-unplugged device profile %(dp)s: ARQs %(arqs)s',
                 {'dp': device_profile, 'arqs': ','.join(arq_uuids)},
                 instance=instance)
        return {'instance_uuid': instance_uuid,
                'device_profile': device_profile, 'arqs': arq_uuids,
                'devices': sorted(delta)}

    @staticmethod
    def _entries(arqs, rps, groups):
        """``(arq, rp, resources)`` for :func:`state.record`: each request
        group's resources go on its first ARQ (Placement put the whole
        group on that group's provider)."""
        resources_of = {g.requester_id: dict(g.resources) for g in groups}
        seen = set()
        entries = []
        for arq in arqs:
            rp = rps[arq['uuid']]
            rid = requester_id(arq.get('device_profile_group_id') or 0)
            res = None
            if rid not in seen:
                seen.add(rid)
                res = resources_of.get(rid)
            entries.append((arq['uuid'], rp, res))
        return entries
