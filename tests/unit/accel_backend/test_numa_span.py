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

"""A pool spanning NUMA nodes (issue 55): the binder's choice of GPUs
(``conductor.numa_fit``) on the two-socket 8-GPU server of ``test_pooled``
with a real Placement, and the migration of a host whose pools were per
NUMA node, with a bound guest, into the spanning pool."""

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools

from accel_backend.conductor import numa_fit
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_common import arq_states
from tests.unit.accel_backend import test_pooled

COMPUTE = test_pooled.COMPUTE
POOL, POOL0, POOL1 = test_pooled.POOL, test_pooled.POOL0, test_pooled.POOL1
NODE0 = ['18', '2a', '3a', '5d']
NODE1 = ['9a', 'ab', 'ba', 'db']


class TestChoose(testtools.TestCase):

    FREE = {0: [1, 2, 3], 1: [4, 5, 6, 7, 8]}

    def test_best_fit_then_fewest_nodes(self):
        self.assertEqual([1, 2], numa_fit.choose(self.FREE, 2))
        self.assertEqual([4, 5, 6, 7], numa_fit.choose(self.FREE, 4))
        self.assertEqual([4, 5, 6, 7, 8, 1], numa_fit.choose(self.FREE, 6))
        self.assertIsNone(numa_fit.choose(self.FREE, 9))

    def test_locality(self):
        self.assertEqual([4, 5, 6, 7], numa_fit.choose(self.FREE, 4,
                                                       local=True))
        self.assertIsNone(numa_fit.choose(self.FREE, 6, local=True))
        self.assertEqual([1, 2, 3], numa_fit.choose(self.FREE, 3, node=0))
        self.assertIsNone(numa_fit.choose(self.FREE, 4, node=0))

    def test_wish(self):
        self.assertEqual((1, False), numa_fit.wish(
            {'resources:PGPU': '4', 'trait:CUSTOM_NUMA_NODE_1': 'required'}))
        self.assertEqual((None, True), numa_fit.wish(
            {'resources:PGPU': '4', 'accel:numa_local': 'True'}))
        self.assertEqual((None, False), numa_fit.wish(
            {'trait:CUSTOM_NUMA_NODE_1': 'forbidden'}))


class TestSpanningBinds(test_pooled.PooledTest):

    def service(self, **kw):
        return super().service(pool_numa_span='true', **kw)

    def bind_patch(self, svc, group):
        """The ARQs of one profile group bound in one PATCH, as Nova's
        conductor binds an instance's; returns ``(states, buses)``."""
        rp = self.providers()[POOL]['uuid']
        instance = uuidutils.generate_uuid()
        name = uuidutils.generate_uuid()
        with svc.db.transaction() as session:
            dp_obj.create(session, name, [group])
            arqs = arq_obj.create(session, name, project_id='p1')
            for arq in arqs:
                arq_obj.start_binding(session, arq, COMPUTE, rp, instance)
            uuids = [a.uuid for a in arqs]
        states = svc.binder.bind_many(uuids)
        bound = [u for u in uuids if states[u].state == arq_states.BOUND]
        return (sorted({o.state for o in states.values()}),
                sorted(i['bus'] for i in self.handles_of(svc, bound)))

    def test_group_of_eight(self):
        svc = self.service()
        self.assertEqual((['Bound'], NODE0 + NODE1),
                         self.bind_patch(svc, {'resources:PGPU': '8'}))

    def test_groups_of_six_and_one(self):
        svc = self.service()
        # 6: one whole node and 2 of the other; then 1 goes where 2 are
        # left (best fit), and 1 more than is free fails.
        self.assertEqual((['Bound'], NODE0 + NODE1[:2]),
                         self.bind_patch(svc, {'resources:PGPU': '6'}))
        self.assertEqual((['Bound'], ['ba']),
                         self.bind_patch(svc, {'resources:PGPU': '1'}))
        # 2 of the last 1: short of units, not of a node: the ordinary
        # claim binds what there is (Placement never allocates so).
        self.assertEqual((['BindFailed', 'Bound'], ['db']),
                         self.bind_patch(svc, {'resources:PGPU': '2'}))

    def test_local_group_on_one_node_or_fails_cleanly(self):
        svc = self.service()
        self.assertEqual((['Bound'], NODE0[:1]),
                         self.bind_patch(svc, {'resources:PGPU': '1'}))
        # 4 NUMA-local: node 1, the only one with 4 free.
        self.assertEqual((['Bound'], NODE1), self.bind_patch(
            svc, {'resources:PGPU': '4', 'accel:numa_local': 'true'}))
        # 3 required on node 1: none left there; 4 local: none anywhere.
        self.assertEqual((['BindFailed'], []), self.bind_patch(svc, {
            'resources:PGPU': '3', 'trait:CUSTOM_NUMA_NODE_1': 'required'}))
        self.assertEqual((['BindFailed'], []), self.bind_patch(
            svc, {'resources:PGPU': '4', 'accel:numa_local': 'true'}))
        # Nothing leaked: the 3 left on node 0 bind as asked.
        self.assertEqual((['Bound'], NODE0[1:]), self.bind_patch(svc, {
            'resources:PGPU': '3', 'trait:CUSTOM_NUMA_NODE_0': 'required'}))


class TestPerNodePoolsMigrate(test_pooled.PooledTest):
    """A host pooled per NUMA node (``pool_numa_span`` false, the default
    before issue 55), a guest bound to 2 GPUs of node 1: the first pass
    with ``pool_numa_span`` true (the default now) moves both pools into
    the spanning one, without touching the guest."""

    def test_per_node_pools_migrate_with_a_bound_guest(self):
        before = self.service()
        self.assertEqual([POOL0, POOL1], sorted(self.providers()))
        old = self.providers()[POOL1]['uuid']
        instance = uuidutils.generate_uuid()
        self.raw.put('/allocations/%s' % instance, {
            'allocations': {old: {'resources': {'PGPU': 2}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None})
        arqs = self.bind_group(before, POOL1, 2)
        buses = sorted(i['bus'] for i in self.handles_of(before, arqs))
        svc = self.service(pool_numa_span='true')
        self.assertEqual([POOL], sorted(self.providers()))
        pool = self.providers()[POOL]['uuid']
        self.assertFalse(self.rp_exists(old))
        self.assertEqual({pool: {'resources': {'PGPU': 2}}}, {
            rp: {'resources': a['resources']} for rp, a in self.raw.get(
                '/allocations/%s' % instance).json()['allocations'].items()})
        self.assertEqual((8, 0, 8), self.inv(POOL))
        with svc.db.transaction() as session:
            self.assertEqual({(arq_states.BOUND, pool)}, {
                (a.state, a.device_rp_uuid)
                for a in (arq_obj.get(session, u) for u in arqs)})
            self.assertEqual(1, session.scalar(sa.select(
                sa.func.count()).select_from(models.Device)))
        self.assertEqual(buses, sorted(
            i['bus'] for i in self.handles_of(svc, arqs)))
        # The other 6 are free, the guest's are not handed out again;
        # the next pass changes nothing.
        six = self.bind_group(svc, POOL, 6)
        self.assertEqual(6, len(six))
        svc.discover_and_report()
        self.assertEqual([POOL], sorted(self.providers()))
        # Back to per-node pools: the pool has allocations, so it is kept
        # whole, with an error saying why, nothing deleted or moved.
        log = self.useFixture(fixtures.FakeLogger(level='ERROR'))
        back = self.service()
        self.assertEqual([POOL], sorted(self.providers()))
        self.assertEqual((8, 0, 8), self.inv(POOL))
        self.assertIn('pool_numa_span is false but pool 10de_2330_numa_all',
                      log.output)
        self.assertEqual({pool: {'resources': {'PGPU': 2}}}, {
            rp: {'resources': a['resources']} for rp, a in self.raw.get(
                '/allocations/%s' % instance).json()['allocations'].items()})
        self.assertEqual(buses, sorted(
            i['bus'] for i in self.handles_of(back, arqs)))
        # Drained, the next per-node pass splits it into per-node pools.
        self.raw.delete('/allocations/%s' % instance)
        for arq_uuid in arqs + six:
            self.delete_arq(back, arq_uuid)
        back.discover_and_report()
        self.assertEqual([POOL0, POOL1], sorted(self.providers()))
        self.assertEqual((4, 0, 4), self.inv(POOL0))


class TestPerNode(test_pooled.PooledTest):
    """``[discovery] pool_numa_span`` false (``PooledTest.NUMA_SPAN``):
    the two-socket host reports one pool per node, and a node-trait
    request is matched exactly by Placement and bound on that node."""

    def test_two_per_node_pools_and_an_exact_node_trait_request(self):
        svc = self.service()
        self.assertEqual([POOL0, POOL1], sorted(self.providers()))
        self.assertNotIn('CUSTOM_NUMA_NODE_0', self.traits(POOL1))
        # Node 1 full: a node-1 request finds no candidate at all (with
        # a spanning pool Placement would offer it, and the bind fail).
        self.bind_group(svc, POOL1, 4)
        self.raw.put('/allocations/%s' % uuidutils.generate_uuid(), {
            'allocations': {self.providers()[POOL1]['uuid']: {
                'resources': {'PGPU': 4}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None})
        self.assertEqual([], self.candidates(
            'resources=PGPU:1&required=CUSTOM_NUMA_NODE_1'))
        self.assertEqual([[(POOL0, 2)]], self.candidates(
            'resources=PGPU:2&required=CUSTOM_NUMA_NODE_0'))
        arqs = self.bind_group(svc, POOL0, 2)
        self.assertEqual(NODE0[:2], sorted(
            i['bus'] for i in self.handles_of(svc, arqs)))
