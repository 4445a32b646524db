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
"""NVIDIA vGPU through the vendor-specific VFIO framework, end to end: a
``Service`` over a copy of the generated ``h100-vgpu-vfio`` tree (NVIDIA's
driver emulated at its sysfs files by ``nvidia_vgpu_card``) reports to a
real Placement; binds hand out VFs, whose ``<hostdev>`` is
``managed='no'``; cleaning recreates the vGPU."""

import os

from accel_backend.agent.cleaning import worker
from accel_backend.agent.discovery import nvidia_vfio
from nova_accel.virt import hostdev
from tests.unit.accel_backend import nvidia_vgpu_card as card_mod
from tests.unit.accel_backend import test_real_servers

A, B = '0000:41:00.0', '0000:c1:00.0'
PROFILES = 'NVIDIA H100-20C,NVIDIA H100-40C'
T20 = 'CUSTOM_VGPU_NVIDIA_H100_20C'
T40 = 'CUSTOM_VGPU_NVIDIA_H100_40C'


class VendorVFIOTestBase(test_real_servers.RealServerTest):
    """A ``Service`` with the ``nvidia_vgpu`` driver over a copy of
    ``TREE``; ``PROFILES`` the default ``[nvidia_vgpu] profiles``."""

    DRIVERS = 'nvidia_vgpu,nvidia_gpu'
    PROFILES = PROFILES

    def report(self, profiles=None, configure=True):
        return super().report(groups={'nvidia_vgpu': {
            'profiles': profiles or self.PROFILES,
            'configure_vfs': str(configure)}})

    def currents(self, card):
        return [nvidia_vfio.current(self.root, vf) for vf in card.vfs]


class TestNvidiaVendorVFIO(VendorVFIOTestBase):

    TREE = test_real_servers.tree('h100-vgpu-vfio')

    def setUp(self):
        super().setUp()
        self.cards = card_mod.h100_cards(self.root)
        self.useFixture(card_mod.DriverFixture(self.cards))

    def test_free_vfs_get_the_profile_up_to_what_the_card_holds(self):
        svc = self.report()
        # A: every profile free, the first enabled one is 20C (4 a card);
        # B: runs 40C already (1 of 2), so 40C; no PF sold whole.
        self.assertEqual([1053] * 4, self.currents(self.cards[0]))
        self.assertEqual([2052, 2052, 0, 0], self.currents(self.cards[1]))
        self.assertEqual([A, B], sorted(self.providers()))
        self.assertEqual((4, 0, 4), self.inv(A, 'VGPU'))
        self.assertEqual((2, 0, 2), self.inv(B, 'VGPU'))
        self.assertIn(T20, self.traits(self.providers()[A]['uuid']))
        self.assertIn(T40, self.traits(self.providers()[B]['uuid']))
        self.assertEqual([B], self.candidates(
            'resources=VGPU:1&required=%s' % T40))
        self.assertIsNone(self.inv(A, 'PGPU'))
        # The card is full: its lists are the header alone, and the next
        # pass changes nothing.
        self.assertEqual({}, nvidia_vfio.creatable(self.root, B[:-1] + '7'))
        self.writes(svc)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))

    def test_a_restart_names_the_vfs_of_a_full_card(self):
        self.report()
        self.assertTrue(os.path.exists(os.path.join(
            self.tmp, 'nvidia-vgpu-types.json')))
        # A new process: card B lists nothing, the checkpoint names 2052.
        self.report()
        self.assertEqual((2, 0, 2), self.inv(B, 'VGPU'))

    def test_a_card_keeps_the_profile_its_vfs_carry(self):
        self.report(profiles='NVIDIA H100-20C')
        # An operator puts 10C first: card A runs 20C, which is enabled
        # still, so it goes on offering its four 20C vGPUs.
        self.report(profiles='NVIDIA H100-10C,NVIDIA H100-20C')
        self.assertEqual((4, 0, 4), self.inv(A, 'VGPU'))
        self.assertIn(T20, self.traits(self.providers()[A]['uuid']))
        self.assertEqual([1053] * 4, self.currents(self.cards[0]))

    def test_configured_vfs_only_when_told_not_to_configure(self):
        self.report(configure=False)
        self.assertEqual([0] * 4, self.currents(self.cards[0]))
        self.assertEqual([B], sorted(self.providers()))
        self.assertEqual((1, 0, 1), self.inv(B, 'VGPU'))

    def test_no_enabled_profile_nothing_offered(self):
        logger = self.useFixture(test_real_servers.fixtures.FakeLogger())
        self.report(profiles='NVIDIA H100-80C')
        # A takes 80C (1 a card); B runs 40C, which is not enabled.
        self.assertEqual([A], sorted(self.providers()))
        self.assertEqual((1, 0, 1), self.inv(A, 'VGPU'))
        self.assertIn("GPU 0000:c1:00.0 offers the vGPU profiles "
                      "['NVIDIA H100-40C']", logger.output)

    def test_bound_vf_composes_unmanaged_and_cleaning_recreates_it(self):
        svc = self.report()
        arq_uuid, state = self.api_bind(svc, B, rc='VGPU')
        self.assertEqual('Bound', state)
        arq = self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid).json
        info = arq['attach_handle_info']
        self.assertEqual(('no', 'NVIDIA H100-40C', 'c1'),
                         (info['managed'], info['vgpu_profile'],
                          info['bus']))
        vf = '0000:c1:00.%s' % info['function']
        self.assertEqual(2052, nvidia_vfio.current(self.root, vf))
        elem = hostdev.compose_hostdev(arq)
        self.assertEqual(('pci', 'no'), (elem.get('type'),
                                         elem.get('managed')))
        self.assertEqual('0xc1', elem.find('source/address').get('bus'))
        writes = []
        real = nvidia_vfio._write

        def recording(root, address, value):
            writes.append((address, value))
            return real(root, address, value)
        self.useFixture(test_real_servers.fixtures.MonkeyPatch(
            'accel_backend.agent.discovery.nvidia_vfio._write', recording))
        self.api_unbind(svc, arq_uuid)
        results = svc.cleaner.clean_pending()
        self.assertEqual(['available'], list(results.values()))
        # Destroyed and created afresh, with the card's id for 40C.
        self.assertEqual([(vf, 0), (vf, 2052)], writes)
        self.assertEqual(2052, nvidia_vfio.current(self.root, vf))
        self.assertEqual([('available', None)] * 2,
                         self.handle_states(svc, B))

    def test_cleaning_fails_when_the_card_cannot_recreate(self):
        self.report()
        info = {'domain': '0000', 'bus': 'c1', 'device': '00',
                'function': '4', 'managed': 'no',
                'vgpu_profile': 'NVIDIA H100-80C'}
        err = self.assertRaises(worker.CleaningError, worker.run_method,
                                'vgpu', B, self.root, handle_info=info)
        self.assertIn('cannot create a NVIDIA H100-80C vGPU', str(err))
