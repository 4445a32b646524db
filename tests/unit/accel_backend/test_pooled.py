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

"""Pooled providers (``common.pooling``) end to end: an HGX-like
server of 8 GPUs on two NUMA nodes, discovered by a ``Service`` and
reported to a real Placement (openstack-placement's fixture)."""

import os
import shutil

import fixtures

from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools

from accel_backend.agent.discovery import device_spec
from accel_backend.agent.discovery import drivers
from accel_backend.agent.discovery.drivers import generic_pci
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_common import arq_states
from tests.unit.accel_backend import base
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend import test_lifecycle

COMPUTE = test_lifecycle.COMPUTE
#: H100 SXM5 80GB, four on NUMA node 0 and four on node 1.
GPUS = [('0000:%s:00.0' % bus, numa) for bus, numa in (
    ('18', 0), ('2a', 0), ('3a', 0), ('5d', 0),
    ('9a', 1), ('ab', 1), ('ba', 1), ('db', 1))]
POOL0, POOL1 = 'pool_10de_2330_numa0', 'pool_10de_2330_numa1'
#: The one pool of the 8 GPUs on two nodes, with ``[discovery]
#: pool_numa_span`` (issue 55).
POOL = 'pool_10de_2330_numa_all'


def write_hgx(root, numa_of=None):
    """8 GPUs on vfio-pci, each in an IOMMU group of its own."""
    for group, (address, numa) in enumerate(GPUS, start=40):
        sysfs_tree.write_function(
            root, address, '10de', '2330', '030200',
            numa=numa if numa_of is None else numa_of,
            driver='vfio-pci', iommu_group=group, subsystem=('10de', '16c1'))


class PooledTest(test_lifecycle.ServiceTestBase):

    TREE = None
    NUMA = None
    GPU_POOL = None     # the default
    #: ``[discovery] pool_numa_span`` of ``service()``: these tests are
    #: about pools per NUMA node; the default (spanning, issue 55) is
    #: ``TestPooledByDefault``'s and ``test_numa_span``'s.
    NUMA_SPAN = 'false'

    def setUp(self):
        super().setUp()
        write_hgx(self.root, self.NUMA)

    def providers(self):
        rps = self.raw.get('/resource_providers?in_tree=%s' %
                           self.compute_uuid).json()['resource_providers']
        return {rp['name'][len(COMPUTE) + 1:]: rp for rp in rps
                if rp['uuid'] != self.compute_uuid}

    def inv(self, name):
        inv = self.inventory(self.providers()[name]['uuid'])['PGPU']
        return inv['total'], inv['reserved'], inv['max_unit']

    def traits(self, name):
        return set(self.raw.get('/resource_providers/%s/traits' %
                                self.providers()[name]['uuid']
                                ).json()['traits'])

    def candidates(self, query):
        body = self.raw.get('/allocation_candidates?%s' % query).json()
        names = {rp['uuid']: n for n, rp in self.providers().items()}
        return sorted(sorted((names[u], a['resources']['PGPU'])
                             for u, a in ar['allocations'].items())
                      for ar in body['allocation_requests'])

    def service(self, **kw):
        kw.setdefault('pool_numa_span', self.NUMA_SPAN)
        svc = self.make_service(self.make_conf(nvidia_gpu_pool='true',
                                               **kw))
        svc.discover_and_report()
        return svc

    def bind_group(self, svc, name, amount):
        """Create the ARQs of a profile asking ``resources:PGPU=amount``
        and bind them all to provider ``name``, as Nova does (one
        binding per ARQ, the same provider); returns the bound ARQ
        UUIDs."""
        rp = self.providers()[name]['uuid']
        instance = uuidutils.generate_uuid()
        with svc.db.transaction() as session:
            profile = uuidutils.generate_uuid()
            dp_obj.create(session, profile,
                          [{'resources:PGPU': str(amount)}])
            arqs = arq_obj.create(session, profile, project_id='p1')
            for arq in arqs:
                arq_obj.start_binding(session, arq, COMPUTE, rp, instance)
            uuids = [a.uuid for a in arqs]
        self.assertEqual(amount, len(uuids))
        for arq_uuid in uuids:
            self.assertEqual(arq_states.BOUND, svc.binder.bind_one(arq_uuid))
        return uuids

    def bind_one(self, svc, name):
        """Bind one more ARQ to provider ``name``; returns the state of
        the handle it got."""
        (arq,) = self.bind_group(svc, name, 1)
        with svc.db.transaction() as session:
            return session.get(models.AttachHandle, arq_obj.get(
                session, arq).attach_handle_id).state

    def handles_of(self, svc, arq_uuids):
        with svc.db.transaction() as session:
            return [session.get(models.AttachHandle,
                                arq_obj.get(session, u).attach_handle_id
                                ).attach_info for u in arq_uuids]


class TestPooledByNUMA(PooledTest):

    def test_two_pools_of_four(self):
        self.service()
        self.assertEqual([POOL0, POOL1], sorted(self.providers()))
        self.assertEqual((4, 0, 4), self.inv(POOL0))
        self.assertEqual((4, 0, 4), self.inv(POOL1))
        self.assertIn('CUSTOM_NUMA_NODE_1', self.traits(POOL1))
        self.assertIn('CUSTOM_NVIDIA_H100_SXM5_80GB', self.traits(POOL1))
        # 4 GPUs of one NUMA node: one group, one provider each.
        self.assertEqual([[(POOL0, 4)], [(POOL1, 4)]],
                         self.candidates('resources=PGPU:4'))
        self.assertEqual([[(POOL1, 4)]], self.candidates(
            'resources=PGPU:4&required=CUSTOM_NUMA_NODE_1'))
        self.assertEqual([], self.candidates('resources=PGPU:5'))

    def test_stable_across_restarts(self):
        self.service()
        before = {n: rp['uuid'] for n, rp in self.providers().items()}
        self.service()
        self.assertEqual(before, {n: rp['uuid']
                                  for n, rp in self.providers().items()})

    def test_group_binds_distinct_handles_and_releases_each(self):
        svc = self.service()
        arqs = self.bind_group(svc, POOL0, 4)
        infos = self.handles_of(svc, arqs)
        self.assertEqual(['18', '2a', '3a', '5d'],
                         sorted(i['bus'] for i in infos))
        usages = self.raw.get('/resource_providers/%s/usages' %
                              self.providers()[POOL0]['uuid']).json()
        # Nova allocates; here only the binding is checked: a fifth ARQ
        # on the full pool gets no handle.
        self.assertEqual({'PGPU': 0}, usages['usages'])
        with svc.db.transaction() as session:
            dp_obj.create(session, 'one', [{'resources:PGPU': '1'}])
            (extra,) = arq_obj.create(session, 'one', project_id='p1')
            arq_obj.start_binding(session, extra, COMPUTE,
                                  self.providers()[POOL0]['uuid'],
                                  uuidutils.generate_uuid())
            extra = extra.uuid
        self.assertEqual(arq_states.BIND_FAILED, svc.binder.bind_one(extra))
        for arq_uuid in arqs:
            self.delete_arq(svc, arq_uuid)
        # Each released GPU is dirty, reserved, and cleaned on its own.
        svc.discover_and_report()
        self.assertEqual((4, 4, 4), self.inv(POOL0))
        self.assertEqual(['available'] * 4,
                         list(svc.cleaner.clean_pending().values()))
        for address, numa in GPUS:
            self.assertEqual('1' if numa == 0 else '',
                             self.reset_file(address), address)
        svc.discover_and_report()
        self.assertEqual((4, 0, 4), self.inv(POOL0))

    def test_unhealthy_gpu_raises_reserved_and_is_never_bound(self):
        svc = self.service()
        group = os.path.join(self.root, '0000:2a:00.0', 'iommu_group')
        link = os.readlink(group)
        os.unlink(group)
        svc.discover_and_report()
        self.assertEqual((4, 1, 4), self.inv(POOL0))
        self.assertEqual((4, 0, 4), self.inv(POOL1))
        self.assertEqual([[(POOL1, 4)]], self.candidates('resources=PGPU:4'))
        arqs = self.bind_group(svc, POOL0, 3)
        self.assertNotIn('2a', [i['bus'] for i in self.handles_of(svc,
                                                                  arqs)])
        view = self.call(svc, '/v2/devices').json['devices']
        (pool,) = [d for d in view if (d['std_board_info'] or {}).get(
            'pool') == '10de_2330_numa0']
        # The pool device stays enabled: its other GPUs are offered.
        self.assertEqual('enabled', pool['status'])
        self.assertEqual('unhealthy', pool['std_board_info']['members'][
            '0000:2a:00.0']['health'])
        # Healthy again: offered again, nothing reserved.
        os.symlink(link, os.path.join(self.root, '0000:2a:00.0',
                                      'iommu_group'))
        svc.discover_and_report()
        self.assertEqual((4, 0, 4), self.inv(POOL0))
        self.assertEqual('bound', self.bind_one(svc, POOL0))

    def test_removed_gpu_lowers_total_with_the_guard(self):
        svc = self.service(max_removal_share='0.2')
        for address in ('0000:9a:00.0', '0000:ab:00.0'):
            shutil.rmtree(os.path.join(self.root, address))
        # 2 of 8 functions is over a 20% share: refused, nothing changes.
        self.assertRaises(exception.MassRemovalRefused,
                          svc.discover_and_report)
        self.assertEqual((4, 0, 4), self.inv(POOL1))
        svc.discover_and_report(force=True)
        self.assertEqual((2, 0, 2), self.inv(POOL1))
        self.assertEqual((4, 0, 4), self.inv(POOL0))

    def test_turning_pooling_on_replaces_the_providers(self):
        self.make_service(self.make_conf(
            nvidia_gpu_pool='false')).discover_and_report()
        self.assertEqual(8, len(self.providers()))
        svc = self.make_service(self.make_conf(nvidia_gpu_pool='true',
                                               pool_numa_span='false'))
        # Every per-device provider goes, but its function is a pool's
        # now: no removal for the guard, no --force needed
        # (placement.reshape).
        svc.discover_and_report()
        self.assertEqual([POOL0, POOL1], sorted(self.providers()))
        with svc.db.transaction() as session:
            self.assertEqual(2, len(list(session.scalars(
                sa.select(models.Device)))))


class TestOneBoard(PooledTest):
    """All 8 GPUs on one NUMA node (one board): one provider of 8."""

    NUMA = 0

    def test_one_pool_of_eight(self):
        svc = self.service()
        self.assertEqual([POOL0], sorted(self.providers()))
        self.assertEqual((8, 0, 8), self.inv(POOL0))
        self.assertEqual([[(POOL0, 8)]], self.candidates('resources=PGPU:8'))
        arqs = self.bind_group(svc, POOL0, 8)
        self.assertEqual(8, len({tuple(sorted(i.items()))
                                 for i in self.handles_of(svc, arqs)}))
        with svc.db.transaction() as session:
            states = session.scalars(sa.select(models.AttachHandle.state))
            self.assertEqual(['bound'] * 8, list(states))


class TestPooledByDefault(PooledTest):

    def test_default_pools_and_false_gives_one_provider_per_gpu(self):
        # By default one pool spans both NUMA nodes (issue 55).
        self.make_service().discover_and_report()
        self.assertEqual([POOL], sorted(self.providers()))
        self.assertEqual((8, 0, 8), self.inv(POOL))
        self.make_service(self.make_conf(
            nvidia_gpu_pool='false')).discover_and_report(force=True)
        self.assertEqual(sorted(a for a, _ in GPUS),
                         sorted(self.providers()))


class TestPoolSpec(testtools.TestCase):
    """``"pool": true`` in a ``[discovery] device_spec``."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        write_hgx(self.root)

    def discover(self, **extra):
        spec = dict(vendor_id='10de', product_id='2330', **extra)
        return drivers.discover_all([generic_pci.GenericPCIDriver(
            base.make_conf(self, self.root, [spec]))])

    def test_pool_spec_gives_one_deployable_per_numa_node(self):
        found = self.discover(pool=True)
        self.assertEqual(['10de_2330_numa0_spec0', '10de_2330_numa1_spec0'],
                         [d.subname for d in found])
        self.assertEqual([4, 4], [len(d.attach_handles) for d in found])
        self.assertEqual(['0000:18:00.0', '0000:2a:00.0', '0000:3a:00.0',
                          '0000:5d:00.0'],
                         [m['address'] for m in found[0].members])
        self.assertIn('CUSTOM_NUMA_NODE_1', found[1].traits)

    def test_no_pool_key_one_deployable_per_function(self):
        self.assertEqual(8, len(self.discover()))
        self.assertEqual(8, len(self.discover(pool=False)))

    def test_pool_must_be_a_bool(self):
        self.assertRaises(exception.DeviceSpecError, device_spec.parse,
                          '{"vendor_id": "10de", "product_id": "2330", '
                          '"pool": "yes"}')
