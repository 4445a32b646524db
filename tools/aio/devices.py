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

"""The accelerators of the all-in-one cloud: what each of accel_backend's
discovery drivers offers there, and the device profile groups the demo
and tempest ask for.

Pure functions of a ``tools.aio.config.Layout`` (its ``discovery``
list); nothing here touches the disk, the network or a process.
"""

#: Device spec of the recorded two-GPU sysfs tree (generic_pci discovery).
GPU_SPEC = {'vendor_id': '10de', 'product_id': '1eb8',
            'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_T4']}


#: Device spec of QEMU's ``edu`` functions of the nested compute node.
EDU_SPEC = {'vendor_id': '1234', 'product_id': '11e8',
            'resource_class': 'CUSTOM_EDU', 'traits': ['CUSTOM_QEMU_EDU']}

#: The two identical ``edu`` functions on L1's root bus (NUMA node 0, an
#: IOMMU group each), pooled: one provider with ``CUSTOM_EDU_POOL`` total
#: 2 (accel_backend's ``common.pooling``).  Listed before
#: ``EDU_SPEC``: the first spec that matches a function takes it.
EDU_POOL_SPEC = {'vendor_id': '1234', 'product_id': '11e8',
                 'address': '0000:00:*.*', 'pool': True,
                 'resource_class': 'CUSTOM_EDU_POOL',
                 'traits': ['CUSTOM_QEMU_EDU']}
#: A group asking for both functions of the pool, in one request group.
POOLED_GROUP = {'resources:CUSTOM_EDU_POOL': '2',
                'trait:CUSTOM_QEMU_EDU': 'required'}

#: The two ``edu`` functions of L1's slot 08 (one IOMMU group): one
#: device, both functions to one guest.  Listed first: ``EDU_POOL_SPEC``
#: matches every root-bus function.
EDU_UNIT_SPEC = {'vendor_id': '1234', 'product_id': '11e8',
                 'address': '0000:00:08.*',
                 'resource_class': 'CUSTOM_EDU_UNIT',
                 'traits': ['CUSTOM_QEMU_EDU']}
#: A group asking for that multi-function device.
UNIT_GROUP = {'resources:CUSTOM_EDU_UNIT': '1',
              'trait:CUSTOM_QEMU_EDU': 'required'}

#: The type of the kernel's mtty sample the nested compute node offers
#: (``Dual port serial``, 12 per parent), and a group asking for one.
MTTY_TYPE = 'mtty-2'
MTTY_GROUP = {'resources:VGPU': '1', 'trait:CUSTOM_MDEV_MTTY_2': 'required'}

#: ``{discovery driver: (device profile group, accelerators it offers)}``.
DISCOVERY_DRIVERS = {
    # Two T4 GPUs from a recorded sysfs tree, with PCI attach handles: the
    # guest gets real composed <hostdev> elements.
    'generic_pci': ({'resources:PGPU': '1',
                     'trait:CUSTOM_NVIDIA_T4': 'required'}, 2),
    # accel_backend's fake device: 16 FPGA units whose TEST_PCI handles the
    # virt driver ignores (no <hostdev>), as Cyborg's fake driver.
    'fake': ({'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'},
             16),
    # The nested compute node's seven edu functions on its real sysfs
    # (tools.nested.node.Layout): two of one slot are one device
    # (EDU_UNIT_SPEC), the other two on the root bus are one pool
    # (EDU_POOL_SPEC), two behind a bridge share an IOMMU group (one
    # device), one is on NUMA node 1: two CUSTOM_EDU devices.
    'l1_edu': ({'resources:CUSTOM_EDU': '1',
                'trait:CUSTOM_QEMU_EDU': 'required'}, 2),
    # The kernel's mtty sample in the nested compute node (the mdev
    # driver, MTTY_TYPE enabled): 12 dual-port serial cards.
    'l1_mtty': (MTTY_GROUP, 12),
}

#: Accelerators of pooled providers, per discovery driver:
#: ``(group, count)``.
POOLED = {'l1_edu': (POOLED_GROUP, 2)}

#: Multi-function devices (one accelerator each), per discovery driver:
#: ``(group, count)``.
UNITS = {'l1_edu': (UNIT_GROUP, 1)}

#: The group of a guest that wants an ``edu`` function on NUMA node 1 of
#: the nested compute node (discovery gives every PCI device the trait of
#: its NUMA node).
NUMA1_GROUP = {'resources:CUSTOM_EDU': '1',
               'trait:CUSTOM_NUMA_NODE_1': 'required'}


#: Deployables each discovery driver reports (one per GPU; one fake board;
#: one per mdev parent).
DEPLOYABLES = {'generic_pci': 2, 'fake': 1, 'l1_edu': 4, 'l1_mtty': 1}


def expected_deployables(layout):
    """How many deployables accel_backend reports with the discovery
    drivers of ``layout`` (a ``config.Layout``)."""
    return sum(DEPLOYABLES[name] for name in layout.discovery)


def demo_group(layout):
    """The group the demo asks for: an ``edu`` function of the nested
    compute node when there is one (a real guest gets it), else a GPU
    (the guest shows a composed ``<hostdev>``), else a fake FPGA."""
    for name in ('l1_edu', 'generic_pci', 'fake'):
        if name in layout.discovery:
            return dict(DISCOVERY_DRIVERS[name][0])
    raise ValueError('no discovery driver offers a demo device')


def tempest_group(layout):
    """The group tempest asks for: the fake FPGA when there is one (16
    units: parallel tests never run out), else a GPU."""
    for name in ('fake', 'generic_pci', 'l1_edu'):
        if name in layout.discovery:
            return dict(DISCOVERY_DRIVERS[name][0])
    raise ValueError('no discovery driver offers a tempest device')


def accelerator_total(layout, group=None):
    """How many accelerators of ``group``'s resource class the compute node
    offers (all of them when ``group`` is None)."""
    return sum(count for table in (DISCOVERY_DRIVERS, POOLED, UNITS)
               for name, (grp, count) in table.items()
               if name in layout.discovery and
               (group is None or resource_class(grp) == resource_class(group)))


def device_specs(name):
    """The ``[discovery] device_spec`` values (dicts, in order) of
    discovery driver ``name`` of ``DISCOVERY_DRIVERS``."""
    return {'generic_pci': [GPU_SPEC],
            'l1_edu': [EDU_UNIT_SPEC, EDU_POOL_SPEC, EDU_SPEC]}.get(
                name, [])


def resource_class(group):
    """The resource class a device profile group asks for (``group``: a
    ``{'resources:<RC>': amount, ...}`` dict).

    :raises StopIteration: when it asks for no resource.
    """
    return next(k.split(':', 1)[1] for k in group
                if k.startswith('resources:'))
