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

"""Names of PCI vendors and devices: the system's pci.ids database, with a
small built-in table of accelerators for the ids it lacks (or when it is
not installed).

pci.ids (https://pci-ids.ucw.cz, Debian's ``pci.ids`` / ``hwdata``
packages) lists vendors as ``vvvv  Name`` lines, their devices as
``<TAB>dddd  Name`` lines and subsystems as ``<TAB><TAB>...`` lines; the
device class section (``C cc  Name``) follows the vendors.
"""

import os
import re

import os_traits
from oslo_log import log as logging

LOG = logging.getLogger(__name__)
SEARCH_PATHS = ('/usr/share/misc/pci.ids', '/usr/share/hwdata/pci.ids')

#: (vendor, device) -> name, for ids pci.ids lacks or when it is not
#: installed: as pci.ids writes them where it lists them, ours otherwise
#: (the Alveo user functions, which carry the accelerator, next to their
#: management functions).
BUILTIN = {
    ('10de', '1b38'): 'GP102GL [Tesla P40]',
    ('10de', '1db4'): 'GV100GL [Tesla V100 PCIe 16GB]',
    ('10de', '1db6'): 'GV100GL [Tesla V100 PCIe 32GB]',
    ('10de', '1eb8'): 'TU104GL [Tesla T4]',
    ('10de', '20b0'): 'GA100 [A100 SXM4 40GB]',
    ('10de', '20b2'): 'GA100 [A100 SXM4 80GB]',
    ('10de', '20b5'): 'GA100 [A100 PCIe 80GB]',
    ('10de', '20f1'): 'GA100 [A100 PCIe 40GB]',
    ('10de', '2236'): 'GA102GL [A10]',
    ('10de', '2237'): 'GA102GL [A10G]',
    ('10de', '25b6'): 'GA107GL [A2 / A16]',
    ('10de', '26b5'): 'AD102GL [L40]',
    ('10de', '26b9'): 'AD102GL [L40S]',
    ('10de', '27b8'): 'AD104GL [L4]',
    ('10de', '2330'): 'GH100 [H100 SXM5 80GB]',
    ('10de', '2331'): 'GH100 [H100 PCIe]',
    ('10ee', '5000'): 'Alveo U200 XDMA Platform',
    ('10ee', '5001'): 'Alveo U200 (user function)',
    ('10ee', '5004'): 'Alveo U250 XDMA Platform',
    ('10ee', '5005'): 'Alveo U250 (user function)',
    ('10ee', '500c'): 'Alveo U280 XDMA Platform',
    ('10ee', '500d'): 'Alveo U280 (user function)',
    ('10ee', '5020'): 'Alveo U50 XDMA Platform',
    ('10ee', '5021'): 'Alveo U50 (user function)',
    ('8086', '09c4'): 'Intel Programmable Acceleration Card with Intel '
                      'Arria 10 GX FPGA',
    ('8086', '09c5'): 'Intel Programmable Acceleration Card with Intel '
                      'Arria 10 GX FPGA (VF)',
    ('8086', '0b2b'): 'Intel FPGA Programmable Acceleration Card D5005',
    ('8086', '0b2c'): 'Intel FPGA Programmable Acceleration Card D5005 (VF)',
    ('8086', '0b30'): 'Intel FPGA Programmable Acceleration Card N3000',
    ('8086', '0b31'): 'Intel FPGA Programmable Acceleration Card N3000 (VF)',
    ('8086', '37c8'): 'C62x Chipset QuickAssist Technology',
    ('8086', '37c9'): 'C62x Chipset QuickAssist Technology Virtual '
                      'Function',
}
BUILTIN_VENDORS = {'10de': 'NVIDIA Corporation', '10ee': 'Xilinx Corporation',
                   '8086': 'Intel Corporation'}

_VENDOR = re.compile(r'^([0-9a-f]{4})\s+(.+)$')
_DEVICE = re.compile(r'^\t([0-9a-f]{4})\s+(.+)$')


class PCIIds:
    """Vendor and device names.

    :param path: a pci.ids file; None searches ``SEARCH_PATHS``. Its names
        win; the built-in table names what it lacks.
    """

    def __init__(self, path=None):
        self.vendors = dict(BUILTIN_VENDORS)
        self.devices = dict(BUILTIN)
        self.source = 'built-in'
        if path is None:
            path = next((p for p in SEARCH_PATHS if os.path.exists(p)), None)
        if path is not None:
            try:
                self._load(path)
                self.source = '%s + built-in' % path
            except OSError as e:
                LOG.warning('Cannot read %s (%s); using built-in PCI names',
                            path, e)

    def _load(self, path):
        vendors, devices = {}, {}
        vendor = None
        with open(path, encoding='utf-8', errors='replace') as f:
            for line in f:
                line = line.rstrip('\n')
                if not line or line.startswith('#'):
                    continue
                if line.startswith('C '):
                    break  # the device class section: no vendors follow
                m = _VENDOR.match(line)
                if m:
                    vendor = m.group(1)
                    vendors[vendor] = m.group(2).strip()
                    continue
                m = _DEVICE.match(line)
                if m and vendor is not None:
                    devices[(vendor, m.group(1))] = m.group(2).strip()
        self.vendors.update(vendors)
        self.devices.update(devices)

    def vendor_name(self, vendor_id):
        return self.vendors.get(vendor_id)

    def device_name(self, vendor_id, product_id):
        """pci.ids name, e.g. ``TU104GL [Tesla T4]``, or None."""
        return self.devices.get((vendor_id, product_id))

    def model(self, vendor_id, product_id):
        """Human-readable model for a device record: vendor and device
        names, ``vendor:product`` ids for what is not known."""
        dev = self.device_name(vendor_id, product_id)
        vendor = self.vendor_name(vendor_id)
        if dev is None:
            return '%s %s:%s' % (vendor, vendor_id, product_id) if vendor \
                else '%s:%s' % (vendor_id, product_id)
        return '%s %s' % (vendor, dev) if vendor else dev


def product_token(name):
    """Trait-ready product name from a pci.ids device name.

    The marketing name in brackets is preferred, without the retired
    ``Tesla`` brand: ``TU104GL [Tesla T4]`` -> ``T4``,
    ``GA100 [A100 PCIe 80GB]`` -> ``A100_PCIE_80GB``, ``GA107GL [A2 /
    A16]`` -> ``A2_A16``.  Normalised by os-traits' ``normalize_name``
    (os-traits 3.x, ``os_traits/__init__.py``: a run of characters other
    than ``A-Z``, ``a-z`` and ``0-9`` becomes ``_``, then upper case),
    without its ``CUSTOM_`` prefix and the ``_`` it leaves at either end.

    :param name: str, a pci.ids device name.
    :returns: str, or None when nothing is left.
    """
    m = re.search(r'\[([^\]]+)\]', name)
    text = m.group(1) if m else name
    text = re.sub(r'^(Tesla|NVIDIA)\s+', '', text.strip(), flags=re.I)
    token = os_traits.normalize_name(text)[len(os_traits.CUSTOM_NAMESPACE):]
    return token.strip('_') or None
