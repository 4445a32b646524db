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

"""Hot-plug, the compute driver's capability: mixins that serve hot-plug
requests, plug ARQs' devices into running guests and keep hot-plugged
accelerators across the instance's life.

The layers: this module (the driver) depends on :mod:`nova_accel.hotplug`
(the pipeline: Placement, ARQs, system_metadata, RPC), never the reverse.
The pipeline sees the driver only through the narrow interface of
:class:`nova_accel.hotplug.manager.HotplugManager`: ``virtapi``,
``accel_plug(instance, arqs)`` and ``accel_unplug(instance, arqs)``, which
:class:`HotplugDriverMixin` implements over the guest operations each
driver adds (``accel_attach_hostdev``/``accel_detach_hostdev`` of one
composed ``<hostdev>``).

Nova 34 only asks the accelerator service for an instance's ARQs, and only
deletes them, when the flavor has ``accel:device_profile``
(``ComputeManager._get_accel_info``, ``compute.utils.delete_arqs_if_needed``).
Hot-plugged ARQs are recorded in the instance's system_metadata
(:mod:`nova_accel.hotplug.state`), and these mixins make the driver:

* start/stop the hot-plug RPC server in ``init_host``/``cleanup_host``;
* add the instance's hot-plugged, ``Bound`` ARQs of this node to
  ``accel_info`` whenever the guest is (re)built from scratch on this host:
  hard reboot, power on, host boot resume (libvirt ``_hard_reboot``) and
  ``spawn`` (rebuild);
* delete the hot-plugged ARQs when the instance goes away from this host
  for good: delete (``task_state`` ``deleting``, or reclaim of a
  soft-deleted instance) and shelve offload.  Nova frees the Placement
  allocation itself (the whole consumer).

Use them before Nova's driver in the bases:
``class LibvirtDriver(LibvirtHotplugMixin, nova...LibvirtDriver)``.
"""

import functools

from nova.compute import task_states
from nova.compute import vm_states
from nova import exception as nova_exception
from nova.virt.libvirt import config as vconfig
from oslo_log import log as logging
from oslo_utils import excutils

from accel_common import arq_states
from accel_common import pci
import nova_accel.conf
from nova_accel.hotplug import clients
from nova_accel.hotplug import failed_devices
from nova_accel.hotplug import replace
from nova_accel.hotplug import rpc
from nova_accel.hotplug import state
from nova_accel.virt import hostdev
from nova_accel.virt import mdevs

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF

_GONE_TASK_STATES = (task_states.DELETING, task_states.SHELVING_OFFLOADING)
_GONE_VM_STATES = (vm_states.DELETED, vm_states.SOFT_DELETED)


class HotplugDriverMixin(object):
    """Driver-independent part; subclasses add the guest operations
    ``accel_attach_hostdev(instance, element)`` and
    ``accel_detach_hostdev(instance, element)``."""

    _accel_hotplug_server = None
    _accel_failed_watch = None

    def init_host(self, host):
        """Nova's ``ComputeDriver.init_host`` (Nova 34), then start the
        hot-plug RPC server of ``host`` (str, the compute host name)
        when ``[nova_accel] hotplug_enabled``, and the failed-device
        watch when ``[nova_accel] replace_failed``."""
        super().init_host(host)
        manager = replace.ReplaceManager(self, host)
        self._accel_hotplug_server = rpc.start_server(host, manager)
        if CONF.nova_accel.replace_failed:
            self._accel_failed_watch = failed_devices.FailedDeviceWatch(
                manager, host, CONF.nova_accel.replace_failed_interval
            ).start()

    def cleanup_host(self, host):
        """Stop the failed-device watch and the hot-plug RPC server (if
        any), then Nova's ``ComputeDriver.cleanup_host`` (Nova 34)."""
        watch, self._accel_failed_watch = self._accel_failed_watch, None
        if watch is not None:
            watch.stop()
        server, self._accel_hotplug_server = self._accel_hotplug_server, None
        rpc.stop_server(server)
        super().cleanup_host(host)

    def accel_plug(self, instance, arqs):
        """Plug the devices of ``Bound`` ARQs into the running guest and
        its persistent config: all of them or, after unplugging those
        already plugged, none.

        :param instance: ``nova.objects.Instance``.
        :param arqs: list of ARQ dicts (``Bound``, with attach handles).
        :returns: list of the ``<hostdev>`` XML strings plugged.
        :raises InvalidAttachHandle: an ARQ's handle cannot be composed
            (nothing was plugged); what the guest operation raises.
        """
        elements = hostdev.compose_hostdevs(arqs)
        self._accel_each(instance, elements, self.accel_attach_hostdev,
                         self.accel_detach_hostdev, 'unplug')
        return [hostdev.to_string(e) for e in elements]

    def accel_unplug(self, instance, arqs):
        """Unplug the devices of ``arqs`` from the guest: all of them or,
        after re-plugging those already unplugged, none.

        :param instance: ``nova.objects.Instance``.
        :param arqs: list of ARQ dicts (``Bound``, with attach handles).
        :raises: as :meth:`accel_plug`.
        """
        elements = hostdev.compose_hostdevs(arqs)
        self._accel_each(instance, elements, self.accel_detach_hostdev,
                         self.accel_attach_hostdev, 're-plug')

    @staticmethod
    def _accel_each(instance, elements, do, undo, undo_name):
        done = []
        try:
            for elem in elements:
                do(instance, elem)
                done.append(elem)
        except Exception:
            with excutils.save_and_reraise_exception():
                for elem in reversed(done):
                    try:
                        undo(instance, elem)
                    except Exception:
                        LOG.exception('Hot-plug rollback step "%s %s" '
                                      'failed; it must be cleaned up by '
                                      'hand', undo_name,
                                      hostdev.to_string(elem),
                                      instance=instance)

    def _accel_with_hotplugged(self, context, instance, accel_info):
        """``accel_info`` plus the instance's hot-plugged Bound ARQs that
        are bound to this node (deduplicated by UUID).

        :raises: the accelerator client's errors: as Nova fails a reboot
            whose ARQs it cannot read, rather than silently build the
            guest without its devices.
        """
        wanted = state.arq_uuids(instance)
        have = {a.get('uuid') for a in accel_info or []}
        if not wanted or wanted <= have:
            return accel_info
        arqs = clients.accel_client(context).get_arqs_for_instance(
            instance.uuid)
        extra = []
        for arq in arqs:
            uuid = arq.get('uuid')
            if uuid not in wanted or uuid in have:
                continue
            if (arq.get('state') != arq_states.BOUND or
                    arq.get('hostname') != instance.node):
                LOG.warning('Hot-plugged accelerator request %(arq)s is '
                            '%(state)s on %(host)s, not Bound on %(node)s: '
                            'left out of the guest',
                            {'arq': uuid, 'state': arq.get('state'),
                             'host': arq.get('hostname'),
                             'node': instance.node}, instance=instance)
                continue
            extra.append(arq)
        lost = wanted - have - {a['uuid'] for a in extra} - {
            a.get('uuid') for a in arqs}
        if lost:
            LOG.warning('Hot-plugged accelerator requests %s are unknown to '
                        'the accelerator service', ','.join(sorted(lost)),
                        instance=instance)
        if extra:
            LOG.info('Adding hot-plugged accelerator requests %s to the '
                     'guest', ','.join(a['uuid'] for a in extra),
                     instance=instance)
        return list(accel_info or []) + extra

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        """Nova's ``ComputeDriver.spawn`` (Nova 34) with the instance's
        hot-plugged, ``Bound`` ARQs of this node added to ``accel_info``
        (a rebuild keeps them)."""
        accel_info = self._accel_with_hotplugged(context, instance,
                                                 accel_info)
        return super().spawn(context, instance, image_meta, injected_files,
                             admin_password, allocations,
                             network_info=network_info,
                             block_device_info=block_device_info,
                             power_on=power_on, accel_info=accel_info)

    def destroy(self, context, instance, *args, **kwargs):
        """Nova's ``ComputeDriver.destroy`` (Nova 34,
        ``nova/virt/driver.py``; the arguments after ``instance`` pass
        through unchanged), then, when the instance leaves this host for
        good (task state ``deleting`` or ``shelving_offloading``, vm state
        ``deleted`` or ``soft-delete``), delete its hot-plugged ARQs; a
        failure to delete them is logged, never raised.
        """
        super().destroy(context, instance, *args, **kwargs)
        if (state.has_hotplugged(instance) and
                (instance.task_state in _GONE_TASK_STATES or
                 instance.vm_state in _GONE_VM_STATES)):
            self._accel_release_hotplugged(context, instance)

    def _accel_release_hotplugged(self, context, instance):
        arq_uuids = sorted(state.arq_uuids(instance))
        try:
            clients.accel_client(context).delete_arqs(arq_uuids)
        except Exception:
            LOG.exception('Failed to delete hot-plugged accelerator requests '
                          '%s', ','.join(arq_uuids), instance=instance)
            return
        LOG.info('Deleted hot-plugged accelerator requests %s',
                 ','.join(arq_uuids), instance=instance)
        # Saved by Nova's compute manager with the rest of the instance
        # (shelve offload); a deleted instance's record goes anyway.
        state.forget(instance)


def _pci_key(domain, bus, slot, function):
    return ('pci', pci.from_fields(domain, bus, slot, function))


def _element_key(elem):
    """Identity of a composed ``<hostdev>``: PCI address or mdev UUID."""
    addr = elem.find('./source/address')
    if elem.get('type') == 'mdev':
        return ('mdev', addr.get('uuid'))
    return _pci_key(addr.get('domain'), addr.get('bus'), addr.get('slot'),
                    addr.get('function'))


def _config_key(dev):
    if isinstance(dev, vconfig.LibvirtConfigGuestHostdevMDEV):
        return ('mdev', dev.uuid)
    if isinstance(dev, vconfig.LibvirtConfigGuestHostdevPCI):
        try:
            return _pci_key(dev.domain, dev.bus, dev.slot, dev.function)
        except pci.InvalidAddress:
            return None
    return None


class LibvirtHotplugMixin(HotplugDriverMixin):
    """For ``nova.virt.libvirt.driver.LibvirtDriver`` subclasses."""

    def _hard_reboot(self, context, instance, network_info, share_info,
                     block_device_info=None, accel_info=None):
        # Hard reboot, power on and resume on host boot rebuild the domain
        # XML from accel_info: keep the hot-plugged devices in it.
        accel_info = self._accel_with_hotplugged(context, instance,
                                                 accel_info)
        return super()._hard_reboot(context, instance, network_info,
                                    share_info,
                                    block_device_info=block_device_info,
                                    accel_info=accel_info)

    # Nova checks accelerators only for flavors with a device profile, so
    # it would move a server with hot-plugged devices; they would not
    # follow it (their ARQs are bound to this host).  Refuse instead.
    _MOVE_REFUSED = ('server %s has hot-plugged accelerators; detach them '
                     '(nova-accel detach-accelerator) before moving it')

    def check_can_live_migrate_source(self, context, instance,
                                      dest_check_data,
                                      block_device_info=None):
        """Refuse to live-migrate a server with hot-plugged accelerators
        (their ARQs are bound to this host), else Nova's check.

        :raises nova.exception.MigrationPreCheckError: it has some.
        """
        if state.has_hotplugged(instance):
            raise nova_exception.MigrationPreCheckError(
                reason=self._MOVE_REFUSED % instance.uuid)
        return super().check_can_live_migrate_source(
            context, instance, dest_check_data,
            block_device_info=block_device_info)

    def migrate_disk_and_power_off(self, context, instance, dest, flavor,
                                   network_info, block_device_info=None,
                                   timeout=0, retry_interval=0):
        """Refuse to resize or cold-migrate a server with hot-plugged
        accelerators, else Nova's ``migrate_disk_and_power_off``.

        :raises nova.exception.InstanceFaultRollback: it has some (wrapping
            a ``ResizeError``; Nova's compute manager rolls back and the
            server stays ``ACTIVE`` here).
        """
        if state.has_hotplugged(instance):
            # Rolled back by Nova's compute manager: the server stays
            # ACTIVE here with its devices, the resize/migration fails.
            raise nova_exception.InstanceFaultRollback(
                nova_exception.ResizeError(
                    reason=self._MOVE_REFUSED % instance.uuid))
        return super().migrate_disk_and_power_off(
            context, instance, dest, flavor, network_info,
            block_device_info=block_device_info, timeout=timeout,
            retry_interval=retry_interval)

    def accel_plug(self, instance, arqs):
        """Create the mediated devices of the ``MDEV`` ARQs among
        ``arqs`` as a boot does (``_allocate_cyborg_mdevs``), then plug
        every device (``HotplugDriverMixin.accel_plug``).

        :raises InvalidAttachHandle: a handle cannot be composed (nothing
            was created or plugged); what libvirt raises.
        """
        hostdev.compose_hostdevs(arqs)     # refused before creating any
        self._allocate_cyborg_mdevs([a for a in arqs if a.get(
            'attach_handle_type') == hostdev.MDEV])
        return super().accel_plug(instance, arqs)

    def accel_attach_hostdev(self, instance, elem):
        """Plug ``elem`` into the running guest and its persistent config."""
        guest = self._host.get_guest(instance)
        LOG.debug('Hot-plugging %s', hostdev.to_string(elem),
                  instance=instance)
        guest.attach_device(hostdev.HostdevConfig(elem), persistent=True,
                            live=True)

    def accel_plugged(self, instance, arq):
        """Whether the live guest has every device of ``arq`` (an ARQ
        dict with its attach handle)."""
        guest = self._host.get_guest(instance)
        return all(self._accel_find_hostdev(guest, _element_key(elem))
                   for elem in hostdev.compose_hostdevs([arq]))

    def _accel_find_hostdev(self, guest, key, from_persistent_config=False):
        for dev in guest.get_all_devices(
                vconfig.LibvirtConfigGuestHostdev,
                from_persistent_config=from_persistent_config):
            if _config_key(dev) == key:
                if key[0] == 'mdev' and not from_persistent_config and \
                        getattr(dev, 'alias', None) is None:
                    # What Nova's live detach waits for (mdevs.live_alias).
                    dev.alias = mdevs.live_alias(guest.get_xml_desc(), key[1])
                return dev
        return None

    def accel_detach_hostdev(self, instance, elem):
        """Unplug ``elem`` from the live guest (waiting for libvirt's
        device-removed event, with Nova's retries) and the persistent
        config."""
        guest = self._host.get_guest(instance)
        key = _element_key(elem)
        self._detach_with_retry(
            guest, instance.uuid,
            functools.partial(self._accel_find_hostdev, guest, key),
            'accelerator hostdev %s' % hostdev.to_string(elem))


class FakeHotplugMixin(HotplugDriverMixin):
    """For ``nova_accel.virt.fake.FakeDriver`` (records hostdev XML)."""

    def accel_attach_hostdev(self, instance, elem):
        """Record ``elem``'s XML among the fake guest's hostdevs."""
        self.guest_hostdevs.setdefault(instance.uuid, []).append(
            hostdev.to_string(elem))

    def accel_plugged(self, instance, arq):
        """Whether the fake guest has every device of ``arq``."""
        devs = self.guest_hostdevs.get(instance.uuid, [])
        return all(hostdev.to_string(elem) in devs
                   for elem in hostdev.compose_hostdevs([arq]))

    def accel_detach_hostdev(self, instance, elem):
        """Forget ``elem``'s XML from the fake guest's hostdevs (no-op
        when it is not there)."""
        xml = hostdev.to_string(elem)
        devs = self.guest_hostdevs.get(instance.uuid, [])
        if xml in devs:
            devs.remove(xml)
