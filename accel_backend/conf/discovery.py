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

"""``[discovery]``: which devices the discovery drivers report, and how
(``accel_backend.agent.discovery``)."""

from oslo_config import cfg

GROUP = cfg.OptGroup('discovery', title='Device discovery')
OPTS = [
    cfg.StrOpt('sysfs_root', default='/sys/bus/pci/devices',
               help='Directory holding one entry per PCI function, as '
                    '/sys/bus/pci/devices does. Tests point it at a '
                    'recorded tree.'),
    cfg.MultiStrOpt(
        'device_spec', default=[],
        help='JSON object selecting PCI devices to manage, one per '
             'option line: ``{"vendor_id": "10de", "product_id": "1eb8", '
             '"address": "0000:af:*", "class": "0302", '
             '"resource_class": "PGPU", "traits": ["CUSTOM_NVIDIA_T4"], '
             '"device_type": "GPU", "attach_handle_type": "PCI"}`` '
             '(``address`` is an optional glob, ``class`` an optional '
             'prefix).'),
    cfg.ListOpt('enabled_drivers', default=['generic_pci'],
                help='Discovery drivers (entry point group '
                     '``accel_backend.discovery.drivers``).'),
    cfg.StrOpt('resource_provider_name',
               help='Name of the compute node resource provider in '
                    'Placement. Default: try [DEFAULT] host, then its '
                    'short and fully qualified forms.'),
    cfg.IntOpt('report_interval', default=60, min=0,
               help='Seconds between discovery and Placement report '
                    'runs; 0 runs it only at start.'),
    cfg.MultiStrOpt(
        'nova_pci_device_spec', default=[],
        help='Nova\'s ``[pci] device_spec`` entries (same JSON syntax, one '
             'per line): every PCI device they select belongs to Nova\'s '
             'PCI passthrough and is refused by accel_backend\'s drivers, '
             'with a warning. ``devname`` entries are ignored.'),
    cfg.StrOpt('nova_config_file',
               help='Path of a nova.conf whose ``[pci] device_spec`` (and '
                    'older ``passthrough_whitelist``) is read as '
                    '``nova_pci_device_spec``.'),
    cfg.StrOpt('pci_ids_path',
               help='pci.ids database used to name devices. Default: the '
                    'first of /usr/share/misc/pci.ids, '
                    '/usr/share/hwdata/pci.ids that exists, else a built-in '
                    'table.'),
    cfg.BoolOpt('nvidia_include_vfs', default=False,
                deprecated_for_removal=True,
                deprecated_reason='An NVIDIA SR-IOV virtual function is '
                                  'no whole GPU: it is useless to a guest '
                                  'until a vGPU type is set on it, which '
                                  'the mdev driver does. The nvidia_gpu '
                                  'driver never reports VFs; true is '
                                  'ignored, with a warning.',
                help='Ignored (nvidia_gpu driver): NVIDIA VFs are offered '
                     'only as vGPUs, through the mdev driver.'),
    cfg.BoolOpt('nvidia_gpu_pool', default=True,
                help='nvidia_gpu driver: pool interchangeable whole GPUs '
                     '(same product, same NUMA node, same reset ability) '
                     'into one resource provider per pool, with a total '
                     'equal to their number and one attach handle per GPU '
                     '(discovery.pooling); false: one provider per GPU. '
                     'A flavor wanting 8 GPUs then asks one request group '
                     'for PGPU=8, which Placement answers in milliseconds '
                     '(8 one-unit providers: minutes). A host with guests '
                     'whose GPUs were per-GPU providers is migrated without '
                     'touching them (admin guide, "Migrating a host with '
                     'guests"); setting it to false needs a drained host.'),
    cfg.BoolOpt('pool_numa_span', default=True,
                help='Pools (``nvidia_gpu_pool``, a ``"pool": true`` '
                     'device spec) of identical functions on several NUMA '
                     'nodes. True (the default): one pool per host and '
                     'kind spanning the nodes (``..._numa_all``, with '
                     'every node\'s ``CUSTOM_NUMA_NODE_<N>`` trait), so N '
                     'GPUs of a host fit one request group whatever its '
                     'layout; the binder picks GPUs of the wanted node for '
                     'NUMA-local requests (a required node trait, '
                     '``accel:numa_local``), and Nova\'s scheduler needs '
                     'the filter ``nova_accel.scheduler.filters.'
                     'AcceleratorNumaFitFilter`` to skip hosts whose '
                     'wanted node is full (without it such a boot fails '
                     'at bind time on the host, reason ``numa_unfit``). '
                     'False: one pool per NUMA node '
                     '(``..._numa<N>``), exact for node-trait requests '
                     'without the filter, and a group can ask at most one '
                     'node\'s GPUs. Turning it on (the default from this '
                     'release) migrates per-node pools into the spanning '
                     'one without touching guests; turning it off splits '
                     'a spanning pool only once it has no allocations '
                     '(until then it is kept and an error is logged: drain '
                     'the host).'),
    cfg.StrOpt('nvidia_hgx_mode', default='gpus',
               choices=[('gpus', 'the GPUs of an HGX board are offered '
                                 'one by one (or pooled: '
                                 '``nvidia_gpu_pool``); its NVSwitches '
                                 'are not offered'),
                        ('full_passthrough',
                         'on a host with NVSwitches (NVIDIA, PCI class '
                         '0x0680), the board (every whole GPU and every '
                         'NVSwitch of the host) is one unit of resource '
                         'class CUSTOM_NVIDIA_HGX_BOARD, assigned to one '
                         'guest, which runs Fabric Manager itself; needs '
                         '``accel.LibvirtDriver`` on the compute node')],
               help='nvidia_gpu driver: how an NVIDIA HGX board is offered '
                    '(NVIDIA Fabric Manager user guide, "Full Passthrough '
                    'Virtualization Model"). Change it on a drained host '
                    'only: guests holding GPUs are not migrated between '
                    'the modes.'),
    cfg.ListOpt('fpga_ids',
                default=['10ee:5000', '10ee:5001', '10ee:5004', '10ee:5005',
                         '10ee:500c', '10ee:500d', '10ee:5020', '10ee:5021',
                         '8086:09c4', '8086:09c5', '8086:0b2b', '8086:0b2c',
                         '8086:0b30', '8086:0b31'],
                help='fpga driver: ``vendor:product`` ids (product may be '
                     'a glob such as ``*``) of FPGA functions; by default '
                     'the known cards (Alveo U200/U250/U280/U50, Intel PAC '
                     'Arria 10 / D5005 / N3000), whose management '
                     'functions are left out unless '
                     '``fpga_management_functions``. Function 0 of any '
                     'other Xilinx card is its management function (XRT) '
                     'and is offered only when an entry names its id '
                     'exactly, with a warning: a guest holding it can '
                     'reflash the card.'),
    cfg.BoolOpt('fpga_management_functions', default=False,
                help='fpga driver: also report the management functions '
                     'of the known cards (Alveo U200/U250/U280/U50 '
                     'management PFs 10ee:5000/5004/500c/5020, Intel PAC '
                     'PFs 8086:09c4/0b2b/0b30). A guest given one could '
                     'reflash the card\'s shell; by default only the user '
                     'functions (Alveo user PFs, Intel PAC VFs) are '
                     'accelerators.'),
    cfg.StrOpt('mdev_resource_class', default='VGPU',
               help='mdev driver: resource class of mediated device '
                    'inventories (``VGPU`` or a ``CUSTOM_`` class).'),
    cfg.ListOpt('mdev_types', default=[],
                help='mdev driver: the enabled mdev types (e.g. '
                     'nvidia-222), as Nova\'s ``[devices] '
                     'enabled_mdev_types``; each physical GPU offers one '
                     'of them (``[mdev_<type>] device_addresses``), except '
                     'a GPU in MIG mode, which offers every enabled '
                     'MIG-backed type as ``CUSTOM_MIG_SLICE``. Empty: '
                     'no mediated device is reported, with a warning '
                     'that names the GPUs offering types.'),
    cfg.StrOpt('mdev_bus_path',
               help='mdev driver: the kernel\'s list of mediated-device '
                    'parents; those that are not PCI functions (under '
                    '``/sys/devices/virtual``, such as the kernel\'s '
                    '``mtty`` sample) are offered from here, each as one '
                    'provider of its enabled type. Default: '
                    '``class/mdev_bus`` of the sysfs of ``sysfs_root`` '
                    '(``/sys/class/mdev_bus``).'),
    cfg.StrOpt('nvidia_smi_path', default='nvidia-smi',
               help='mdev driver: the ``nvidia-smi`` program, run only '
                    'for a GPU in MIG mode whose MIG-backed vGPU types '
                    'are mdev types on its VFs (Ampere), to count its GPU '
                    'instances (``--query-gpu=index,pci.bus_id`` and '
                    '``mig -lgi``); sysfs does not say how many are free. '
                    'When it fails, the GPU is not offered.'),
    cfg.IntOpt('fake_total', default=16, min=1,
               help='fake driver: number of accelerators of the fake '
                    'device.'),
    cfg.BoolOpt('health_check', default=True,
                help='Mark a device unhealthy when sysfs shows new fatal '
                     'PCIe AER errors (``aer_dev_fatal`` grew since the '
                     'last discovery pass).'),
    cfg.IntOpt('aer_recovery_passes', default=3, min=1,
               help='Discovery passes in a row without a new fatal PCIe '
                    'AER error after which a device that had one is '
                    'offered again (the kernel\'s AER recovery often '
                    'brings it back; the count itself only grows until '
                    'the next reboot). With ``report_interval`` seconds '
                    'between passes.'),
    cfg.StrOpt('pci_slots_path',
               help='Directory of the physical PCI slots (one entry per '
                    'slot with an ``address`` file). Default: ``slots`` '
                    'beside ``sysfs_root`` (``/sys/bus/pci/slots``). A '
                    'device in a slot shows the slot\'s name (e.g. ``CPU2 '
                    'SLOT2``) as ``slot`` in its ``std_board_info`` and '
                    'as the deployable attribute ``slot``.'),
    cfg.BoolOpt('allow_unsafe_interrupts', default=False,
                help='Offer passthrough devices on a host whose Intel '
                     'VT-d IOMMU lacks interrupt remapping, when the '
                     'vfio_iommu_type1 module parameter '
                     '``allow_unsafe_interrupts`` is also set (Y). A guest '
                     'can then inject interrupts into the host and into '
                     'other guests: for single-tenant hosts only; a '
                     'warning is logged. False: such devices are reported '
                     'unhealthy and not offered. Without the module '
                     'parameter they stay unhealthy either way (VFIO '
                     'refuses them).'),
    cfg.FloatOpt('max_removal_share', default=0.5, min=0.0, max=1.0,
                 help='Largest share of a host\'s devices (and of its '
                      'resource providers in Placement) that one discovery '
                      'pass may remove. A pass that would remove more (a '
                      'typo in ``sysfs_root`` or a device spec, a PCI bus '
                      'that did not come up) removes nothing and logs '
                      'what it kept; ``accel-backend-manage discovery sync '
                      '--force`` removes them once. 1.0 never refuses.'),
]

#: ``[mdev_<type>]``: the options of one enabled mdev type, registered by
#: the mdev driver (``accel_backend.agent.discovery.drivers.mdev``) on a group
#: named after each type of ``mdev_types`` once the configuration is read,
#: as Nova 34 registers ``[mdev_$(MDEV_TYPE)]`` (nova/conf/devices.py,
#: ``register_dynamic_opts``).  ``list_opts`` shows them once, under the
#: example group ``MDEV_TYPE_EXAMPLE_GROUP``, for the sample file and the
#: configuration reference.
MDEV_TYPE_OPTS = [
    cfg.ListOpt('device_addresses', default=[],
                help='PCI addresses of the GPUs that offer this type (PF or '
                     'VF addresses), as in the address of Nova\'s [pci] '
                     'device_spec: domain:bus:slot.function, each field a '
                     'hex number or *, leading fields optional (0000:41:*). '
                     'Shell globs (0000:4?:00.0) are deprecated. A '
                     'parent that is not a PCI function is named as '
                     'libvirt and Nova name it: ``mtty_mtty`` for the '
                     'kernel\'s mtty sample.'),
    cfg.IntOpt('max_instances', min=1,
               help='Most devices of this type one GPU can hold.'),
]

#: The group name shown for ``MDEV_TYPE_OPTS``; a configuration file
#: names the type instead of ``<type>`` (``[mdev_nvidia-222]``).
MDEV_TYPE_EXAMPLE_GROUP = cfg.OptGroup(
    'mdev_<type>', title='One enabled mdev type',
    help='One group per type of ``[discovery] mdev_types``, named '
         '``mdev_`` followed by the type: for ``mdev_types = nvidia-222`` '
         'the group is ``[mdev_nvidia-222]``. A group of a type not '
         'enabled is ignored.')


def mdev_type_group(type_id):
    """Name of the group of one mdev type: ``nvidia-222`` ->
    ``mdev_nvidia-222`` (str)."""
    return 'mdev_%s' % type_id
