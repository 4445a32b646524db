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

"""``tools/run demo`` as CI runs it: the README's demo on the nested
compute node, checked on what it prints.

``tools/run demo`` installs system packages (``bindep -b aio nested``,
which CI's ``.ci/run`` installs before ``tox -e nested``) and then runs
``tox -e aio -- all --skip-tempest``: ``python -m tools.aio all
--skip-tempest`` with only the standard library and ``HOME`` and
``NOVA_ACCEL_AIO_CACHE`` passed on.  This runs that entry point the same
way, as a subprocess, and reads its output: the ARQ bound to a PCI
function of L1, that function's ``<hostdev>`` in L1's ``virsh
dumpxml``, the guest listing the ``edu`` device, and after the delete
the function off ``vfio-pci`` and free in Placement.

It brings up a cloud of its own, so none may be up (``tools.aio`` keeps
one): ``test_cloud``'s class takes its cloud down before this module
runs (``stestr --concurrency 1`` runs modules in order).  Measured on 2
cores: see the contributor guide, "The nested compute node".
"""

import json
import os
import re
import subprocess
import sys
import time

import testtools

from tools.aio import cloud as cloud_mod
from tools.aio import devices
from tools.nested import node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
#: The whole demo: cloud up (2 to 3.5 minutes), a guest under TCG inside
#: TCG, down.
TIMEOUT = 1800
EDU = '0x%s:0x%s' % (devices.EDU_SPEC['vendor_id'],
                     devices.EDU_SPEC['product_id'])
EDUS = node.Layout.ROOT_EDUS + node.Layout.BRIDGED_EDUS + (
    node.Layout.NUMA1_EDU,)


class TestDemo(testtools.TestCase):

    def test_tools_run_demo(self):
        self.assertIsNone(cloud_mod.Cloud.load(),
                          'a cloud is up: the demo would not get its own')
        # As tox -e aio runs it: the standard library, HOME and the cache.
        env = {k: os.environ[k] for k in (
            'PATH', 'HOME', 'LANG', 'TMPDIR', 'NOVA_ACCEL_AIO_CACHE',
            'NOVA_ACCEL_NESTED_CACHE') if k in os.environ}
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, '-m', 'tools.aio', 'all', '--skip-tempest'],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=TIMEOUT)
        took = time.monotonic() - t0
        out = done.stdout
        print('tools.aio all --skip-tempest: exit %d after %.0f s' % (
            done.returncode, took))
        self.assertEqual(0, done.returncode, out[-6000:])
        self.assertNotIn('FAILED', out)
        # Down again, whatever it did.
        self.assertIsNone(cloud_mod.Cloud.load())

        # The ARQ is bound to one of L1's edu functions...
        address = re.search(r'== the ARQ is Bound to PCI function (\S+) of '
                            r'the compute node \(L1\)', out)
        self.assertIsNotNone(address, out[-6000:])
        address = address.group(1)
        self.assertIn(address, EDUS)
        domain, bus, rest = address.split(':')
        slot, function = rest.split('.')
        # ... on vfio-pci while the guest runs...
        state = _json_after(out, '== in L1: the function while the guest '
                            'runs')
        self.assertEqual('vfio-pci', state['driver'])
        # ... libvirt in L1 has its <hostdev>...
        hostdevs = _section(out, '== in L1: virsh dumpxml')
        self.assertIn('<hostdev mode="subsystem" type="pci" managed="yes">',
                      hostdevs)
        self.assertIn('<address domain="0x%s" bus="0x%s" slot="0x%s" '
                      'function="0x%s" />' % (domain, bus, slot, function),
                      hostdevs)
        # ... and the guest lists the device on its console.
        listing = _section(out, "== the guest's console")
        self.assertRegex(listing, r'(?m)^guest-pci \S+ %s\b' % EDU)
        # After the delete: nothing left, the function off vfio-pci, free
        # in Placement.
        self.assertIn('== after delete: ARQs of the server: 0, Placement '
                      'allocations: 0', out)
        after = _json_after(out, '== in L1 after delete: the function %s' %
                            address)
        self.assertNotEqual('vfio-pci', after['driver'])
        usages = re.search(r'== its resource provider \S+ in Placement: '
                           r'usages (\{.*\})', out)
        self.assertIsNotNone(usages, out[-6000:])
        self.assertFalse(any(json.loads(usages.group(1)).values()))


def _section(out, heading):
    """The text after the line starting with ``heading`` up to the next
    ``==`` heading."""
    start = out.index(heading)
    start = out.index('\n', start) + 1
    end = out.find('\n==', start)
    return out[start:] if end < 0 else out[start:end]


def _json_after(out, heading):
    """The JSON object on the first line after ``heading``'s line."""
    return json.loads(_section(out, heading).strip().splitlines()[0])
