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

"""Write sysfs trees of PCI functions in the kernel's format (tests).

Used to record the fixture trees under ``tests/fixtures/sysfs`` and to
generate large synthetic hosts (e.g. 64 GPUs) in a temporary directory.
"""

import os

AER_FATAL_NAMES = ('Undefined', 'DLP', 'SDES', 'TLP', 'FCP', 'CmpltTO',
                   'CmpltAbrt', 'UnxCmplt', 'RxOF', 'MalfTLP', 'ECRC',
                   'UnsupReq', 'ACSViol', 'UncorrIntErr', 'BlockedTLP',
                   'AtomicOpBlocked', 'TLPBlockedErr', 'PoisonTLPBlocked')


def aer_fatal_text(total=0):
    lines = ['%s %d' % (n, total if n == 'DLP' else 0)
             for n in AER_FATAL_NAMES]
    return '\n'.join(lines + ['TOTAL_ERR_FATAL %d' % total]) + '\n'


def write_function(root, address, vendor, device, klass, numa=-1,
                   driver=None, iommu_group=None, subsystem=None,
                   physfn=None, virtfns=(), reset=True, aer=True,
                   sriov_totalvfs=None):
    """One ``/sys/bus/pci/devices/<address>`` entry (plain files and
    relative links, as the fixtures record them)."""
    base = os.path.join(root, address)
    os.makedirs(base, exist_ok=True)
    sub_vendor, sub_device = subsystem or (vendor, '0000')
    files = {'vendor': '0x%s' % vendor, 'device': '0x%s' % device,
             'class': '0x%s' % klass, 'numa_node': str(numa),
             'subsystem_vendor': '0x%s' % sub_vendor,
             'subsystem_device': '0x%s' % sub_device}
    if reset:
        files['reset'] = ''
    if aer:
        files['aer_dev_fatal'] = aer_fatal_text(0).rstrip('\n')
    if virtfns or sriov_totalvfs:
        files['sriov_numvfs'] = str(len(virtfns))
        files['sriov_totalvfs'] = str(sriov_totalvfs or len(virtfns))
    for name, text in files.items():
        with open(os.path.join(base, name), 'w') as f:
            f.write(text + ('\n' if text else ''))
    links = {}
    if driver:
        links['driver'] = '../../../bus/pci/drivers/%s' % driver
    if iommu_group is not None:
        links['iommu_group'] = '../../../kernel/iommu_groups/%s' % (
            iommu_group)
    if physfn:
        links['physfn'] = '../%s' % physfn
    for i, vf in enumerate(virtfns):
        links['virtfn%d' % i] = '../%s' % vf
    for name, target in links.items():
        path = os.path.join(base, name)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(target, path)
    return base


def write_mdev_type(root, address, type_id, name, available,
                    device_api='vfio-pci', created=(), max_instance=None):
    """``<address>/mdev_supported_types/<type_id>/``; ``created`` are
    UUIDs of existing mdevs of that type (links under ``devices/``);
    ``max_instance`` is written into ``description`` as NVIDIA's driver
    does."""
    base = os.path.join(root, address, 'mdev_supported_types', type_id)
    os.makedirs(os.path.join(base, 'devices'), exist_ok=True)
    description = 'num_heads=4, frl_config=60, framebuffer=%s' % name
    if max_instance is not None:
        description += ', max_instance=%d' % max_instance
    for fname, text in (('name', name), ('available_instances',
                                         str(available)),
                        ('device_api', device_api),
                        ('description', description)):
        with open(os.path.join(base, fname), 'w') as f:
            f.write(text + '\n')
    for mdev in created:
        os.symlink('../../../%s' % mdev, os.path.join(base, 'devices', mdev))
    return base


def many_gpus(root, count, vendor='10de', device='20b5'):
    """A synthetic host with ``count`` NVIDIA GPUs (one per bus, NUMA
    node by half) plus a host bridge.

    :returns: the GPU addresses, sorted.
    """
    write_function(root, '0000:00:00.0', '8086', '09a2', '060000', numa=0,
                   reset=False)
    addresses = []
    for i in range(count):
        address = '0000:%02x:00.0' % (0x10 + i)
        write_function(root, address, vendor, device, '030200',
                       numa=0 if i < count // 2 else 1, driver='vfio-pci',
                       iommu_group=100 + i)
        addresses.append(address)
    return addresses


def virtual_mdev_parent(sys_dir, klass, name, types):
    """A virtual mediated-device parent as the kernel shows it
    (``Documentation/driver-api/vfio-mediated-device.rst``; the mtty
    sample, ``samples/vfio-mdev/mtty.c``, makes ``klass`` = ``name`` =
    ``mtty``): ``devices/virtual/<klass>/<name>/mdev_supported_types/``
    and the link ``class/mdev_bus/<name>`` to it, under ``sys_dir``.

    :param types: ``[(type_id, name, available_instances, created
        UUIDs)]``.
    :returns: the ``class/mdev_bus`` directory.
    """
    device = os.path.join(sys_dir, 'devices', 'virtual', klass, name)
    bus = os.path.join(sys_dir, 'class', 'mdev_bus')
    os.makedirs(bus, exist_ok=True)
    os.makedirs(device, exist_ok=True)
    os.symlink(os.path.join('..', '..', 'devices', 'virtual', klass, name),
               os.path.join(bus, name))
    for type_id, type_name, available, created in types:
        write_mdev_type(os.path.dirname(device), name, type_id, type_name,
                        available, created=created)
    return bus
