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
``NOVA_ACCEL_AIO_CACHE`` passed on, which is ``up`` (PostgreSQL, the
nested compute node), ``demo`` and ``down``.  ``test_cloud``'s class brings
up that same cloud (``RealGuestTestBase``: the arguments ``all
--skip-tempest`` parses to) and takes it down after; its
``test_the_readme_demo`` runs the ``demo`` step on it the same way, as a
subprocess (``run``), and reads its output (``check``): the ARQ bound to
a PCI function of L1, that function's ``<hostdev>`` in L1's ``virsh
dumpxml``, the guest listing the ``edu`` device, and after the delete the
function off ``vfio-pci`` and free in Placement.  Sharing the cloud
saves CI a second cloud's start and stop (about 4 minutes on 2 cores).
"""

import json
import os
import re
import subprocess
import sys
import time

from tools.aio import devices
from tools.nested import node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
#: The demo step: a guest under TCG inside TCG, booted, listed, deleted.
TIMEOUT = 1200
EDU = '0x%s:0x%s' % (devices.EDU_SPEC['vendor_id'],
                     devices.EDU_SPEC['product_id'])
EDUS = node.Layout.ROOT_EDUS + node.Layout.BRIDGED_EDUS + (
    node.Layout.NUMA1_EDU,)


def run():
    """Run ``python -m tools.aio demo`` against the cloud that is up, as
    ``tox -e aio`` runs it (the standard library, ``HOME`` and the
    caches).

    :returns: ``(exit status, output, seconds)``.
    :raises subprocess.TimeoutExpired: after ``TIMEOUT`` seconds.
    """
    env = {k: os.environ[k] for k in (
        'PATH', 'HOME', 'LANG', 'TMPDIR', 'NOVA_ACCEL_AIO_CACHE',
        'NOVA_ACCEL_NESTED_CACHE') if k in os.environ}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, '-m', 'tools.aio', 'demo'], cwd=ROOT, env=env,
        stdin=subprocess.DEVNULL, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=TIMEOUT)
    took = time.monotonic() - t0
    print('tools.aio demo: exit %d after %.0f s' % (done.returncode, took))
    return done.returncode, done.stdout, took


def check(test, rc, out):
    """Assert on ``test`` (a ``testtools.TestCase``) what the demo of the
    nested compute node must have printed (``run``'s answer)."""
    test.assertEqual(0, rc, out[-6000:])
    test.assertNotIn('FAILED', out)
    # The ARQ is bound to one of L1's edu functions...
    address = re.search(r'== the ARQ is Bound to PCI function (\S+) of '
                        r'the compute node \(L1\)', out)
    test.assertIsNotNone(address, out[-6000:])
    address = address.group(1)
    test.assertIn(address, EDUS)
    domain, bus, rest = address.split(':')
    slot, function = rest.split('.')
    # ... on vfio-pci while the guest runs...
    state = _json_after(out, '== in L1: the function while the guest runs')
    test.assertEqual('vfio-pci', state['driver'])
    # ... libvirt in L1 has its <hostdev>...
    hostdevs = _section(out, '== in L1: virsh dumpxml')
    test.assertIn('<hostdev mode="subsystem" type="pci" managed="yes">',
                  hostdevs)
    test.assertIn('<address domain="0x%s" bus="0x%s" slot="0x%s" '
                  'function="0x%s" />' % (domain, bus, slot, function),
                  hostdevs)
    # ... and the guest lists the device on its console.
    listing = _section(out, "== the guest's console")
    test.assertRegex(listing, r'(?m)^guest-pci \S+ %s\b' % EDU)
    # After the delete: nothing left, the function off vfio-pci, free in
    # Placement.
    test.assertIn('== after delete: ARQs of the server: 0, Placement '
                  'allocations: 0', out)
    after = _json_after(out, '== in L1 after delete: the function %s' %
                        address)
    test.assertNotEqual('vfio-pci', after['driver'])
    usages = re.search(r'== its resource provider \S+ in Placement: '
                       r'usages (\{.*\})', out)
    test.assertIsNotNone(usages, out[-6000:])
    test.assertFalse(any(json.loads(usages.group(1)).values()))


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
