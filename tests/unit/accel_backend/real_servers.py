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

"""Sysfs trees of device layouts found on real servers (tests).

Each function writes one ``/sys/bus/pci/devices`` tree in the kernel's
format (``sysfs_tree``); the trees are committed under
``tests/fixtures/sysfs/<name>`` (``python -m
tests.unit.accel_backend.real_servers`` rewrites them) and
``test_real_servers`` checks the committed copy still matches.  Ids,
classes, drivers and IOMMU groupings are those of the named cards; mdev
type ids of the A100 are illustrative (the NVIDIA driver numbers them per
release), their names and per-GPU maxima are the A100D 80GB profiles'.
"""

import os
import shutil
import sys

from tests.unit.accel_backend import nvidia_vgpu_card
from tests.unit.accel_backend import sysfs_tree as st

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, '..', '..', 'fixtures', 'sysfs')
MDEV_IN_USE = ('3f2c9d1e-7a41-4b6e-9c55-0d8e2a6b1f01',
               '3f2c9d1e-7a41-4b6e-9c55-0d8e2a6b1f02')


def _host_bridge(root):
    st.write_function(root, '0000:00:00.0', '8086', '09a2', '060000',
                      numa=0, reset=False, aer=False, iommu_group=0)


def gpu_audio_group(root):
    """Two RTX A6000 (10de:2230) with their HDMI audio functions
    (10de:1aef, class 0x0403) in the GPU's IOMMU group.  At 0000:01 the
    audio function is on the host's ``snd_hda_intel``; at 0000:41 both are
    on vfio-pci and the group also holds the PCIe root port 0000:40:01.0
    (``pcieport``, no ACS on that port)."""
    _host_bridge(root)
    st.write_function(root, '0000:00:01.0', '8086', '09ab', '060400',
                      numa=0, driver='pcieport', iommu_group=1, reset=False)
    st.write_function(root, '0000:01:00.0', '10de', '2230', '030000',
                      numa=0, driver='vfio-pci', iommu_group=14,
                      subsystem=('10de', '1459'))
    st.write_function(root, '0000:01:00.1', '10de', '1aef', '040300',
                      numa=0, driver='snd_hda_intel', iommu_group=14,
                      subsystem=('10de', '1459'))
    st.write_function(root, '0000:40:01.0', '8086', '09ab', '060400',
                      numa=1, driver='pcieport', iommu_group=30, reset=False)
    st.write_function(root, '0000:41:00.0', '10de', '2230', '030000',
                      numa=1, driver='vfio-pci', iommu_group=30,
                      subsystem=('10de', '1459'))
    st.write_function(root, '0000:41:00.1', '10de', '1aef', '040300',
                      numa=1, driver='vfio-pci', iommu_group=30,
                      subsystem=('10de', '1459'))


def switch_group(root):
    """Two Tesla T4 (10de:1eb8) behind one PLX PEX 8747 PCIe switch
    (10b5:8747) without ACS: the upstream port 0000:17:00.0, the
    downstream ports 0000:18:08.0 / 0000:18:10.0 and both GPUs (0000:19,
    0000:1a) are IOMMU group 40.  A third T4 at 0000:af:00.0 is alone in
    group 80."""
    _host_bridge(root)
    for address in ('0000:17:00.0', '0000:18:08.0', '0000:18:10.0'):
        st.write_function(root, address, '10b5', '8747', '060400', numa=0,
                          driver='pcieport', iommu_group=40, reset=False)
    for address in ('0000:19:00.0', '0000:1a:00.0'):
        st.write_function(root, address, '10de', '1eb8', '030200', numa=0,
                          driver='vfio-pci', iommu_group=40,
                          subsystem=('10de', '12a2'))
    st.write_function(root, '0000:af:00.0', '10de', '1eb8', '030200',
                      numa=1, driver='vfio-pci', iommu_group=80,
                      subsystem=('10de', '12a2'))


def qat_vfs(root):
    """Intel QAT C62x: PF 0000:3d:00.0 (8086:37c8, class 0x0b4000, driver
    c6xx) with 4 VFs enabled (8086:37c9 at 0000:3d:01.0-3, vfio-pci, a
    group each); PF 0000:3f:00.0 with SR-IOV possible (16) but off."""
    _host_bridge(root)
    vfs = ['0000:3d:01.%d' % i for i in range(4)]
    st.write_function(root, '0000:3d:00.0', '8086', '37c8', '0b4000',
                      numa=0, driver='c6xx', iommu_group=50, virtfns=vfs,
                      sriov_totalvfs=16, subsystem=('8086', '0000'))
    for i, vf in enumerate(vfs):
        st.write_function(root, vf, '8086', '37c9', '0b4000', numa=0,
                          driver='vfio-pci', iommu_group=60 + i,
                          physfn='0000:3d:00.0', subsystem=('8086', '0000'))
    st.write_function(root, '0000:3f:00.0', '8086', '37c8', '0b4000',
                      numa=0, driver='c6xx', iommu_group=51,
                      sriov_totalvfs=16, subsystem=('8086', '0000'))


def t4_mdev_in_use(root):
    """Two Tesla T4 on the ``nvidia`` host driver with GRID types.  On
    0000:41:00.0 two ``nvidia-223`` (GRID T4-2B) mdevs exist, so the
    kernel shows 6 more of that type and 0 of every other; 0000:c1:00.0
    is unused (16 x T4-1B, 8 x T4-2B or 1 x T4-16Q)."""
    _host_bridge(root)
    for address, numa, group in (('0000:41:00.0', 0, 25),
                                 ('0000:c1:00.0', 1, 70)):
        st.write_function(root, address, '10de', '1eb8', '030200',
                          numa=numa, driver='nvidia', iommu_group=group,
                          subsystem=('10de', '12a2'))
    for address, avail in (('0000:41:00.0', (0, 6, 0)),
                           ('0000:c1:00.0', (16, 8, 1))):
        created = MDEV_IN_USE if address == '0000:41:00.0' else ()
        st.write_mdev_type(root, address, 'nvidia-222', 'GRID T4-1B',
                           avail[0], max_instance=16)
        st.write_mdev_type(root, address, 'nvidia-223', 'GRID T4-2B',
                           avail[1], created=created, max_instance=8)
        st.write_mdev_type(root, address, 'nvidia-230', 'GRID T4-16Q',
                           avail[2], max_instance=1)


A100_TYPES = (('nvidia-692', 'GRID A100D-20C', 4),
              ('nvidia-693', 'GRID A100D-40C', 2),
              ('nvidia-694', 'GRID A100D-80C', 1))


def a100_vgpu_vfs(root):
    """Two A100 80GB (10de:20b5) on the ``nvidia`` driver with SR-IOV on
    (4 VFs each, as ``sriov-manage -e`` leaves them) and the vGPU types
    on the VFs, one vGPU per VF.  0000:ca:00.0 is unused: every VF offers
    every type.  On 0000:e3:00.0 two ``nvidia-693`` (A100D-40C, 2 per GPU)
    vGPUs exist on VFs .4 and .5: the GPU is full, so no VF offers
    anything more."""
    _host_bridge(root)
    for pf, numa, group in (('0000:ca:00.0', 1, 90), ('0000:e3:00.0', 1, 95)):
        vfs = ['%s.%d' % (pf[:-2], i) for i in range(4, 8)]
        st.write_function(root, pf, '10de', '20b5', '030200', numa=numa,
                          driver='nvidia', iommu_group=group, virtfns=vfs,
                          sriov_totalvfs=20, subsystem=('10de', '1533'))
        for i, vf in enumerate(vfs):
            st.write_function(root, vf, '10de', '20b5', '030200', numa=numa,
                              driver='nvidia', iommu_group=group + 1 + i,
                              physfn=pf, subsystem=('10de', '1533'))
            full = pf == '0000:e3:00.0'
            for type_id, name, most in A100_TYPES:
                created = (MDEV_IN_USE[i],) if full and i < 2 and \
                    type_id == 'nvidia-693' else ()
                st.write_mdev_type(root, vf, type_id, name,
                                   0 if full else 1, created=created,
                                   max_instance=most)


#: ``(type id, name)`` of the MIG-backed types of an A100 HGX 40GB (the
#: names of NVIDIA's vGPU types reference, "MIG-Backed NVIDIA vGPU
#: (C-Series) for NVIDIA A100 HGX 40GB"; the ids are illustrative).
A100_MIG_TYPES = (('nvidia-470', 'NVIDIA A100X-7-40C'),
                  ('nvidia-471', 'NVIDIA A100X-4-20C'),
                  ('nvidia-472', 'NVIDIA A100X-3-20C'),
                  ('nvidia-473', 'NVIDIA A100X-2-10C'),
                  ('nvidia-474', 'NVIDIA A100X-1-10C'),
                  ('nvidia-475', 'NVIDIA A100X-1-5C'),
                  ('nvidia-476', 'NVIDIA A100X-1-5CME'))


def a100_mig_vgpu_vfs(root):
    """An A100 HGX 40GB (A100-SXM4-40GB, 10de:20b0) in MIG mode for
    MIG-backed vGPU with the mdev-based vGPU manager: PF and eight VFs
    on ``nvidia``, the MIG-backed types as mdev types of every VF, one
    vGPU per VF.  Its GPU instances (not in sysfs; what ``nvidia-smi
    mig -lgi`` lists in ``test_mdev_mig``) are a 2g.10gb, two 1g.5gb and
    a 3g.20gb.  VF .4 holds an ``nvidia-472`` (A100X-3-20C) vGPU, on the
    3g.20gb; every other VF shows ``available_instances`` 1 for the
    types of the free instances (A100X-2-10C, A100X-1-5C) and 0 for the
    rest."""
    _host_bridge(root)
    pf = '0000:ca:00.0'
    vfs = ['0000:ca:%02x.%d' % ((4 + i) // 8, (4 + i) % 8)
           for i in range(8)]
    st.write_function(root, pf, '10de', '20b0', '030200', numa=1,
                      driver='nvidia', iommu_group=90, virtfns=vfs,
                      sriov_totalvfs=16)
    free = ('nvidia-473', 'nvidia-475')
    for i, vf in enumerate(vfs):
        st.write_function(root, vf, '10de', '20b0', '030200', numa=1,
                          driver='nvidia', iommu_group=91 + i, physfn=pf)
        for type_id, name in A100_MIG_TYPES:
            held = i == 0 and type_id == 'nvidia-472'
            st.write_mdev_type(
                root, vf, type_id, name,
                1 if i and type_id in free else 0,
                created=(MDEV_IN_USE[0],) if held else ())


def _vgpu_cards(root, cards, device, subsystem, total_vfs):
    """The host bridge, then the PF and VFs of each of two NVIDIA
    ``nvidia_vgpu_card`` cards (NUMA nodes 0 and 1, IOMMU groups from 40
    and 80), all on ``nvidia``."""
    _host_bridge(root)
    for card, numa, group in zip(cards, (0, 1), (40, 80)):
        st.write_function(root, card.pf, '10de', device, '030200',
                          numa=numa, driver='nvidia', iommu_group=group,
                          virtfns=card.vfs, sriov_totalvfs=total_vfs,
                          subsystem=subsystem)
        for i, vf in enumerate(card.vfs):
            st.write_function(root, vf, '10de', device, '030200',
                              numa=numa, driver='nvidia',
                              iommu_group=group + 1 + i, physfn=card.pf,
                              subsystem=subsystem)


def h100_vgpu_vfio(root):
    """Two H100 PCIe 80GB (10de:2331, subsystem 10de:1626) in vGPU mode
    under NVIDIA's vendor-specific VFIO framework (vGPU 17+, kernel
    6.8+): PF and VFs on ``nvidia``, no mdev files, each VF with
    ``nvidia/creatable_vgpu_types`` and ``nvidia/current_vgpu_type``
    (``nvidia_vgpu_card``).  0000:41:00.0 is unused: its four VFs list
    every C-series profile (ids 1051-1054).  On 0000:c1:00.0 VF .4
    carries an ``NVIDIA H100-40C`` (id 2052, 2 per card), so its free VFs
    list that profile alone."""
    cards = nvidia_vgpu_card.h100_cards(root)
    _vgpu_cards(root, cards, '2331', ('10de', '1626'), 32)
    cards[0].write_vfs()
    cards[1].write_vfs({'0000:c1:00.4': 2052})


def h200_mig_vgpu_vfio(root):
    """Two H200 SXM5 141GB (10de:2335, subsystem 10de:18bf, the ids of
    the recorded ``h200-vm-no-iommu``) in MIG mode for MIG-backed vGPU
    under NVIDIA's vendor-specific VFIO framework, eight VFs each, all on
    ``nvidia`` (``nvidia_vgpu_card.MigCard``; the GPU instances are not
    in sysfs: ``nvidia_vgpu_card.h200_mig_host``).  0000:41:00.0 is
    carved into a 2g.35gb, two 1g.18gb and a 3g.71gb and has no vGPU
    yet, so its VFs list ``H200X-3-71C`` (id 1103), ``H200X-2-35C``
    (1104) and ``H200X-1-18C`` (1106).  0000:c1:00.0 has no GPU
    instance: its VFs list nothing."""
    cards = nvidia_vgpu_card.h200_mig_cards(
        root, nvidia_vgpu_card.h200_mig_host())
    _vgpu_cards(root, cards, '2335', ('10de', '18bf'), 16)
    for card in cards:
        card.write_vfs()


def fpga_pairs(root):
    """Alveo U250 (management PF 10ee:5004 on ``xclmgmt``, user PF
    10ee:5005 on vfio-pci) and U280 (500c/500d), and an Intel PAC N3000
    whose PF 8086:0b30 (``dfl-pci``) has two VFs 8086:0b31 on vfio-pci."""
    _host_bridge(root)
    for mgmt, user, base_addr, numa in (('5004', '5005', '0000:3b:00', 0),
                                        ('500c', '500d', '0000:d8:00', 1)):
        st.write_function(root, base_addr + '.0', '10ee', mgmt, '120000',
                          numa=numa, driver='xclmgmt',
                          iommu_group=int(base_addr[5:7], 16))
        st.write_function(root, base_addr + '.1', '10ee', user, '120000',
                          numa=numa, driver='vfio-pci',
                          iommu_group=int(base_addr[5:7], 16) + 1)
    vfs = ['0000:b2:00.1', '0000:b2:00.2']
    st.write_function(root, '0000:b2:00.0', '8086', '0b30', '120000',
                      numa=1, driver='dfl-pci', iommu_group=110,
                      virtfns=vfs, sriov_totalvfs=3)
    for i, vf in enumerate(vfs):
        st.write_function(root, vf, '8086', '0b31', '120000', numa=1,
                          driver='vfio-pci', iommu_group=111 + i,
                          physfn='0000:b2:00.0')


#: HGX H100 8-GPU: GPU buses per NUMA node, NVSwitch buses (illustrative:
#: the layout of a DGX H100 as operators' ``lspci`` shows it).
HGX_GPUS = (('18', 0), ('2a', 0), ('3a', 0), ('5d', 0),
            ('9a', 1), ('ab', 1), ('ba', 1), ('db', 1))
HGX_NVSWITCHES = ('05', '06', '07', '08')


def hgx_h100(root):
    """An HGX H100 8-GPU board prepared for full passthrough: eight H100
    SXM5 80GB (10de:2330, subsystem 10de:16c1, class 0x030200, as the
    recorded ``h100-vm-no-iommu`` shows one) on vfio-pci, four on each
    NUMA node, and its four NVSwitches (10de:22a3 ``GH100 [H100
    NVSwitch]``, pci.ids; class 0x0680, subsystem 10de:1796) on no
    driver, each function in an IOMMU group of its own.  The GPUs offer
    a reset (``reset``, as the recorded H100's ``flr``); the NVSwitches
    are written without one, as nothing recorded says they have one."""
    _host_bridge(root)
    for group, (bus, numa) in enumerate(HGX_GPUS, start=40):
        st.write_function(root, '0000:%s:00.0' % bus, '10de', '2330',
                          '030200', numa=numa, driver='vfio-pci',
                          iommu_group=group, subsystem=('10de', '16c1'))
    for group, bus in enumerate(HGX_NVSWITCHES, start=20):
        st.write_function(root, '0000:%s:00.0' % bus, '10de', '22a3',
                          '068000', numa=0, iommu_group=group,
                          subsystem=('10de', '1796'), reset=False)


TREES = {'gpu-audio-group': gpu_audio_group, 'switch-group': switch_group,
         'hgx-h100': hgx_h100,
         'qat-vfs': qat_vfs, 't4-mdev-in-use': t4_mdev_in_use,
         'a100-vgpu-vfs': a100_vgpu_vfs, 'fpga-pairs': fpga_pairs,
         'h100-vgpu-vfio': h100_vgpu_vfio,
         'h200-mig-vgpu-vfio': h200_mig_vgpu_vfio,
         'a100-mig-vgpu-vfs': a100_mig_vgpu_vfs}


def write(name, root):
    """Write tree ``name`` at ``root`` (a new directory) with its README
    (the function's docstring)."""
    os.makedirs(root)
    TREES[name](root)
    doc = ' '.join(TREES[name].__doc__.split())
    with open(os.path.join(root, 'README.md'), 'w') as f:
        f.write('Generated, not recorded from a host: written by '
                '`tests/unit/accel_backend/real_servers.py` (`%s`) in the '
                'format of the kernel\'s sysfs ABI (Documentation/ABI/'
                'testing/sysfs-bus-pci) and, for vGPU types, of NVIDIA\'s '
                'vGPU user guide. %s\n' % (
                    TREES[name].__name__, doc))


def main(argv):
    """Rewrite the committed trees named in ``argv`` (all when empty)."""
    for name in argv or sorted(TREES):
        root = os.path.normpath(os.path.join(FIXTURES, name))
        shutil.rmtree(root, ignore_errors=True)
        write(name, root)
        print(root)


if __name__ == '__main__':
    main(sys.argv[1:])
