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

"""An HGX board in full passthrough (``accel_backend.common.hgx``):
discovered, reported through a real Placement, bound through the API,
composed by Nova's side and cleaned, over the generated ``hgx-h100``
tree (eight H100 SXM5 and four NVSwitches)."""

import os

import fixtures
import testtools

from accel_backend.agent.cleaning import worker
from nova_accel.virt import hostdev
from tests.unit.accel_backend import real_servers
from tests.unit.accel_backend import test_real_servers

FULL = {'nvidia_hgx_mode': 'full_passthrough'}
BOARD_RC = 'CUSTOM_NVIDIA_HGX_BOARD'
FIRST_GPU = '0000:18:00.0'
GPUS = ['0000:%s:00.0' % bus for bus, _ in real_servers.HGX_GPUS]
SWITCHES = ['0000:%s:00.0' % bus for bus in real_servers.HGX_NVSWITCHES]


class TestHGXBoard(test_real_servers.RealServerTest):

    TREE = test_real_servers.tree('hgx-h100')

    def test_default_mode_offers_the_gpus_not_the_switches(self):
        self.report()
        self.assertEqual(GPUS, sorted(self.providers()))
        for name in GPUS:
            self.assertEqual((1, 0, 1), self.inv(name, 'PGPU'))
            self.assertIsNone(self.inv(name, BOARD_RC))

    def test_full_passthrough_offers_one_board(self):
        svc = self.report(**FULL)
        self.assertEqual([FIRST_GPU], sorted(self.providers()))
        self.assertEqual((1, 0, 1), self.inv(FIRST_GPU, BOARD_RC))
        self.assertIsNone(self.inv(FIRST_GPU, 'PGPU'))
        traits = self.traits(self.providers()[FIRST_GPU]['uuid'])
        self.assertLessEqual({'CUSTOM_NVIDIA_NVSWITCH',
                              'CUSTOM_NVIDIA_HGX_8_GPU',
                              'CUSTOM_PCI_PRODUCT_10DE_2330'}, traits)
        # The board spans both NUMA nodes: no node trait.
        self.assertEqual([], [t for t in traits if 'NUMA' in t])
        self.assertEqual([FIRST_GPU], self.candidates(
            'resources=%s:1&required=CUSTOM_NVIDIA_HGX_8_GPU' % BOARD_RC))
        rp = self.providers()[FIRST_GPU]['uuid']
        arq_uuid, state = self.api_bind(svc, rc=BOARD_RC, rp=rp)
        self.assertEqual('Bound', state)
        arq = self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid).json
        info = arq['attach_handle_info']
        self.assertEqual(sorted(GPUS + SWITCHES),
                         info['addresses'].split(','))
        self.assertEqual(('0000', '18', '00', '0'), (
            info['domain'], info['bus'], info['device'], info['function']))
        # What Nova's side makes of it: one <hostdev> per function.
        sources = ['0000:%s:%s.%s' % tuple(
            int(e.find('source/address').get(k), 16)
            .__format__('02x' if k != 'function' else 'x')
            for k in ('bus', 'slot', 'function'))
            for e in hostdev.compose_unit(arq)]
        self.assertEqual(sorted(GPUS + SWITCHES), sources)
        return svc, arq_uuid

    def reset_writes(self):
        """Addresses whose sysfs ``reset`` was written."""
        found = []
        for address in sorted(os.listdir(self.root)):
            path = os.path.join(self.root, address, 'reset')
            if os.path.isfile(path) and open(path).read().strip():
                found.append(address)
        return found

    def test_release_resets_every_function_that_offers_a_reset(self):
        svc, arq_uuid = self.test_full_passthrough_offers_one_board()
        self.assertEqual([], self.reset_writes())
        self.api_unbind(svc, arq_uuid)
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        # The GPUs offer a reset; the NVSwitches of this tree do not.
        self.assertEqual(GPUS, self.reset_writes())
        self.assertEqual([FIRST_GPU], self.candidates(
            'resources=%s:1' % BOARD_RC))

    def test_a_function_gone_fails_the_cleaning(self):
        svc, arq_uuid = self.test_full_passthrough_offers_one_board()
        real_servers.shutil.rmtree(os.path.join(self.root, SWITCHES[-1]))
        self.api_unbind(svc, arq_uuid)
        self.assertEqual(['clean_failed'],
                         list(svc.cleaner.clean_pending().values()))
        self.assertEqual((1, 1, 1), self.inv(FIRST_GPU, BOARD_RC))

    def test_a_switch_blocked_by_a_host_function_reserves_the_board(self):
        # A host NIC in the IOMMU group of NVSwitch 0000:05:00.0.
        real_servers.st.write_function(
            self.root, '0000:04:00.0', '8086', '10d3', '020000', numa=0,
            driver='e1000e', iommu_group=20)
        svc = self.report(**FULL)
        self.assertEqual((1, 1, 1), self.inv(FIRST_GPU, BOARD_RC))
        view = self.device_view(svc, FIRST_GPU)
        self.assertEqual('unhealthy', view['status'])
        self.assertIn('0000:05:00.0: IOMMU group 20 also holds '
                      '0000:04:00.0', view['status_reason'])

    def test_board_of_mixed_products_is_not_offered(self):
        with open(os.path.join(self.root, GPUS[-1], 'device'), 'w') as f:
            f.write('0x2331\n')
        self.report(**FULL)
        self.assertEqual({}, self.providers())

    def test_switching_a_drained_host_to_boards(self):
        # 8 GPU devices become one board device: the functions behind
        # the board are counted, so the mass-removal guard lets it pass.
        self.report()
        self.assertEqual(8, len(self.providers()))
        self.report(**FULL)
        self.assertEqual([FIRST_GPU], sorted(self.providers()))
        self.assertEqual((1, 0, 1), self.inv(FIRST_GPU, BOARD_RC))
        # And back: the GPUs one by one again.
        self.report()
        self.assertEqual(GPUS, sorted(self.providers()))

    def test_switching_a_drained_pooled_host_to_boards(self):
        self.report(nvidia_gpu_pool='true')
        # One pool spanning both NUMA nodes ([discovery] pool_numa_span).
        self.assertEqual(1, len(self.providers()))
        self.report(nvidia_gpu_pool='true', **FULL)
        self.assertEqual([FIRST_GPU], sorted(self.providers()))


class TestBoardCleaningInput(testtools.TestCase):
    """A unit's addresses come from the database: only PCI addresses
    under the sysfs root are ever touched."""

    def test_a_name_that_is_no_address_fails_the_cleaning(self):
        root = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(root, 'etc'))
        os.makedirs(os.path.join(root, FIRST_GPU))
        for bad in ('../etc', 'etc'):
            e = self.assertRaises(
                worker.CleaningError, worker.run_method, 'command',
                FIRST_GPU, root, command='true',
                handle_info={'addresses': '%s,%s' % (FIRST_GPU, bad)})
            self.assertIn('not a PCI address', str(e))
