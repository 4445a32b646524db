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

"""Mediated devices (vGPUs and the like) of mdev-capable PCI functions.

A physical GPU is never sold twice.  The mdev types of one GPU share its
framebuffer: creating a device of one type lowers the other types'
``available_instances``, down to 0, and NVIDIA GPUs run one type at a
time.  Reporting each type as a provider with its full capacity would let
Placement hand out 16 + 8 + 1 vGPUs of one T4.  So, as Nova's libvirt
driver does (Nova 34, ``nova/conf/devices.py``: ``[devices]
enabled_mdev_types`` and ``[mdev_<type>] device_addresses`` /
``max_instances``), each physical GPU offers exactly one type, chosen by
the operator:

* ``[discovery] mdev_types`` lists the enabled types (empty: no vGPU is
  reported, with a warning);
* ``[mdev_<type>] device_addresses`` (PCI address patterns in the string
  form of Nova's ``[pci] device_spec`` address, ``accel_common.pci``:
  ``0000:41:00.0``, ``0000:41:*``; former shell globs still work, with a
  deprecation warning) gives a type the GPUs it applies to; a GPU matched
  by no list gets the first enabled type that has no
  ``device_addresses``, else none; a pattern in two lists is a
  configuration error, and so is one outside the dialect;
* ``[mdev_<type>] max_instances`` caps the devices of that type per GPU.

Two layouts exist.  Before Ampere the PF holds ``mdev_supported_types``
(T4, V100): one provider per PF, capacity ``available_instances`` plus
the devices of that type already created.  Ampere and Hopper GPUs (A100,
H100) offer the types on their SR-IOV VFs, each VF holding at most one
vGPU and showing ``available_instances`` 1 until the GPU is full: one
provider per physical GPU (named after its PF) whose attach handles are
its VFs, capacity the GPU's maximum for the type (``max_instances``, else
``max_instance=`` of the type's ``description``) and never more than the
VFs that offer it; without a known maximum the GPU is not reported.

A GPU in MIG mode (its VFs offer MIG-backed types, ``mig.vgpu_types``)
offers every enabled MIG-backed type that ``[mdev_<type>]
device_addresses`` does not keep for other GPUs: one deployable per type
(subname the type id), resource class ``CUSTOM_MIG_SLICE`` with the
slice's traits (``mig.traits``) and ``CUSTOM_MDEV_<TYPE>``, its attach
handles the VFs ``drivers.mdev_mig`` gives the type, as many as the GPU
has GPU instances of its profile (counted with ``[discovery]
nvidia_smi_path``).  A GPU whose model has no MIG table, or whose GPU
instances cannot be listed, is not offered (warned).

Parents that are not PCI functions (the kernel's ``mtty`` sample) are
read from ``[discovery] mdev_bus_path`` and offered one type each as a
GPU is (``drivers.mdev_virtual``); ``[mdev_<type>] device_addresses``
names them as libvirt does (``mtty_mtty``).
"""

from oslo_log import log as logging

from accel_backend.agent.discovery.drivers import base
from accel_backend.agent.discovery.drivers import mdev_mig
from accel_backend.agent.discovery.drivers import mdev_virtual
from accel_backend.agent.discovery import mdev_bus
from accel_backend.agent.discovery import sysfs
from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import profiles as mig_profiles
from accel_backend.agent.mig import traits as mig_traits
from accel_backend.conf import discovery as discovery_conf
from accel_backend import exception
from accel_common import pci

LOG = logging.getLogger(__name__)


def register_type_opts(conf, type_ids):
    """Register ``[mdev_<type>] device_addresses`` and ``max_instances``
    (``accel_backend.conf.discovery.MDEV_TYPE_OPTS``) for each enabled
    type (groups named after runtime values, as Nova's
    ``register_dynamic_opts`` does); registering twice is harmless."""
    for type_id in type_ids:
        conf.register_opts(discovery_conf.MDEV_TYPE_OPTS,
                           group=discovery_conf.mdev_type_group(type_id))


class MdevDriver(base.PCIDriverBase):
    """One deployable per physical GPU, of its one enabled mdev type.

    Resource class ``[discovery] mdev_resource_class`` (VGPU).  Each unit
    is an ``MDEV`` attach handle whose info names the parent function
    (``parent`` and its domain/bus/device/function) and the
    ``asked_type``; the handle's UUID is the UUID the virt driver gives
    the mediated device.  Traits: ``CUSTOM_MDEV_<TYPE>``, the parent's
    vendor/product and NUMA traits.  See the module docstring for how a
    GPU's type and capacity are chosen.

    :param conf: accel_backend ``ConfigOpts``.
    :raises ValueError: ``[cleaning] methods`` asks for ``flr``, or one
        pattern is listed for two types, or (``InvalidPattern``, naming
        the option) one is not an address pattern.
    """

    name = 'mdev'
    # A mediated device has an IOMMU group of its own.
    assigns_iommu_group = False

    def __init__(self, conf):
        super().__init__(conf)
        if self.cleaning == 'flr':
            # A reset of the parent would wipe every tenant's mdev on it.
            raise ValueError('[cleaning] methods: flr cannot clean one '
                             'mediated device; use command or none for '
                             'the mdev driver')
        self.resource_class = conf.discovery.mdev_resource_class
        self.enabled = list(conf.discovery.mdev_types)
        register_type_opts(conf, self.enabled)
        self.addresses = {t: list(conf['mdev_%s' % t].device_addresses)
                          for t in self.enabled}
        # Virtual parents by name (``mtty_mtty``), GPUs by PCI pattern.
        self.parent_names = {t: {p for p in patterns
                                 if mdev_bus.is_parent_name(p)}
                             for t, patterns in self.addresses.items()}
        self.patterns = {
            t: [pci.compile_pattern(p, '[mdev_%s] device_addresses' % t,
                                    legacy_globs=True) for p in patterns
                if p not in self.parent_names[t]]
            for t, patterns in self.addresses.items()}
        self.mdev_bus = conf.discovery.mdev_bus_path or \
            mdev_bus.default_path(self.root)
        self.max_instances = {t: conf['mdev_%s' % t].max_instances
                              for t in self.enabled}
        seen = {}
        for type_id, patterns in self.addresses.items():
            for pattern in patterns:
                if pattern in seen:
                    raise ValueError(
                        '[mdev_%s] and [mdev_%s] device_addresses both '
                        'list %s: a GPU offers one type' %
                        (seen[pattern], type_id, pattern))
                seen[pattern] = type_id
        self.default_type = next(
            (t for t in self.enabled if not self.addresses[t]), None)
        self.nvidia_smi = conf.discovery.nvidia_smi_path
        self._warned = set()

    def _warn_once(self, key, msg, *args):
        (LOG.debug if key in self._warned else LOG.warning)(msg, *args)
        self._warned.add(key)

    def type_for(self, addresses):
        """The enabled type of the GPU whose functions are ``addresses``
        (its PF first, then its VFs), or None."""
        for type_id in self.enabled:
            if any(p.matches(a) for a in addresses
                   for p in self.patterns[type_id]):
                return type_id
        return self.default_type

    def parent_type(self, name):
        """The enabled type of the virtual parent ``name`` (``mtty_mtty``),
        or None."""
        return next((t for t in self.enabled if name in
                     self.parent_names[t]), self.default_type)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``: the GPUs' by
        address, then the virtual parents' by name."""
        return self._gpus() + mdev_virtual.deployables(
            self.mdev_bus, self.parent_type, self.max_instances,
            self.resource_class, self.cleaning, self._warn_once)

    def _gpus(self):
        functions = self.functions()
        by_address = {fn.address: fn for fn in functions}
        gpus = {}
        for fn in functions:
            types = sysfs.mdev_types(self.root, fn.address)
            if types:
                gpu = by_address.get(fn.physfn, fn) if fn.physfn else fn
                gpus.setdefault(gpu.address, (gpu, []))[1].append(
                    (fn, {t.type_id: t for t in types}))
        if gpus and not self.enabled:
            self._warn_once(None, 'The mdev driver found mdev-capable GPUs '
                            '(%s) but [discovery] mdev_types enables no '
                            'type: no vGPU is reported', ', '.join(gpus))
            return []
        found = []
        for address, (gpu, parents) in sorted(gpus.items()):
            if self.refused(gpu):
                continue
            if mdev_mig.in_mig_mode(parents):
                found.extend(self._mig_gpu(gpu, parents))
                continue
            dep = self._gpu(gpu, parents)
            if dep is not None:
                found.append(dep)
        return found

    def _gpu(self, gpu, parents):
        """The deployable of one physical GPU, or None (logged)."""
        type_id = self.type_for([gpu.address] + [fn.address
                                                 for fn, _ in parents])
        offered = [(fn, types[type_id]) for fn, types in parents
                   if type_id in types]
        if type_id is None or not offered:
            self._warn_once(gpu.address, 'GPU %s offers mdev types %s; '
                            'none of them is enabled for it ([discovery] '
                            'mdev_types, [mdev_<type>] device_addresses)',
                            gpu.address, sorted({t for _, types in parents
                                                 for t in types}))
            return None
        capacity = self._capacity(gpu, type_id, offered)
        if capacity is None:
            return None
        if len(offered) == 1 and offered[0][0] is gpu:
            fn, mtype = offered[0]
            marks = [(fn, '%s_%d' % (type_id, i))
                     for i in range(mtype.capacity)]
        else:
            # One unit per VF that can hold one, those holding one first
            # (they must stay among the first ``capacity``).
            marks = [(fn, '%s_%s' % (type_id, fn.address)) for fn, mtype
                     in sorted(offered, key=lambda o: (not o[1].created,
                                                       o[0].address))
                     if mtype.capacity]
        handles = [('MDEV', dict(fn.address_parts, parent=fn.address,
                                 asked_type=type_id, vgpu_mark=mark))
                   for fn, mark in marks]
        info = base.board_info(gpu, mdev_types={
            t.type_id: {'name': t.name, 'device_api': t.device_api}
            for t in parents[0][1].values()})
        return self.deployable(
            gpu, device_type='GPU' if gpu.class_code.startswith('03')
            else 'OTHER', resource_class=self.resource_class,
            traits={mdev_virtual.type_trait(type_id)} | base.pci_traits(gpu),
            attach_handles=handles[:capacity], subname=type_id,
            std_board_info=info)

    def _mig_gpu(self, gpu, parents):
        """The deployables of a GPU in MIG mode (list; empty when not
        offered, warned)."""
        addresses = [gpu.address] + [fn.address for fn, _ in parents]
        mine = [t for t in self.enabled if not self.addresses[t] or any(
            p.matches(a) for a in addresses for p in self.patterns[t])]
        profiles = mdev_mig.type_profiles(parents, mine)
        if not profiles:
            return []
        try:
            model = mig_profiles.model_for_pci(gpu.vendor_id, gpu.product_id)
            instances = mig_host.instances_at(gpu.address, model,
                                              binary=self.nvidia_smi)
        except (exception.MigModelUnknown,
                exception.MigCommandFailed) as e:
            self._warn_once(('mig', gpu.address), 'GPU %s is in MIG mode; '
                            'its MIG-backed vGPUs are not offered: %s',
                            gpu.address, e)
            return []
        found = []
        for type_id, fns in mdev_mig.slice_functions(
                parents, profiles, instances).items():
            try:
                traits = mig_traits.slice_traits(model, profiles[type_id])
            except KeyError:
                self._warn_once(('profile', gpu.address, type_id), 'GPU %s: '
                                'mdev type %s runs on MIG %s, no profile of '
                                'the %s: not offered', gpu.address, type_id,
                                profiles[type_id], model)
                continue
            handles = [('MDEV', dict(fn.address_parts, parent=fn.address,
                                     asked_type=type_id,
                                     vgpu_mark='%s_%s' % (type_id,
                                                          fn.address)))
                       for fn in fns]
            info = base.board_info(gpu, mig_profile=profiles[type_id])
            found.append(self.deployable(
                gpu, device_type='GPU', resource_class=mig_traits.SLICE_RC,
                traits=traits | {mdev_virtual.type_trait(type_id)} |
                base.pci_traits(gpu),
                attach_handles=handles, subname=type_id,
                std_board_info=info))
        return found

    def _capacity(self, gpu, type_id, offered):
        """Devices of ``type_id`` the GPU can hold now, or None when it is
        not known (VF layout without a maximum; logged)."""
        cap = self.max_instances[type_id]
        if len(offered) == 1 and offered[0][0] is gpu:
            total = offered[0][1].capacity
            return total if cap is None else min(total, cap)
        # VF layout: one device per VF, the GPU's maximum overall.
        if cap is None:
            cap = next((t.max_instance for _, t in offered
                        if t.max_instance), None)
        if cap is None:
            self._warn_once(gpu.address, 'GPU %s offers mdev type %s on '
                            'its VFs, but neither [mdev_%s] max_instances '
                            'nor the type\'s description says how many one '
                            'GPU holds: not reported', gpu.address, type_id,
                            type_id)
            return None
        usable = [t for _, t in offered if t.capacity]
        return min(len(usable), cap)
