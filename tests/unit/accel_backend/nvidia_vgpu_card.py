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
"""

import os

import fixtures

from accel_backend.agent.discovery import nvidia_vfio

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
            card.refresh()
        self.useFixture(fixtures.MonkeyPatch(
            'accel_backend.agent.discovery.nvidia_vfio._write', write))


def h100_cards(root):
    """The two cards of the ``h100-vgpu-vfio`` tree under ``root``."""
    return [Card(root, '0000:41:00.0',
                 ['0000:41:00.%d' % i for i in range(4, 8)], 1051),
            Card(root, '0000:c1:00.0',
                 ['0000:c1:00.%d' % i for i in range(4, 8)], 2051)]
