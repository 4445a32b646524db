#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS,
#    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#    See the License for the specific language governing permissions and
#    limitations under the License.
"""Sysfs trees recorded from real hosts with ``tools/record_sysfs.py``,
discovered end to end: a ``Service`` over a copy of the tree reports to
a real Placement (openstack-placement's fixture).

``h200-vm-no-iommu`` and ``h100-vm-no-iommu``: two cloud VMs (guest
kernel 6.18.44, NVIDIA driver 580.159.04), one with an NVIDIA H200
(10de:2335, subsystem 10de:18bf) and one with an H100 SXM5 80GB
(10de:2330, subsystem 10de:16c1), each passed through at 0000:00:06.0
beside five virtio functions.  Neither guest has an IOMMU, so
``/sys/kernel/iommu_groups`` is empty and no function has an
``iommu_group`` link.  Both GPUs offer ``flr`` in ``reset_method`` and
are trained at their maximum link (32.0 GT/s x16).
"""

import json
import os

import webob

from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_real_servers

GPU = '0000:00:06.0'


class RecordedGuestWithoutIOMMU:
    """A recorded GPU guest: a GPU the kernel can reset but vfio-pci
    cannot assign, because the host has no IOMMU.  Subclasses name the
    tree (``TREE``) and the GPU's PCI product id (``PRODUCT``)."""

    TREE = None
    PRODUCT = None

    def test_recorded_tree_is_what_the_host_showed(self):
        with open(os.path.join(self.TREE, 'PROVENANCE.json')) as f:
            provenance = json.load(f)
        self.assertEqual(0, provenance['host']['iommu_groups'])
        self.assertEqual(
            sorted(provenance['functions_recorded']),
            sorted(n for n in os.listdir(self.TREE)
                   if n.startswith('0000:')))
        self.assertFalse(os.path.lexists(
            os.path.join(self.TREE, GPU, 'iommu_group')))
        with open(os.path.join(self.TREE, GPU, 'device')) as f:
            self.assertEqual('0x%s' % self.PRODUCT, f.read().strip())

    def test_gpu_discovered_unhealthy_and_not_offered(self):
        svc = self.make_service()
        svc.report_pass()
        # The only accelerator is reported with its inventory reserved.
        self.assertEqual([GPU], sorted(self.providers()))
        self.assertEqual((1, 1), self.reserved(GPU))
        self.assertEqual([], self.candidates('resources=PGPU:1'))
        dev = self.call(svc, '/v2/devices/%s' % test_lifecycle.device_uuid(
            GPU)).json
        self.assertEqual('unhealthy', dev['status'])
        self.assertIn('no IOMMU group', dev['status_reason'])
        # What the kernel offers for cleaning, and the link, as read.
        info = dev['std_board_info']
        if isinstance(info, str):
            info = json.loads(info)
        self.assertEqual('flr', info['reset_method'])
        self.assertEqual('10de', dev['vendor'])
        # The recorded product id reaches Placement as a trait.
        self.assertIn('CUSTOM_PCI_PRODUCT_10DE_%s' % self.PRODUCT,
                      self.traits(self.providers()[GPU]['uuid']))
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        self.assertEqual(503, resp.status_int)
        self.assertIn('the IOMMU is off', ' '.join(resp.json['reasons']))


class TestH200WithoutIOMMU(RecordedGuestWithoutIOMMU,
                           test_real_servers.RealServerTest):
    TREE = test_real_servers.tree('h200-vm-no-iommu')
    PRODUCT = '2335'


class TestH100WithoutIOMMU(RecordedGuestWithoutIOMMU,
                           test_real_servers.RealServerTest):
    TREE = test_real_servers.tree('h100-vm-no-iommu')
    PRODUCT = '2330'
