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

"""What a test guest says on its serial console about its PCI functions.

The guest image of the all-in-one cloud's nested compute node (its init,
``tools/nested/image.py``) prints ``guest: boot <boot id>`` (a new id on
each boot), ``guest: PCI functions``, then one line per function::

    guest-pci <address> <0xvendor:0xdevice> numa=<node>

then ``guest: done``; on each change of its functions (hot-plug) it prints
the list again under ``guest: PCI functions changed``.  Any image whose
init prints the same lines works with the guest scenarios.  No tempest
import here: the repository's own nested tests read consoles too.
"""

import collections

#: One function of a listing: ``address`` (``DDDD:BB:SS.F``), ``pci_id``
#: (``0xVVVV:0xDDDD``) and ``numa`` (the guest's ``numa_node``, int; -1
#: when none).
Function = collections.namedtuple('Function', 'address pci_id numa')


def listing(console):
    """The last complete listing of its PCI functions by the guest's last
    boot.

    :param console: the console output (str).
    :returns: list of :class:`Function`, or None while the last boot has
        completed no listing (the guest is still booting or printing).
    """
    last, current = None, None
    for line in console.splitlines():
        if line.startswith('guest: boot '):
            last, current = None, None
        elif line.startswith('guest: PCI functions'):
            current = []
        elif line.startswith('guest-pci ') and current is not None:
            fields = line.split()
            numa = fields[3].split('=', 1)[1] if len(fields) > 3 else ''
            current.append(Function(fields[1], fields[2],
                                    int(numa) if numa.lstrip('-').isdigit()
                                    else -1))
        elif line.startswith('guest: done') and current is not None:
            last, current = current, None
    return last


def boot_id(console):
    """The id of the last boot the console shows (str), or None."""
    ids = [line.split(None, 2)[2].strip() for line in console.splitlines()
           if line.startswith('guest: boot ') and len(line.split()) > 2]
    return ids[-1] if ids else None


def count(console, pci_id):
    """How many functions of ``pci_id`` the last complete listing has (0
    while there is none)."""
    return sum(fn.pci_id == pci_id for fn in listing(console) or ())
