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

"""MIG slices in Placement (``accel_backend.agent.mig.inventory``),
against openstack-placement in this process.

``TestLayouts``: eight simulated H200s (and two H100s on another host)
in a few layouts: the providers, inventories and traits, and what
``GET /allocation_candidates`` answers for "a 3g slice of an H200" and
"any slice with at least 20 GB".  The randomized run through Placement
is ``test_mig_placement_random``'s.
"""

from oslo_utils import uuidutils
import testtools

from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import inventory
from accel_backend.agent.mig import profiles
from accel_backend.agent.mig import traits as mig_traits
from accel_backend.agent.placement import client as pclient
from tests import placement_fixture
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_mig_planner as tmp

H200 = tmp.H200
H100 = 'H100-SXM5-80GB'
HOST = 'mig-host'
PROJECT = uuidutils.generate_uuid()
USER = uuidutils.generate_uuid()
#: Eight H200s in the layouts of ``TestLayouts``.
LAYOUTS = [
    ['7g.141gb'],
    ['4g.71gb', '3g.71gb'],
    ['3g.71gb', '3g.71gb'],
    ['3g.71gb', '2g.35gb', '1g.18gb', '1g.18gb'],
    ['2g.35gb', '2g.35gb', '2g.35gb', '1g.18gb'],
    ['1g.18gb'] * 7,
    [],
    ['3g.71gb', '3g.71gb'],
]


class RecordingClient(pclient.PlacementClient):
    """A client that records every provider it deletes."""

    def __init__(self, adapter):
        super().__init__(adapter)
        self.deleted = []

    def delete(self, url, ok=(204,)):
        if url.startswith('/resource_providers/'):
            self.deleted.append(url.split('/')[2])
        return super().delete(url, ok=ok)


class Base(placement_fixture.PlacementTestCase):

    def setUp(self):
        super().setUp()
        adapter = pclient.adapter_from_conf(base.make_conf(
            self, placement=base.placement_opts(self.placement.endpoint)))
        self.client = RecordingClient(adapter)
        # The test's own reads, not counted in the agent's calls.
        self.checker = pclient.PlacementClient(adapter)
        self.cn = self.compute_node(HOST)

    def compute_node(self, name):
        uuid = uuidutils.generate_uuid()
        self.checker.post('/resource_providers', {'uuid': uuid,
                                                  'name': name})
        return uuid

    def allocate(self, consumer, rp_uuid):
        self.checker.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid: {'resources': {mig_traits.SLICE_RC: 1}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None})

    def candidates(self, query):
        return {rp for req in self.checker.get(
            '/allocation_candidates?' + query).json()['allocation_requests']
            for rp in req['allocations']}

    def placement_view(self, cn):
        """Every provider of the tree but the root: uuid -> (name,
        parent, inventories, traits, usages)."""
        view = {}
        for rp in self.checker.get('/resource_providers?in_tree=%s' % cn
                                   ).json()['resource_providers']:
            if rp['uuid'] == cn:
                continue
            url = '/resource_providers/%s/' % rp['uuid']
            view[rp['uuid']] = (
                rp['name'], rp['parent_provider_uuid'],
                self.checker.get(url + 'inventories').json()['inventories'],
                set(self.checker.get(url + 'traits').json()['traits']),
                {k: v for k, v in self.checker.get(url + 'usages').json()[
                    'usages'].items() if v})
        return view


def layout_host(models, layouts):
    host = mig_host.SimulatedMigHost(models)
    for gpu, names in zip(host.gpus(), layouts):
        for name, start in profiles.realize(host.model(gpu), names):
            host.create(gpu, name, start)
    return host


class TestNames(testtools.TestCase):

    def test_traits(self):
        self.assertEqual('CUSTOM_MIG_3G_71GB', mig_traits.profile_trait(
            '3g.71gb'))
        self.assertEqual('CUSTOM_MIG_1G_18GB_ME', mig_traits.profile_trait(
            '1g.18gb+me'))
        self.assertEqual('CUSTOM_GPU_H200_SXM5_141GB',
                         mig_traits.model_trait(H200))
        self.assertEqual({'CUSTOM_MIG_MEM_GE_5GB', 'CUSTOM_MIG_MEM_GE_10GB',
                          'CUSTOM_MIG_MEM_GE_20GB'},
                         mig_traits.memory_traits(35))

    def test_tree(self):
        host = layout_host({0: H200, 1: H200}, [['4g.71gb', '3g.71gb']])
        tree = inventory.provider_tree(
            HOST, 'cn', host, {(0, 2)},
            unallocated={inventory.provider_uuid(HOST, 0, 4)})
        self.assertEqual(2, len(tree))
        by_start = {p.start: p for p in tree.values()}
        three = by_start[4]
        self.assertEqual(inventory.provider_uuid(HOST, 0, 4), three.uuid)
        self.assertEqual('mig-host:mig:gpu0:slice4', three.name)
        self.assertEqual('cn', three.parent)
        self.assertEqual('3g.71gb', three.profile)
        self.assertEqual(1, three.inventories['CUSTOM_MIG_SLICE']['total'])
        # GI 2 (the 3g at slice 4) is in use without an allocation:
        # reserved.
        self.assertEqual(
            1, three.inventories['CUSTOM_MIG_SLICE']['reserved'])
        self.assertEqual(
            0, by_start[0].inventories['CUSTOM_MIG_SLICE']['reserved'])
        self.assertEqual({'CUSTOM_MIG_3G_71GB', 'CUSTOM_GPU_H200_SXM5_141GB',
                          'OWNER_CYBORG'} |
                         {'CUSTOM_MIG_MEM_GE_%dGB' % n
                          for n in (5, 10, 20, 40, 70)}, three.traits)


class TestLayouts(Base):

    def setUp(self):
        super().setUp()
        self.host = layout_host({g: H200 for g in range(tmp.GPUS)}, LAYOUTS)
        # In use, with an allocation each: GPU 1's 3g, GPU 3's 2g, one of
        # GPU 5's 1g.
        self.in_use = set()
        for gpu, profile in ((1, '3g.71gb'), (3, '2g.35gb'), (5, '1g.18gb')):
            gi = [g for g in self.host.instances(gpu)
                  if g.profile == profile][0]
            self.in_use.add((gpu, gi.id))
        # As Nova and the agent do it: the allocation, then the GI taken.
        self.state = inventory.SyncState()
        inventory.sync(self.client, HOST, self.cn, self.host, set(),
                       self.state)
        for gpu, gi_id in self.in_use:
            start = [g.start for g in self.host.instances(gpu)
                     if g.id == gi_id][0]
            self.allocate(uuidutils.generate_uuid(),
                          inventory.provider_uuid(HOST, gpu, start))
        inventory.sync(self.client, HOST, self.cn, self.host, self.in_use,
                       self.state)
        # Two H100s on another host: the model trait tells them apart.
        self.other = layout_host({0: H100, 1: H100},
                                 [['3g.40gb', '4g.40gb'], ['1g.10gb']])
        self.other_cn = self.compute_node('h100-host')
        inventory.sync(self.client, 'h100-host', self.other_cn, self.other,
                       set())

    def free(self, pred):
        return {inventory.provider_uuid(HOST, gpu, gi.start)
                for gpu in self.host.gpus()
                for gi in self.host.instances(gpu)
                if (gpu, gi.id) not in self.in_use and
                pred(profiles.profile(H200, gi.profile))}

    def test_providers_as_designed(self):
        view = self.placement_view(self.cn)
        want = inventory.provider_tree(HOST, self.cn, self.host, self.in_use)
        self.assertEqual(sum(len(names) for names in LAYOUTS), len(view))
        self.assertEqual(set(want), set(view))
        for uuid, prov in want.items():
            name, parent, invs, traits, usages = view[uuid]
            self.assertEqual((prov.name, self.cn), (name, parent))
            self.assertEqual(prov.inventories, invs)
            self.assertEqual(set(prov.traits), traits)
            self.assertEqual({'CUSTOM_MIG_SLICE': 1} if (
                prov.gpu, prov.gi_id) in self.in_use else {}, usages)
            # No GPU provider, no other inventory: a MIG GPU is never
            # sold whole.
            self.assertEqual(['CUSTOM_MIG_SLICE'], list(invs))

    def test_three_g_slices_of_an_h200(self):
        got = self.candidates(
            'resources=CUSTOM_MIG_SLICE:1&required=CUSTOM_MIG_3G_71GB,'
            'CUSTOM_GPU_H200_SXM5_141GB')
        want = self.free(lambda p: p.name == '3g.71gb')
        self.assertEqual(5, len(want))  # 6 3g GIs, one in use
        self.assertEqual(want, got)

    def test_at_least_20_gb(self):
        got = self.candidates(
            'resources=CUSTOM_MIG_SLICE:1&required=CUSTOM_MIG_MEM_GE_20GB')
        want = self.free(lambda p: p.memory_gb >= 20)
        h100 = {inventory.provider_uuid('h100-host', gpu, gi.start)
                for gpu in self.other.gpus()
                for gi in self.other.instances(gpu)
                if gi.profile != '1g.10gb'}
        self.assertEqual(want | h100, got)
        self.assertEqual(2, len(h100))

    def test_a_3g_40gb_slice_of_an_h100(self):
        got = self.candidates(
            'resources=CUSTOM_MIG_SLICE:1&required=CUSTOM_MIG_3G_40GB,'
            'CUSTOM_GPU_H100_SXM5_80GB')
        three = [gi for gi in self.other.instances(0)
                 if gi.profile == '3g.40gb'][0]
        self.assertEqual(
            {inventory.provider_uuid('h100-host', 0, three.start)}, got)
        self.assertEqual(set(), self.candidates(
            'resources=CUSTOM_MIG_SLICE:1&required=CUSTOM_MIG_3G_40GB,'
            'CUSTOM_GPU_H200_SXM5_141GB'))

    def test_resync_reads_once_writes_nothing(self):
        # The tree, and the free providers (GIs are in use).
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        self.assertEqual(({'created': [], 'updated': [], 'deleted': [],
                           'calls': 2}), result)
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                set(), self.state)
        self.assertEqual(1, result['calls'])
        # An allocation bumps its provider's generation: it is read again.
        self.allocate(uuidutils.generate_uuid(),
                      inventory.provider_uuid(HOST, 0, 0))
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        self.assertEqual(1 + 2 + 1, result['calls'])
        self.assertEqual([], result['updated'])
        # A fresh state (a restart) reads every provider, writes nothing.
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use)
        self.assertEqual(1 + 2 * sum(len(n) for n in LAYOUTS) + 1,
                         result['calls'])
        self.assertEqual([], result['updated'] + result['created'])

    def test_gone_gi_deleted_allocated_refused(self):
        # GPU 2 (3g + 3g, none in use): destroy one GI.
        gone = self.host.instances(2)[0]
        self.host.destroy(2, gone.id)
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        uuid = inventory.provider_uuid(HOST, 2, gone.start)
        self.assertEqual([uuid], result['deleted'])
        self.assertNotIn(uuid, self.placement_view(self.cn))
        # GPU 1's 3g is allocated: its GI destroyed under it, sync refuses
        # and writes nothing at all.
        busy = [gi for gi in self.host.instances(1)
                if (1, gi.id) in self.in_use][0]
        self.host.destroy(1, busy.id)
        self.in_use.discard((1, busy.id))
        self.host.create(2, '1g.18gb')
        before = self.placement_view(self.cn)
        self.client.deleted[:] = []
        self.assertRaises(inventory.MigProviderAllocated, inventory.sync,
                          self.client, HOST, self.cn, self.host, self.in_use,
                          self.state)
        self.assertEqual([], self.client.deleted)
        self.assertEqual(before, self.placement_view(self.cn))

    def test_retype_under_allocation_refused(self):
        # GPU 1: 4g at 0 (free), 3g at 4 (in use).  Allocate the 4g
        # without marking it in use, then have the host put a 3g at 0.
        four = self.host.instances(1)[0]
        self.allocate(uuidutils.generate_uuid(),
                      inventory.provider_uuid(HOST, 1, 0))
        self.host.destroy(1, four.id)
        self.host.create(1, '3g.71gb', 0)
        self.assertRaises(inventory.MigProviderAllocated, inventory.sync,
                          self.client, HOST, self.cn, self.host, self.in_use,
                          self.state)

    def test_in_use_without_allocation_reserved(self):
        # GPU 0's 7g taken on the host, no allocation: not offered.
        uuid = inventory.provider_uuid(HOST, 0, 0)
        gi = self.host.instances(0)[0]
        query = ('resources=CUSTOM_MIG_SLICE:1&required='
                 'CUSTOM_MIG_7G_141GB')
        self.assertEqual({uuid}, self.candidates(query))
        self.in_use.add((0, gi.id))
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        self.assertEqual([uuid], result['updated'])
        self.assertEqual(1, self.placement_view(self.cn)[uuid][2][
            'CUSTOM_MIG_SLICE']['reserved'])
        self.assertEqual(set(), self.candidates(query))
        # Still in use: stays reserved (its usages read: none).
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        self.assertEqual([], result['updated'])
        # Free again: offered again.
        self.in_use.discard((0, gi.id))
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        self.assertEqual([uuid], result['updated'])
        self.assertEqual({uuid}, self.candidates(query))

    def test_idle_gpus(self):
        # GPUs 1, 3, 5 in use; GPU 6 has no GI.
        self.assertEqual([0, 2, 4, 6, 7], inventory.idle_gpus(
            self.client, HOST, self.cn, self.host, self.in_use))
        # An allocation the host does not know of makes GPU 7 busy too.
        self.allocate(uuidutils.generate_uuid(),
                      inventory.provider_uuid(HOST, 7, 4))
        self.assertEqual([0, 2, 4, 6], inventory.idle_gpus(
            self.client, HOST, self.cn, self.host, self.in_use))
