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

"""FPGA cards (resource class FPGA), selected by PCI ids."""

import fnmatch

from oslo_log import log as logging

from accel_backend.agent.discovery.drivers import base
from accel_backend.agent.discovery import sysfs

LOG = logging.getLogger(__name__)

#: Management function -> (card, user function) of the common cards.  A
#: guest given the management function could reflash the card's shell
#: (Alveo: ``xclmgmt``; Intel PAC: the FPGA Management Engine of the PF),
#: so only the user function is an accelerator.  Alveo cards pair two PFs
#: (Xilinx XRT's supported platforms: U200 5000/5001, U250 5004/5005, U280
#: 500c/500d, U50 5020/5021); Intel PACs offer their accelerator function
#: units on SR-IOV VFs of the management PF (Intel OPAE, "virtualization"
#: guide: PAC Arria 10 GX 09c4/09c5, D5005 0b2b/0b2c, N3000 0b30/0b31).
CARDS = {
    ('10ee', '5000'): ('Alveo U200', ('10ee', '5001')),
    ('10ee', '5004'): ('Alveo U250', ('10ee', '5005')),
    ('10ee', '500c'): ('Alveo U280', ('10ee', '500d')),
    ('10ee', '5020'): ('Alveo U50', ('10ee', '5021')),
    ('8086', '09c4'): ('Intel PAC Arria 10 GX', ('8086', '09c5')),
    ('8086', '0b2b'): ('Intel PAC D5005', ('8086', '0b2c')),
    ('8086', '0b30'): ('Intel PAC N3000', ('8086', '0b31')),
}
#: User functions that are SR-IOV VFs: reported although they are VFs.
USER_VFS = frozenset(user for card, user in CARDS.values()
                     if user[0] == '8086')
#: The default ``[discovery] fpga_ids``: the functions of the known cards
#: (their management functions are then left out), nothing else.
DEFAULT_IDS = sorted('%s:%s' % ids for mgmt, (card, user) in CARDS.items()
                     for ids in (mgmt, user))
XILINX = '10ee'


class FPGADriver(base.PCIDriverBase):
    """Each PCI function whose ``vendor:product`` is in ``[discovery]
    fpga_ids`` (globs allowed: ``10ee:*``) is one FPGA.

    The default ids are the known cards' (``DEFAULT_IDS``).  The
    management function of a known card (``CARDS``) is left out unless
    ``[discovery] fpga_management_functions``: its user function is the
    accelerator.  Function 0 of an unknown Xilinx card is its management
    function (XRT's PF0) and is left out unless an ``fpga_ids`` entry
    names its ``vendor:product`` exactly; a management function that is
    offered is logged as a warning.  SR-IOV VFs are skipped, except the
    user VFs of Intel PACs (their PF is then the management function).

    Traits: ``CUSTOM_FPGA_XILINX`` / ``CUSTOM_FPGA_INTEL`` (other vendors
    ``CUSTOM_FPGA_<vendor id>``), vendor/product, VF and NUMA traits.

    :param conf: accel_backend ``ConfigOpts``.
    :raises ValueError: a malformed ``fpga_ids`` entry.
    """

    name = 'fpga'
    VENDOR_TRAITS = {'10ee': 'CUSTOM_FPGA_XILINX', '8086': 'CUSTOM_FPGA_INTEL',
                     '1172': 'CUSTOM_FPGA_INTEL'}

    def __init__(self, conf):
        super().__init__(conf)
        self.management = conf.discovery.fpga_management_functions
        self._warned = set()
        self.ids = []
        for entry in conf.discovery.fpga_ids:
            vendor, sep, product = entry.strip().lower().partition(':')
            if not sep or len(vendor) != 4 or not product:
                raise ValueError('[discovery] fpga_ids: %r is not '
                                 'vendor:product' % entry)
            self.ids.append((vendor, product))

    def _selected(self, fn):
        return any(fn.vendor_id == v and fnmatch.fnmatch(fn.product_id, p)
                   for v, p in self.ids)

    def _named(self, fn):
        """True when an ``fpga_ids`` entry names ``fn`` exactly (no
        glob)."""
        return (fn.vendor_id, fn.product_id) in self.ids

    def _unknown_xilinx_management(self, fn):
        """An unknown Xilinx card's management function, by XRT's
        convention (XRT documentation, "Platform Overview": an Alveo
        shell has two physical functions, PF0 the management PF that
        ``xclmgmt`` binds, PF1 the user PF): function 0 of a slot whose
        function 1 is Xilinx's too."""
        if fn.vendor_id != XILINX or (fn.vendor_id, fn.product_id) in \
                CARDS or not fn.address.endswith('.0'):
            return False
        pf1 = sysfs.read_function(self.root, fn.address[:-1] + '1')
        return pf1 is not None and pf1.vendor_id == XILINX

    def _skipped(self, fn):
        ids = (fn.vendor_id, fn.product_id)
        if ids in CARDS:
            card, user = CARDS[ids]
            if not self.management:
                LOG.debug('Skipping %s: management function of an %s (its '
                          'user function %s:%s is the accelerator)',
                          fn.address, card, *user)
                return True
            self._warn_management(fn, 'of an %s' % card)
        elif self._unknown_xilinx_management(fn):
            if not self._named(fn):
                LOG.debug('Skipping %s: function 0 of a Xilinx card, its '
                          'management function (name %s:%s in [discovery] '
                          'fpga_ids to offer it)', fn.address,
                          fn.vendor_id, fn.product_id)
                return True
            self._warn_management(fn, 'of a Xilinx card (function 0)')
        if fn.physfn and ids not in USER_VFS:
            LOG.debug('Skipping %s: SR-IOV VF of %s', fn.address,
                      fn.physfn)
            return True
        return False

    def _warn_management(self, fn, what):
        if fn.address in self._warned:
            return
        self._warned.add(fn.address)
        LOG.warning('Offering %s (%s:%s), the management function %s, to '
                    'guests as the configuration asks: a guest that holds '
                    'it can reflash the card', fn.address, fn.vendor_id,
                    fn.product_id, what)

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address."""
        found = []
        for fn in self.functions():
            if not self._selected(fn) or self._skipped(fn):
                continue
            if self.refused(fn):
                continue
            vendor_trait = self.VENDOR_TRAITS.get(
                fn.vendor_id, 'CUSTOM_FPGA_%s' % fn.vendor_id.upper())
            found.append(self.deployable(
                fn, device_type='FPGA', resource_class='FPGA',
                traits={vendor_trait} | base.pci_traits(fn),
                attach_handles=[('PCI', fn.address_parts)]))
        return found
