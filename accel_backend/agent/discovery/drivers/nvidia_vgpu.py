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

"""NVIDIA vGPUs on SR-IOV VFs: the vendor-specific VFIO framework.

For NVIDIA vGPU 17+ on Ada, Hopper and newer GPUs, where there are no
mediated devices (``agent.discovery.nvidia_vfio`` has the sysfs files).  Each
physical GPU with VFs enabled is one deployable and one resource provider
(named after its PF) of resource class ``VGPU`` with the trait
``CUSTOM_VGPU_<PROFILE>`` (``NVIDIA H100-40C`` ->
``CUSTOM_VGPU_NVIDIA_H100_40C``).  Its attach handles are the VFs that
carry the GPU's profile: ``PCI`` handles with ``managed = no`` and
``vgpu_profile`` in their info, which ``nova_accel``'s composer turns into
``<hostdev managed='no'>`` (the VF stays on ``nvidia``).

As NVIDIA's vGPU device manager does, a pass gives free VFs the GPU's
profile (``[nvidia_vgpu] configure_vfs``) until the card's own
``creatable_vgpu_types`` no longer lists it, so the inventory is exactly
what the card holds and Placement never over-commits it.  A VF that
carries another profile is not offered (warned once).  Type ids are the
card's and a full card lists none, so every id -> name pair seen is
checkpointed in ``$state_path/nvidia-vgpu-types.json`` before it is
relied on: after a restart on a full card the VFs are still named.
Released VFs are cleaned with ``vgpu``: their vGPU is destroyed and a
fresh one created (``agent.cleaning.worker.run_method``).

A GPU in MIG mode (its VFs list or carry MIG-backed types,
``mig.vgpu_types``) sells MIG slices instead: one deployable per
MIG-backed type of ``[nvidia_vgpu] profiles`` its VFs carry (subname
the type's table name), resource class ``CUSTOM_MIG_SLICE`` with the
slice's traits (``mig.traits``: profile, GPU model, memory) and
``CUSTOM_VGPU_<TYPE>``, its VFs of that type as attach handles.  A pass
gives free VFs each enabled MIG-backed type, in the order listed, while
the card lists it, that is while a free GPU instance of its profile
exists: the inventory is the GPU instances the host has carved, and a
MIG slice is never sold twice nor the GPU whole.  A GPU whose model has
no MIG table here (``mig.profiles``) is not offered (warned).
"""

import json
import os

import os_traits
from oslo_log import log as logging

from accel_backend.agent.discovery.drivers import base
from accel_backend.agent.discovery import nvidia_vfio
from accel_backend.agent.mig import profiles as mig_profiles
from accel_backend.agent.mig import traits as mig_traits
from accel_backend.agent.mig import vgpu_types
from accel_backend import exception

LOG = logging.getLogger(__name__)
VENDOR = '10de'
CHECKPOINT = 'nvidia-vgpu-types.json'


def profile_trait(profile):
    """``CUSTOM_VGPU_<PROFILE>`` (``os_traits.normalize_name``)."""
    return os_traits.normalize_name('VGPU_' + profile)


class NvidiaVGPUDriver(base.PCIDriverBase):
    """See the module docstring.

    :param conf: accel_backend ``ConfigOpts`` (``[nvidia_vgpu]``,
        ``[DEFAULT] state_path``).
    """

    name = 'nvidia_vgpu'

    def __init__(self, conf):
        super().__init__(conf)
        self.profiles = list(conf.nvidia_vgpu.profiles)
        self.configure = conf.nvidia_vgpu.configure_vfs
        self.checkpoint_path = os.path.join(conf.state_path, CHECKPOINT)
        self._names = self._load()
        self._warned = set()

    def _warn_once(self, key, msg, *args):
        (LOG.debug if key in self._warned else LOG.warning)(msg, *args)
        self._warned.add(key)

    def _load(self):
        try:
            with open(self.checkpoint_path) as f:
                raw = json.load(f)
        except (OSError, ValueError):
            return {}
        return {pf: {int(i): n for i, n in ids.items()}
                for pf, ids in raw.items()}

    def _learn(self, pf, catalog):
        """Checkpoint the id -> name pairs of ``pf``'s card (atomic
        rename) before they are used."""
        known = self._names.setdefault(pf, {})
        if all(known.get(i) == n for i, n in catalog.items()):
            return
        known.update(catalog)
        tmp = self.checkpoint_path + '.tmp'
        os.makedirs(os.path.dirname(self.checkpoint_path), exist_ok=True)
        with open(tmp, 'w') as f:
            json.dump({p: {str(i): n for i, n in ids.items()}
                       for p, ids in self._names.items()}, f, indent=1)
        os.replace(tmp, self.checkpoint_path)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, by PF address."""
        functions = self.functions()
        by_address = {fn.address: fn for fn in functions}
        gpus = {}
        for fn in functions:
            if (fn.physfn and fn.vendor_id == VENDOR and
                    nvidia_vfio.has_vgpu_files(self.root, fn.address)):
                gpus.setdefault(fn.physfn, []).append(fn)
        found = []
        for pf_address, vfs in sorted(gpus.items()):
            pf = by_address.get(pf_address)
            if pf is None or self.refused(pf):
                continue
            found.extend(self._gpu(pf, sorted(vfs,
                                              key=lambda v: v.address)))
        return found

    def _gpu(self, pf, vfs):
        """The deployables of one GPU (list; empty when not offered,
        logged)."""
        catalog = {}
        for vf in vfs:
            catalog.update(nvidia_vfio.creatable(self.root, vf.address))
        self._learn(pf.address, catalog)
        names = self._names.get(pf.address, {})
        carried = {names.get(nvidia_vfio.current(self.root, vf.address))
                   for vf in vfs}
        if any(vgpu_types.mig_profile(n) for n in
               (carried | set(catalog.values())) - {None}):
            return self._mig_gpu(pf, vfs, names)
        dep = self._time_sliced(pf, vfs, catalog, names, carried)
        return [] if dep is None else [dep]

    def _time_sliced(self, pf, vfs, catalog, names, carried):
        """The deployable of a GPU not in MIG mode, or None (logged)."""
        # A card runs one profile at a time: the one its VFs carry, else
        # the first enabled one it can create now.
        profile = next((p for p in self.profiles if p in carried), None)
        if profile is None and not carried - {None}:
            creatable = set(catalog.values())
            profile = next((p for p in self.profiles if p in creatable),
                           None)
        if profile is None and not (carried | set(catalog.values())) - {
                None}:
            self._warn_once(pf.address, 'GPU %s: no VF lists or carries a '
                            'vGPU type (a GPU in MIG mode without a free '
                            'GPU instance, or a full one): not offered',
                            pf.address)
            return None
        if profile is None:
            self._warn_once(pf.address, 'GPU %s offers the vGPU profiles '
                            '%s; [nvidia_vgpu] profiles enables none of '
                            'them: not offered', pf.address,
                            sorted((carried | set(catalog.values())) -
                                   {None}))
            return None
        if self.configure:
            self._configure(pf, vfs, profile)
        handles = []
        for vf in vfs:
            type_id = nvidia_vfio.current(self.root, vf.address)
            if not type_id:
                continue
            name = names.get(type_id)
            if name != profile:
                self._warn_once(vf.address, 'VF %s of GPU %s carries vGPU '
                                'type %s (%s), not %s: not offered',
                                vf.address, pf.address, type_id,
                                name or 'unknown', profile)
                continue
            handles.append(('PCI', dict(vf.address_parts, managed='no',
                                        vgpu_profile=profile)))
        if not handles:
            self._warn_once(('none', pf.address), 'GPU %s: no VF carries '
                            'its vGPU profile %s%s: not offered',
                            pf.address, profile, '' if self.configure else
                            ' ([nvidia_vgpu] configure_vfs is false)')
            return None
        info = base.board_info(pf, vgpu_profile=profile, vfs=len(vfs))
        return self.deployable(
            pf, device_type='GPU', resource_class='VGPU',
            traits={profile_trait(profile)} | base.pci_traits(pf),
            attach_handles=handles, std_board_info=info)

    def _mig_gpu(self, pf, vfs, names):
        """The deployables of a GPU in MIG mode: one per enabled
        MIG-backed type its VFs carry (list)."""
        try:
            model = mig_profiles.model_for_pci(pf.vendor_id, pf.product_id)
        except exception.MigModelUnknown:
            self._warn_once(('model', pf.address), 'GPU %s (%s:%s) is in '
                            'MIG mode and no MIG table here has its model: '
                            'its MIG-backed vGPUs are not offered',
                            pf.address, pf.vendor_id, pf.product_id)
            return []
        enabled = [p for p in self.profiles if vgpu_types.mig_profile(p)]
        if self.configure:
            for profile in enabled:
                self._configure(pf, vfs, profile)
        carrying = {}
        for vf in vfs:
            type_id = nvidia_vfio.current(self.root, vf.address)
            if not type_id:
                continue
            name = names.get(type_id)
            if name not in enabled:
                self._warn_once(vf.address, 'VF %s of GPU %s carries vGPU '
                                'type %s (%s), which [nvidia_vgpu] profiles '
                                'does not enable: not offered', vf.address,
                                pf.address, type_id, name or 'unknown')
                continue
            carrying.setdefault(name, []).append(vf)
        return [dep for dep in (self._slices(pf, model, name, carrying[name],
                                             len(vfs))
                                for name in enabled if name in carrying)
                if dep is not None]

    def _slices(self, pf, model, name, vfs, vf_count):
        """The deployable of the VFs ``vfs`` of ``pf`` carrying the
        MIG-backed type ``name``, or None when it is no profile of the
        GPU's ``model`` (warned)."""
        mig = vgpu_types.mig_profile(name)
        try:
            traits = mig_traits.slice_traits(model, mig)
        except KeyError:
            self._warn_once(('profile', pf.address, name), 'GPU %s: vGPU '
                            'type %s runs on MIG %s, which is no profile of '
                            'the %s: not offered', pf.address, name, mig,
                            model)
            return None
        handles = [('PCI', dict(vf.address_parts, managed='no',
                                vgpu_profile=name)) for vf in vfs]
        info = base.board_info(pf, vgpu_profile=name, mig_profile=mig,
                               vfs=vf_count)
        return self.deployable(
            pf, device_type='GPU', resource_class=mig_traits.SLICE_RC,
            traits=traits | {profile_trait(name)} | base.pci_traits(pf),
            attach_handles=handles, std_board_info=info,
            subname=vgpu_types.table_name(name))

    def _configure(self, pf, vfs, profile):
        """Give free VFs ``profile`` while the card can create it."""
        for vf in vfs:
            if nvidia_vfio.current(self.root, vf.address) != 0:
                continue
            creatable = nvidia_vfio.creatable(self.root, vf.address)
            if profile not in creatable.values():
                return
            self._learn(pf.address, creatable)
            try:
                type_id = nvidia_vfio.set_profile(self.root, vf.address,
                                                  profile)
            except nvidia_vfio.VGPUTypeError as e:
                self._warn_once(('set', vf.address), 'GPU %s: %s',
                                pf.address, e)
                return
            LOG.info('Gave VF %s of GPU %s the vGPU profile %s (type %d)',
                     vf.address, pf.address, profile, type_id)
