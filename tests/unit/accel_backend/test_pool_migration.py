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

"""Pooling turned on for a host whose guests hold GPUs
(``agent.placement.reshape``, ``conductor.pool_migration``): the HGX-like
server of ``test_pooled``, a real Placement, a guest's allocation and
its Bound ARQ on one per-device provider."""

import os
import shutil

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.common import host_states
from accel_backend.conductor import failure
from accel_backend.conductor import pool_migration
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend.objects import taint as taint_obj
from accel_common import arq_states
from accel_common import taints
from tests.unit.accel_backend import test_pooled

COMPUTE = test_pooled.COMPUTE
POOL0, POOL1 = test_pooled.POOL0, test_pooled.POOL1
GPU = '0000:2a:00.0'


class MigrationBase(test_pooled.PooledTest):
    """A guest bound on one per-device provider before pooling is turned
    on (no tests of its own)."""

    GPU_POOL = 'false'  # before: one provider per GPU

    def setUp(self):
        super().setUp()
        self.before = self.make_service()
        self.before.discover_and_report()
        self.old_rp = self.providers()[GPU]['uuid']
        self.instance = uuidutils.generate_uuid()
        # The guest's VCPUs, on the compute node, stay where they are.
        self.raw.put('/resource_providers/%s/inventories' %
                     self.compute_uuid, {'resource_provider_generation': 0,
                                         'inventories': {'VCPU': {
                                             'total': 8}}})
        self.raw.put('/allocations/%s' % self.instance, {
            'allocations': {self.old_rp: {'resources': {'PGPU': 1}},
                            self.compute_uuid: {'resources': {'VCPU': 2}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None})
        with self.before.db.transaction() as session:
            dp_obj.create(session, 'one', [{'resources:PGPU': '1'}])
            (arq,) = arq_obj.create(session, 'one', project_id='p1')
            arq_obj.start_binding(session, arq, COMPUTE, self.old_rp,
                                  self.instance)
            self.arq = arq.uuid
        self.assertEqual(arq_states.BOUND,
                         self.before.binder.bind_one(self.arq))
        self.handle = self.arq_handle(self.before)

    def pooled(self, **kw):
        # Per-GPU providers into pools per NUMA node (None: the default,
        # test_one_pass_into_the_default_spanning_pool).
        kw.setdefault('pool_numa_span', 'false')
        return self.make_service(self.make_conf(nvidia_gpu_pool='true', **{
            k: v for k, v in kw.items() if v is not None}))

    def arq_handle(self, svc):
        """``(ARQ state, device_rp_uuid, handle UUID, attach_info)``."""
        with svc.db.transaction() as session:
            arq = arq_obj.get(session, self.arq)
            handle = session.get(models.AttachHandle, arq.attach_handle_id)
            return (arq.state, arq.device_rp_uuid, handle.uuid,
                    handle.attach_info)

    def allocations(self):
        """The guest's allocations, its VCPUs checked and left out."""
        allocs = {rp: a['resources'] for rp, a in self.raw.get(
            '/allocations/%s' % self.instance).json()['allocations'].items()}
        self.assertEqual({'VCPU': 2}, allocs.pop(self.compute_uuid))
        return allocs

    def usage(self, rp):
        return self.raw.get('/resource_providers/%s/usages' % rp
                            ).json()['usages']

    def status(self, svc):
        with svc.db.transaction() as session:
            row = session.get(models.HostStatus, COMPUTE)
            return row and row.state

    def check_migrated(self, svc, reserved=0):
        self.assertEqual([POOL0, POOL1], sorted(self.providers()))
        pool = self.providers()[POOL0]['uuid']
        self.assertFalse(self.rp_exists(self.old_rp))
        self.assertEqual({pool: {'PGPU': 1}}, self.allocations())
        self.assertEqual({'PGPU': 1}, self.usage(pool))
        self.assertEqual((4, reserved, 4), self.inv(POOL0))
        # The guest keeps its GPU: same handle, same PCI address.
        state, rp, handle, info = self.arq_handle(svc)
        self.assertEqual((arq_states.BOUND, pool), (state, rp))
        self.assertEqual(self.handle[2:], (handle, info))
        with svc.db.transaction() as session:
            self.assertEqual(2, session.scalar(sa.select(
                sa.func.count()).select_from(models.Device)))
        return pool


class PoolMigrationTest(MigrationBase):

    def test_one_pass_into_the_default_spanning_pool(self):
        svc = self.pooled(pool_numa_span=None)     # the default
        svc.report_pass()
        self.assertEqual([test_pooled.POOL], sorted(self.providers()))
        pool = self.providers()[test_pooled.POOL]['uuid']
        self.assertFalse(self.rp_exists(self.old_rp))
        self.assertEqual({pool: {'PGPU': 1}}, self.allocations())
        self.assertEqual((8, 0, 8), self.inv(test_pooled.POOL))
        state, rp, handle, info = self.arq_handle(svc)
        self.assertEqual((arq_states.BOUND, pool), (state, rp))
        self.assertEqual(self.handle[2:], (handle, info))

    def test_a_taint_becomes_the_taint_of_the_pool_function(self):
        other = '0000:3a:00.0'
        with self.before.db.transaction() as session:
            dep = session.scalar(sa.select(models.Deployable).where(
                models.Deployable.rp_uuid == self.providers()[other][
                    'uuid']))
            taint_obj.set_(session, dep, 'maintenance',
                           taints.NO_SCHEDULE, reason='fan noise',
                           set_by='operator-1')
        svc = self.pooled()
        svc.report_pass()
        # The tainted GPU reserves one unit of the pool.
        self.check_migrated(svc, reserved=1)
        with svc.db.transaction() as session:
            pool = session.scalar(sa.select(models.Deployable).where(
                models.Deployable.rp_uuid == self.providers()[POOL0][
                    'uuid']))
            self.assertEqual(
                [(other, 'maintenance', 'NoSchedule', 'fan noise',
                  'operator-1')],
                [(t.function, t.key, t.effect, t.reason, t.set_by)
                 for t in pool.taints])

    def test_one_pass_migrates_a_host_with_a_guest(self):
        svc = self.pooled()
        # No --force: the per-device providers that go are the pools'
        # functions, still offered.
        svc.report_pass()
        pool = self.check_migrated(svc)
        self.assertEqual(host_states.OK, self.status(svc))
        # A new bind on the pool gets another GPU.
        (other,) = self.handles_of(svc, self.bind_group(svc, POOL0, 1))
        self.assertNotEqual(self.handle[3], other)
        # The next pass changes nothing.
        svc.report_pass()
        self.assertEqual({pool: {'PGPU': 1}}, self.allocations())
        self.assertEqual({'PGPU': 1}, self.usage(pool))

    def test_pass_interrupted_after_the_reshape_finishes_next(self):
        svc = self.pooled()
        real, calls = pool_migration.move, []

        def crash_once(*args, **kwargs):
            calls.append(args)
            if len(calls) == 1:
                raise RuntimeError('crash')
            return real(*args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(
            pool_migration, 'move', side_effect=crash_once))
        self.assertRaises(exception.PoolMigrationIncomplete, svc.report_pass)
        self.assertEqual(host_states.MIGRATING, self.status(svc))
        # Placement is pooled already, the database not yet.
        pool = self.providers()[POOL0]['uuid']
        self.assertEqual({pool: {'PGPU': 1}}, self.allocations())
        self.assertEqual({}, self.inventory(self.old_rp))
        self.assertEqual((arq_states.BOUND, self.old_rp),
                         self.arq_handle(svc)[:2])
        # Meanwhile a bind on the pool, which the database does not have
        # yet, is not failed: it waits, BindStarted.
        with svc.db.transaction() as session:
            self.assertEqual({(pool, COMPUTE): failure.HOST_MIGRATING},
                             failure.diagnose(session, [(pool, COMPUTE)]))
            (waiting,) = arq_obj.create(session, 'one', project_id='p1')
            arq_obj.start_binding(session, waiting, COMPUTE, pool,
                                  uuidutils.generate_uuid())
            waiting = waiting.uuid
        self.assertIsNone(svc.binder.bind_one(waiting))
        svc.report_pass()
        self.assertEqual(2, len(calls))
        self.check_migrated(svc)
        self.assertEqual(host_states.OK, self.status(svc))

        # ... and is bound once the migration is done, to another GPU.
        def bound():
            with svc.db.transaction() as session:
                return arq_obj.get(session, waiting).state == arq_states.BOUND
        self.wait_for(bound)
        (other,) = self.handles_of(svc, [waiting])
        self.assertNotEqual(self.handle[3], other)

    def test_a_real_mass_removal_is_still_refused(self):
        svc = self.pooled(max_removal_share='0.2')
        for address in ('0000:9a:00.0', '0000:ab:00.0', '0000:ba:00.0'):
            shutil.rmtree(os.path.join(self.root, address))
        self.assertRaises(exception.MassRemovalRefused, svc.report_pass)
        self.assertEqual(host_states.REFUSED, self.status(svc))
        # Nothing changed: 8 per-device providers, the guest's allocation
        # and ARQ where they were.
        self.assertEqual(8, len(self.providers()))
        self.assertEqual({self.old_rp: {'PGPU': 1}}, self.allocations())
        self.assertEqual((1, 0, 1), self.inv(GPU))
        self.assertEqual(self.handle, self.arq_handle(svc))
