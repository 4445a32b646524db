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

"""NVIDIA GPUs passed through whole (resource class PGPU)."""

from oslo_log import log as logging

from accel_backend.agent.discovery.drivers import base
from accel_backend.agent.discovery import pci_ids
from accel_backend.agent.discovery import sysfs
from accel_backend.common import discovered
from accel_backend.common import hgx
from accel_backend.common import pooling

LOG = logging.getLogger(__name__)
VENDOR = '10de'
#: PCI class codes (class and subclass) of display controllers that are
#: compute GPUs: VGA-compatible (0300) and 3D controller (0302).
CLASSES = ('0300', '0302')


class NvidiaGPUDriver(base.PCIDriverBase):
    """Every NVIDIA display/3D controller that is a whole GPU is one PGPU.

    Traits: ``CUSTOM_NVIDIA_<PRODUCT>`` from the pci.ids name (``TU104GL
    [Tesla T4]`` -> ``CUSTOM_NVIDIA_T4``; unknown products get
    ``CUSTOM_NVIDIA_<product id>``), vendor/product and NUMA traits. The
    device record's ``model`` is the human-readable pci.ids name.

    Never reported (NVIDIA's vGPU user guide: a GPU
    runs either passthrough or vGPU):

    * an SR-IOV virtual function: an NVIDIA VF is a vGPU slot, useless to
      a guest until a vGPU type is set on it (the ``mdev`` driver);
    * a physical function with VFs enabled (``sriov-manage -e`` leaves
      the PF on the host's ``nvidia`` driver, serving its VFs);
    * a physical function with mediated devices on it or on its VFs
      (``mdev_supported_types/<type>/devices`` not empty): guests use it.

    ``[discovery] nvidia_include_vfs`` is deprecated and ignored.
    ``[discovery] nvidia_gpu_pool`` tags every GPU for pooling
    (``common.pooling``): one provider per product and NUMA node.
    ``[discovery] nvidia_hgx_mode = full_passthrough`` offers a host with
    NVSwitches as one HGX board instead (``common.hgx``).

    :param conf: accel_backend ``ConfigOpts``.
    """

    name = 'nvidia_gpu'

    def __init__(self, conf):
        super().__init__(conf)
        if conf.discovery.nvidia_include_vfs:
            LOG.warning('[discovery] nvidia_include_vfs is deprecated and '
                        'ignored: the nvidia_gpu driver never reports an '
                        'SR-IOV VF (a VF is a vGPU slot; enable the mdev '
                        'driver and its vGPU type to offer VFs)')
        self._withheld_logged = set()
        self.hgx_mode = conf.discovery.nvidia_hgx_mode

    def product_trait(self, product_id):
        """The ``CUSTOM_NVIDIA_<PRODUCT>`` trait of a GPU (os-traits'
        custom trait syntax: ``CUSTOM_`` then ``[A-Z0-9_]``).

        :param product_id: the PCI device id, four lowercase hex digits
            (str, ``'1eb8'``).
        :returns: str: ``CUSTOM_NVIDIA_`` and ``pci_ids.product_token`` of
            the pci.ids name (``'1eb8'`` -> ``CUSTOM_NVIDIA_T4``), or the
            uppercased id when pci.ids does not name the product or yields
            no token (``CUSTOM_NVIDIA_1EB8``).  Never raises.
        """
        name = self.pci_ids.device_name(VENDOR, product_id)
        token = pci_ids.product_token(name) if name else None
        return 'CUSTOM_NVIDIA_%s' % (token or product_id.upper())

    def _in_vgpu_use(self, fn, vfs):
        """Why the PF ``fn`` is not a whole GPU now (str), or None.

        :param vfs: addresses of ``fn``'s VFs present in sysfs (list).
        """
        if vfs:
            return 'its %d SR-IOV VFs are enabled (vGPU mode)' % len(vfs)
        for address in [fn.address] + vfs:
            if any(t.created for t in sysfs.mdev_types(self.root, address)):
                return 'mediated devices (vGPUs) exist on it'
        return None

    def _withhold(self, fn, reason):
        log = LOG.debug if fn.address in self._withheld_logged else LOG.info
        self._withheld_logged.add(fn.address)
        log('nvidia_gpu: not offering %s as a whole GPU: %s', fn.address,
            reason)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address:
            one per whole GPU, or one per HGX board in
            ``full_passthrough`` mode (``common.hgx``)."""
        functions = self.functions()
        gpus = [fn for fn in functions
                if fn.vendor_id == VENDOR and fn.class_code[:4] in CLASSES]
        offered = []
        for fn in gpus:
            if fn.physfn:
                LOG.debug('Skipping %s: SR-IOV VF of %s', fn.address,
                          fn.physfn)
                continue
            reason = self._in_vgpu_use(fn, self.vfs_of(fn))
            if reason:
                self._withhold(fn, reason)
                continue
            if self.refused(fn):
                continue
            offered.append(fn)
        switches = [fn for fn in functions if hgx.is_nvswitch(fn)]
        if switches and self.hgx_mode == hgx.FULL_PASSTHROUGH:
            return self._board([fn for fn in gpus if not fn.physfn],
                               offered, switches)
        if switches and switches[0].address not in self._withheld_logged:
            self._withheld_logged.add(switches[0].address)
            LOG.info('nvidia_gpu: %d NVSwitches (HGX board) not offered: '
                     '[discovery] nvidia_hgx_mode is gpus, so the board\'s '
                     'GPUs are offered without their NVLink fabric',
                     len(switches))
        return [self._gpu(fn) for fn in offered]

    def _gpu(self, fn):
        return self.deployable(
            fn, device_type='GPU', resource_class='PGPU',
            traits={self.product_trait(fn.product_id)} |
            base.pci_traits(fn),
            attach_handles=[('PCI', fn.address_parts)],
            pool=(pooling.DEFAULT_TAG
                  if self.conf.discovery.nvidia_gpu_pool else None))

    def _board(self, gpus, offered, switches):
        """``[board]`` (``hgx.board``), or [] with a warning when the
        board cannot be offered whole (``hgx.refusal``): nothing is
        offered then, rather than a guess at which functions a guest
        needs."""
        reason = hgx.refusal(gpus, {fn.address for fn in offered})
        if reason is None:
            return [self.board(gpus, switches)]
        key = ('board', reason)
        log = LOG.debug if key in self._withheld_logged else LOG.warning
        self._withheld_logged.add(key)
        log('nvidia_gpu: [discovery] nvidia_hgx_mode is full_passthrough '
            'but the HGX board with NVSwitch %s is not offered: %s; no GPU '
            'of this host is offered', switches[0].address, reason)
        return []

    def board(self, gpus, switches):
        """The deployable of an HGX board offered whole (``common.hgx``),
        after this pass's ``functions()``.

        :param gpus: the board's GPU functions (list of
            ``sysfs.PCIFunction``, non-empty, sorted by address).
        :param switches: its NVSwitch functions (list, non-empty).
        :returns: ``discovered.DiscoveredDeployable`` of resource class
            ``hgx.RESOURCE_CLASS``, one attach handle naming every
            function (``hgx.ADDRESSES_KEY``: the GPUs, the NVSwitches and
            the functions each takes along, ``companions``), unhealthy
            when any function is (the reason names it).
        """
        first = gpus[0]
        members = {}
        for fn in gpus + switches:
            members[fn.address] = fn
            for companion in self.companions(fn):
                members.setdefault(companion.address, companion)
        addresses = sorted(members)
        health, reason = discovered.HEALTHY, None
        for address in addresses:
            state, why = self.health(members[address])
            if state != discovered.HEALTHY:
                health, reason = state, '%s: %s' % (address, why)
                break
        numa = base.numa_trait(first.numa_node)
        traits = ({self.product_trait(first.product_id), hgx.NVSWITCH_TRAIT,
                   hgx.gpu_count_trait(len(gpus))} |
                  {t for t in base.pci_traits(first) if t != numa})
        info = dict(first.address_parts,
                    **{hgx.ADDRESSES_KEY: ','.join(addresses)})
        dep = self.deployable(
            first, device_type='GPU', resource_class=hgx.RESOURCE_CLASS,
            traits=traits, numa_node=None, health=health,
            health_reason=reason, attach_handles=[('PCI', info)],
            cleaning=self._board_cleaning(list(members.values())))
        dep.std_board_info.pop(discovered.FUNCTIONS_KEY, None)
        dep.std_board_info.update({
            hgx.UNIT_KEY: addresses, 'gpus': len(gpus),
            'nvswitches': len(switches),
            'numa_nodes': sorted({m.numa_node for m in members.values()
                                  if m.numa_node is not None})})
        return dep

    def _board_cleaning(self, members):
        """The board's cleaning step: the driver's, except that ``flr``
        becomes ``none`` (with a warning, once) when the kernel can reset
        none of its functions (``agent.cleaning.worker`` resets each function
        that offers a reset)."""
        if self.cleaning != 'flr' or any(m.reset_methods for m in members):
            return self.cleaning
        key = ('no reset', members[0].address)
        if key not in self._withheld_logged:
            self._withheld_logged.add(key)
            LOG.warning('nvidia_gpu: the kernel offers no reset for any '
                        'function of the HGX board at %s; it is not reset '
                        'between tenants (cleaning none)',
                        members[0].address)
        return 'none'
