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

"""MIG-backed vGPU types as mdev types on SR-IOV VFs (Ampere: A100 with
the mdev-based NVIDIA vGPU releases): which VFs sell which slice.

Each VF holds at most one vGPU.  On a GPU in MIG mode a free VF shows
``available_instances`` 1 for every MIG-backed type whose profile has a
free GPU instance (GI), however many such GIs there are, so sysfs alone
would over-sell; the GIs are counted with ``nvidia-smi``
(``mig.host.instances_at``).  A type of profile P is then sold on the
VFs that hold a vGPU of it, plus as many free VFs offering it as there
are GIs of P not taken by those vGPUs; a free VF goes to one type only
(the first enabled one it is needed for), so no VF is sold twice.
"""

import collections

from accel_backend.agent.mig import vgpu_types


def in_mig_mode(parents):
    """True when the GPU's types (``parents``: list of ``(function,
    {type id: sysfs.MdevType})``) include a MIG-backed one."""
    return any(vgpu_types.mig_profile(t.name)
               for _, types in parents for t in types.values())


def type_profiles(parents, type_ids):
    """``{type id: MIG profile}`` of the MIG-backed ``type_ids`` (list
    of str) that the GPU's functions offer, in ``type_ids``' order."""
    names = {}
    for _, types in parents:
        for type_id, mtype in types.items():
            names.setdefault(type_id, mtype.name)
    found = collections.OrderedDict()
    for type_id in type_ids:
        profile = vgpu_types.mig_profile(names.get(type_id, ''))
        if profile:
            found[type_id] = profile
    return found


def slice_functions(parents, profiles, instances):
    """The VFs that sell each type: ``{type id: [function, ...]}``, the
    VFs holding a vGPU of it first, then free ones, by address; types
    with none are left out.

    :param parents: as for ``in_mig_mode``.
    :param profiles: ``type_profiles``' answer.
    :param instances: the GPU's GIs (list of ``mig.host.GpuInstance``).
    """
    holder = {}
    for fn, types in parents:
        for type_id, mtype in types.items():
            if mtype.created:
                holder[fn.address] = type_id
    gis = collections.Counter(gi.profile for gi in instances)
    held_per_profile = collections.Counter(
        profiles[t] for t in holder.values() if t in profiles)
    free = sorted((fn for fn, _ in parents if fn.address not in holder),
                  key=lambda fn: fn.address)
    offers = {fn.address: types for fn, types in parents}
    chosen = {}
    for type_id, profile in profiles.items():
        held = sorted((fn for fn, _ in parents
                       if holder.get(fn.address) == type_id),
                      key=lambda fn: fn.address)
        room = max(0, gis[profile] - held_per_profile[profile])
        taken = [fn for fn in free
                 if type_id in offers[fn.address] and
                 offers[fn.address][type_id].available_instances][:room]
        held_per_profile[profile] += len(taken)
        free = [fn for fn in free if fn not in taken]
        if held or taken:
            chosen[type_id] = held + taken
    return chosen
