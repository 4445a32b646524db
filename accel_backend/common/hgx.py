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

"""NVIDIA HGX boards in full-passthrough mode: one unit per board.

An HGX baseboard joins its SXM GPUs through NVSwitches, which the host
sees as PCI functions of NVIDIA's vendor id and class 0x0680 ("other
bridge", a normal endpoint header: ``10de:22a3 GH100 [H100 NVSwitch]``
on HGX H100).  NVIDIA's Fabric Manager user guide describes a "full
passthrough" virtualization model: every GPU and every NVSwitch of the
board goes to one guest, which runs Fabric Manager itself; a guest given
the GPUs without the switches has no NVLink fabric.

With ``[discovery] nvidia_hgx_mode = full_passthrough`` the
``nvidia_gpu`` driver offers such a host's board as ONE deployable
(``drivers.nvidia_gpu.NvidiaGPUDriver.board``): resource class
``CUSTOM_NVIDIA_HGX_BOARD``, total 1, one PCI attach handle whose
info names the board's first GPU (Cyborg's shape) and, under
``ADDRESSES_KEY``, every function of the unit.  The
board is every whole GPU and every NVSwitch of the host, the other
functions of their IOMMU groups' units included: an HGX server carries
one baseboard (HGX H100/H200/B200 4- and 8-GPU).  Nova's side
(``nova_accel.virt.hostdev.compose_slots``) writes one ``<hostdev>`` per
function.

The board is withheld, with a warning, rather than guessed at when the
host's GPUs are not all of one product or one of them cannot be offered
(vGPU use, claimed by Nova's PCI passthrough); without NVSwitches
(an HGX 4-GPU board joins its GPUs directly) the GPUs are offered one by
one as in the default mode.
"""

VENDOR = '10de'
#: PCI class and subclass of an NVSwitch: bridge, other (0x0680).
NVSWITCH_CLASS = '0680'
#: ``[discovery] nvidia_hgx_mode`` values.
GPUS, FULL_PASSTHROUGH = 'gpus', 'full_passthrough'
#: Resource class of a board offered whole.
RESOURCE_CLASS = 'CUSTOM_NVIDIA_HGX_BOARD'
#: Trait of every board provider, and ``CUSTOM_NVIDIA_HGX_<N>_GPU``.
NVSWITCH_TRAIT = 'CUSTOM_NVIDIA_NVSWITCH'
#: The PCI attach handle key naming every function of the unit
#: (comma-separated ``DDDD:BB:SS.F``, the handle's own included).
ADDRESSES_KEY = 'addresses'
#: The ``std_board_info`` key listing the same addresses (list), which
#: the mass-removal guard counts (``conductor.host_sync``).
UNIT_KEY = 'unit'


def is_nvswitch(fn):
    """True for an NVSwitch function (``sysfs.PCIFunction``)."""
    return (fn.vendor_id == VENDOR and
            fn.class_code[:4] == NVSWITCH_CLASS and not fn.physfn)


def gpu_count_trait(count):
    """``CUSTOM_NVIDIA_HGX_<count>_GPU`` (str), so that a flavor can ask
    for an 8-GPU board."""
    return 'CUSTOM_NVIDIA_HGX_%d_GPU' % count


def refusal(gpus, offered):
    """Why the board of ``gpus`` cannot be offered whole (str), or None.

    :param gpus: every whole NVIDIA GPU function of the host (list of
        ``sysfs.PCIFunction``).
    :param offered: the addresses among them the driver could offer
        (set of str): not in vGPU use, not claimed by Nova.
    """
    if not gpus:
        return 'the host has NVSwitches but no whole GPU'
    products = sorted({g.product_id for g in gpus})
    if len(products) > 1:
        return ('its GPUs are of several products (%s); an HGX board '
                'carries one' % ', '.join(products))
    missing = sorted(g.address for g in gpus if g.address not in offered)
    if missing:
        return ('GPU %s cannot be offered (see above): a board goes to a '
                'guest whole' % ', '.join(missing))
    return None


def unit_addresses(handle_info):
    """The functions of a board's attach handle (list of ``DDDD:BB:SS.F``,
    sorted); [] when the handle is not a multi-slot unit."""
    raw = (handle_info or {}).get(ADDRESSES_KEY)
    return sorted(a for a in raw.split(',') if a) if raw else []
