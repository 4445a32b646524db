#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS,
#    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#    See the License for the specific language governing permissions and
#    limitations under the License.
"""What NVIDIA's driver shows in a VF's ``nvidia/`` directory under the
vendor-specific VFIO framework, for the test trees (the system boundary
of ``accel_backend.agent.discovery.nvidia_vfio``).

Rules, from NVIDIA's vGPU user guide and the kubevirt-gpu-device-plugin
README: a time-sliced GPU runs vGPUs of one framebuffer size at a time,
so once a VF carries a type, the free VFs list only that type, while the
card can hold more; a full card lists the header alone; type ids are the
card's own.  The maxima are those of the H100 PCIe 80GB C-series
profiles; the ids are illustrative (each card numbers them from its own
``first_id``).

``MigCard``: the same files for a GPU in MIG mode, its GPU instances in
a ``mig.host.SimulatedMigHost``: a free VF lists the MIG-backed types
(NVIDIA's vGPU types reference, "Hopper Architecture vGPU Types", the
H200 SXM5 141GB table) whose profile has a GPU instance no vGPU holds,
and a vGPU takes one of them (the lowest start) until it is destroyed.
"""

import os

import fixtures

from accel_backend.agent.discovery import nvidia_vfio
from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import vgpu_types

HEADER = 'ID    : vGPU Name'
#: ``(profile name, most per card)`` of an H100 PCIe 80GB.
H100_PROFILES = (('NVIDIA H100-80C', 1), ('NVIDIA H100-40C', 2),
                 ('NVIDIA H100-20C', 4), ('NVIDIA H100-10C', 8))


class Card:
    """One GPU: ``pf`` with VFs ``vfs`` under ``root``; ids from
    ``first_id`` in ``H100_PROFILES`` order."""

    def __init__(self, root, pf, vfs, first_id):
        self.root, self.pf, self.vfs = root, pf, list(vfs)
        self.ids = {first_id + i: (name, most)
                    for i, (name, most) in enumerate(H100_PROFILES)}

    def _current(self, vf):
        return nvidia_vfio.current(self.root, vf) or 0

    def creatable(self):
        """``{id: name}`` a free VF of the card lists now."""
        used = [self._current(vf) for vf in self.vfs]
        used = [u for u in used if u]
        if not used:
            return {i: n for i, (n, _) in self.ids.items()}
        kind = used[0]
        name, most = self.ids[kind]
        return {kind: name} if len(used) < most else {}

    def refresh(self):
        """Rewrite every VF's ``creatable_vgpu_types`` (a VF that carries
        a type lists nothing more)."""
        free = self.creatable()
        for vf in self.vfs:
            lines = [HEADER]
            if not self._current(vf):
                lines += ['%d  : %s' % (i, n) for i, n in sorted(free.items())]
            with open(os.path.join(self.root, vf, 'nvidia',
                                   'creatable_vgpu_types'), 'w') as f:
                f.write('\n'.join(lines) + '\n')

    def written(self, vf, value):
        """The driver took ``value`` (a type id, 0: destroyed) on
        ``vf``: every VF's list follows."""
        self.refresh()

    def write_vfs(self, current=None):
        """Create the ``nvidia/`` files; ``current``: ``{vf: type id}``."""
        for vf in self.vfs:
            os.makedirs(os.path.join(self.root, vf, 'nvidia'), exist_ok=True)
            with open(os.path.join(self.root, vf, 'nvidia',
                                   'current_vgpu_type'), 'w') as f:
                f.write('%d\n' % (current or {}).get(vf, 0))
        self.refresh()


class DriverFixture(fixtures.Fixture):
    """Makes ``current_vgpu_type`` writes behave as NVIDIA's driver
    does: a type the VF does not list is refused (EINVAL), a VF that
    carries a type refuses another, and the cards' lists follow."""

    def __init__(self, cards):
        self.cards = cards

    def _setUp(self):
        real = nvidia_vfio._write

        def write(root, address, value):
            card = next(c for c in self.cards if address in c.vfs)
            now = nvidia_vfio.current(root, address)
            if value and (now or value not in card.creatable()):
                raise nvidia_vfio.VGPUTypeError(
                    'writing %d to the current_vgpu_type of %s failed: '
                    '[Errno 22] Invalid argument' % (value, address))
            real(root, address, value)
            card.written(address, value)
        self.useFixture(fixtures.MonkeyPatch(
            'accel_backend.agent.discovery.nvidia_vfio._write', write))


#: The MIG-backed types of an H200 SXM5 141GB, largest first.
H200_MIG_TYPES = ('NVIDIA H200X-7-141C', 'NVIDIA H200X-4-71C',
                  'NVIDIA H200X-3-71C', 'NVIDIA H200X-2-35C',
                  'NVIDIA H200X-1-35C', 'NVIDIA H200X-1-18C',
                  'NVIDIA H200X-1-18CME')


class MigCard(Card):
    """A GPU in MIG mode: GPU ``gpu`` of ``host`` (a
    ``SimulatedMigHost``), type ids from ``first_id`` in ``types``
    order."""

    def __init__(self, root, pf, vfs, first_id, host, gpu,
                 types=H200_MIG_TYPES):
        self.root, self.pf, self.vfs = root, pf, list(vfs)
        self.host, self.gpu = host, gpu
        self.ids = {first_id + i: (name, None)
                    for i, name in enumerate(types)}
        #: ``{vf: GI id}`` of the vGPUs.
        self.taken = {}

    def free_instances(self):
        """The GIs (``GpuInstance``) no vGPU holds, by start."""
        held = set(self.taken.values())
        return [gi for gi in self.host.instances(self.gpu)
                if gi.id not in held]

    def creatable(self):
        free = {gi.profile for gi in self.free_instances()}
        return {i: n for i, (n, _) in self.ids.items()
                if vgpu_types.mig_profile(n) in free}

    def written(self, vf, value):
        if value:
            profile = vgpu_types.mig_profile(self.ids[value][0])
            self.taken[vf] = next(gi.id for gi in self.free_instances()
                                  if gi.profile == profile)
        else:
            self.taken.pop(vf, None)
        self.refresh()

    def write_vfs(self, current=None):
        super().write_vfs(current)
        for vf, value in sorted((current or {}).items()):
            self.written(vf, value)


def h200_mig_cards(root, host):
    """The two cards of the ``h200-mig-vgpu-vfio`` tree under ``root``,
    GPUs 0 and 1 of ``host``."""
    def vfs(pf):
        return ['%s:%02x.%d' % (pf[:-5], (4 + i) // 8, (4 + i) % 8)
                for i in range(8)]
    return [MigCard(root, pf, vfs(pf), first, host, gpu)
            for gpu, (pf, first) in enumerate((('0000:41:00.0', 1101),
                                               ('0000:c1:00.0', 2101)))]


def h200_mig_host():
    """The GPU instances of the ``h200-mig-vgpu-vfio`` tree: GPU 0 (at
    0000:41:00.0) carved into a 2g.35gb, two 1g.18gb and a 3g.71gb;
    GPU 1 (at 0000:c1:00.0) in MIG mode without any."""
    host = mig_host.SimulatedMigHost({0: 'H200-SXM5-141GB',
                                      1: 'H200-SXM5-141GB'})
    for profile, start in (('2g.35gb', 0), ('1g.18gb', 2), ('1g.18gb', 3),
                           ('3g.71gb', 4)):
        host.create(0, profile, start)
    return host


def h100_cards(root):
    """The two cards of the ``h100-vgpu-vfio`` tree under ``root``."""
    return [Card(root, '0000:41:00.0',
                 ['0000:41:00.%d' % i for i in range(4, 8)], 1051),
            Card(root, '0000:c1:00.0',
                 ['0000:c1:00.%d' % i for i in range(4, 8)], 2051)]
