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
"""MIG-backed vGPU through the vendor-specific VFIO framework: a
``Service`` over a copy of the generated ``h200-mig-vgpu-vfio`` tree
(NVIDIA's driver emulated at its sysfs files by
``nvidia_vgpu_card.MigCard``, the GPU instances in a simulated MIG host)
reports each MIG-backed type a GPU's VFs carry as a ``CUSTOM_MIG_SLICE``
provider of a real Placement, with the traits a flavor asks for."""

from accel_backend.agent.discovery import nvidia_vfio
from accel_backend.agent.mig import vgpu_types
from nova_accel.virt import hostdev
from tests.unit.accel_backend import nvidia_vgpu_card as card_mod
from tests.unit.accel_backend import test_nvidia_vgpu
from tests.unit.accel_backend import test_real_servers

A, B = '0000:41:00.0', '0000:c1:00.0'
T3, T2, T1 = ('NVIDIA H200X-3-71C', 'NVIDIA H200X-2-35C',
              'NVIDIA H200X-1-18C')
PROFILES = ','.join((T3, T2, T1, 'NVIDIA H200X-70C'))
SLICE = 'resources=CUSTOM_MIG_SLICE:1'


class TestTypeNames(test_real_servers.testtools.TestCase):

    def test_mig_profile_of_nvidia_type_names(self):
        # NVIDIA vGPU types reference, "Hopper" and "Ampere" tables.
        for name, profile in (('NVIDIA H200X-3-71C', '3g.71gb'),
                              ('H100XM-1-10CME', '1g.10gb+me'),
                              ('GRID A100-3-20C', '3g.20gb'),
                              ('NVIDIA H200X-7-141C', '7g.141gb'),
                              ('NVIDIA H200X-70C', None),
                              ('NVIDIA H100-40C', None),
                              ('nvidia-693', None)):
            self.assertEqual(profile, vgpu_types.mig_profile(name), name)
        self.assertEqual('H200X-3-71C', vgpu_types.table_name(T3))


class TestMigBackedVGPU(test_nvidia_vgpu.VendorVFIOTestBase):

    TREE = test_real_servers.tree('h200-mig-vgpu-vfio')
    PROFILES = PROFILES

    def setUp(self):
        super().setUp()
        self.host = card_mod.h200_mig_host()
        self.cards = card_mod.h200_mig_cards(self.root, self.host)
        self.useFixture(card_mod.DriverFixture(self.cards))

    def slices(self):
        """``{vGPU type table name: (total, reserved)}`` of the
        ``CUSTOM_MIG_SLICE`` providers."""
        found = {}
        for name, rp in self.providers().items():
            inv = self.inventory(rp['uuid']).get('CUSTOM_MIG_SLICE')
            if inv:
                found[name.rsplit('_', 1)[1]] = (inv['total'],
                                                 inv['reserved'])
        return found

    def test_each_free_gpu_instance_is_one_slice(self):
        svc = self.report()
        # Free VFs took every GI, in the order of the enabled types.  B
        # has no GI: nothing, and no GPU sold whole.
        self.assertEqual([1103, 1104, 1106, 1106, 0, 0, 0, 0],
                         self.currents(self.cards[0]))
        self.assertEqual([0] * 8, self.currents(self.cards[1]))
        self.assertEqual({'H200X-3-71C': (1, 0), 'H200X-2-35C': (1, 0),
                          'H200X-1-18C': (2, 0)}, self.slices())
        self.assertEqual(3, len(self.providers()))
        self.assertEqual({}, nvidia_vfio.creatable(self.root,
                                                   '0000:41:01.3'))
        three = [n for n in self.providers() if n.endswith('3-71C')]
        self.assertEqual({'CUSTOM_MIG_SLICE'}, set(self.inventory(
            self.providers()[three[0]]['uuid'])))
        self.assertEqual(set(), {
            'CUSTOM_MIG_3G_71GB', 'CUSTOM_GPU_H200_SXM5_141GB',
            'CUSTOM_MIG_MEM_GE_70GB', 'CUSTOM_VGPU_NVIDIA_H200X_3_71C',
            'OWNER_CYBORG'} - self.traits(self.providers()[three[0]][
                'uuid']))
        # What a flavor asks for.
        self.assertEqual(three, self.candidates(
            SLICE + '&required=CUSTOM_MIG_3G_71GB,'
            'CUSTOM_GPU_H200_SXM5_141GB'))
        self.assertEqual(
            sorted(n for n in self.providers() if not n.endswith('1-18C')),
            self.candidates(SLICE + '&required=CUSTOM_MIG_MEM_GE_20GB'))
        self.assertEqual(3, len(self.candidates(SLICE)))
        self.assertEqual([], self.candidates('resources=VGPU:1'))
        self.assertEqual([], self.candidates('resources=PGPU:1'))
        self.writes(svc)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))

    def test_a_new_gpu_instance_is_sold_after_the_next_pass(self):
        svc = self.report()
        self.host.create(1, '7g.141gb')
        self.cards[1].refresh()
        on_b = [n for n in self.providers() if n.startswith(B)]
        self.assertEqual([], on_b)
        svc.discover_and_report()
        # 7-141C is not enabled: still nothing; enabled, it is sold.
        self.assertEqual([], [n for n in self.providers()
                              if n.startswith(B)])
        svc = self.report(profiles=PROFILES + ',NVIDIA H200X-7-141C')
        (name,) = self.candidates(SLICE + '&required=CUSTOM_MIG_7G_141GB')
        self.assertTrue(name.startswith(B), name)
        self.assertEqual((1, 0), self.slices()['H200X-7-141C'])

    def test_without_configuring_only_what_the_vfs_carry(self):
        self.report(configure=False)
        self.assertEqual({}, self.slices())
        nvidia_vfio.set_profile(self.root, '0000:41:00.7', T2)
        self.report(configure=False)
        self.assertEqual({'H200X-2-35C': (1, 0)}, self.slices())

    def test_a_restart_names_the_vfs_of_a_full_gpu(self):
        self.report()
        # A new process: A's VFs list nothing, the checkpoint names them.
        self.report()
        self.assertEqual({'H200X-3-71C': (1, 0), 'H200X-2-35C': (1, 0),
                          'H200X-1-18C': (2, 0)}, self.slices())

    def test_unknown_model_is_not_offered(self):
        logger = self.useFixture(test_real_servers.fixtures.FakeLogger())
        self.useFixture(test_real_servers.fixtures.MockPatch(
            'accel_backend.agent.mig.profiles.MODELS', {}))
        self.report()
        self.assertEqual({}, self.slices())
        self.assertIn('GPU 0000:41:00.0 (10de:2335) is in MIG mode and no '
                      'MIG table here has its model', logger.output)

    def test_bound_slice_composes_its_vf_unmanaged(self):
        svc = self.report()
        three = next(rp for n, rp in self.providers().items()
                     if n.endswith('3-71C'))
        arq_uuid, state = self.api_bind(svc, rc='CUSTOM_MIG_SLICE',
                                        rp=three['uuid'])
        self.assertEqual('Bound', state)
        arq = self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid).json
        info = arq['attach_handle_info']
        self.assertEqual(('no', T3, '41', '00', '4'),
                         (info['managed'], info['vgpu_profile'],
                          info['bus'], info['device'], info['function']))
        elem = hostdev.compose_hostdev(arq)
        self.assertEqual(('pci', 'no', '0x41', '0x4'), (
            elem.get('type'), elem.get('managed'),
            elem.find('source/address').get('bus'),
            elem.find('source/address').get('function')))
