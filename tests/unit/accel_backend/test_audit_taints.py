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

"""The audit's automatic taint of a device whose instance may be gone
(``accel_backend.conductor.orphan_taints``, issue 53 item 4): a real
Placement in this process (openstack-placement's fixture) holds the
T4's provider and (or not) the instance's allocation; Nova is the
``audit_fixtures`` stub."""

import datetime

from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.agent.placement import report
from accel_backend.conductor import audit
from accel_backend.conductor import nova_orphans
from accel_backend.conductor import orphan_taints
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import deployable as deployable_obj
from accel_common import handle_states
from accel_common import taints
from tests.unit.accel_backend import audit_fixtures
from tests.unit.accel_backend.audit_fixtures import AuditTestBase
from tests.unit.accel_backend.audit_fixtures import Clock
from tests.unit.accel_backend.audit_fixtures import GRACE
from tests.unit.accel_backend import binder_fixtures
from tests.unit.accel_backend import test_pooled


def allocate(client, instance):
    """Give ``instance`` an allocation of 1 VCPU on a new provider, as a
    live server holds (``client``: a ``PlacementClient``)."""
    rp = uuidutils.generate_uuid()
    client.post('/resource_providers', {'uuid': rp, 'name': rp})
    client.put('/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 4}}})
    client.put('/allocations/%s' % instance, {
        'allocations': {rp: {'resources': {'VCPU': 1}}},
        'project_id': uuidutils.generate_uuid(),
        'user_id': uuidutils.generate_uuid(),
        'consumer_generation': None})


class Notes:
    """The ``Notifications`` calls the audit makes, recorded."""

    def __init__(self):
        self.sent = []

    def arq(self, event_type, data):
        self.sent.append((event_type, data['uuid']))

    def device_taint(self, event_type, data):
        self.sent.append((event_type, data['rp_uuid'], data['key']))


class TestUnallocatedTaint(AuditTestBase):

    def setUp(self):
        super().setUp()
        self.use_placement()
        for rp in (self.af, self.d8):
            self.pclient.post('/resource_providers', {'uuid': rp,
                                                      'name': rp})
            self.pclient.put('/resource_providers/%s/inventories' % rp, {
                'resource_provider_generation': 0,
                'inventories': {'PGPU': {'total': 1}}})
        reporter = report.Reporter(self.pclient, ['compute'],
                                   reserved_for=self._reserved_for)
        self.clock = Clock()
        self.notes = Notes()
        self.auditor = self.make_auditor(placement=self.pclient,
                                         clock=self.clock,
                                         reserved=reporter.reserved,
                                         notifications=self.notes)
        # A device that needs cleaning: the release leaves it dirty.
        with self.db.transaction() as session:
            session.execute(sa.update(models.Deployable).values(
                cleaning='reset'))

    def _reserved_for(self, rp_uuid):
        with self.db.transaction() as session:
            return deployable_obj.reserved_units_of_rp(session, rp_uuid)

    def reserved(self, rp):
        return self.pclient.get('/resource_providers/%s/inventories' % rp
                                ).json()['inventories']['PGPU']['reserved']

    def taints(self, rp):
        with self.db.transaction() as session:
            return [(t.key, t.effect, t.set_by, t.value) for t in
                    session.scalars(sa.select(models.DeployableTaint)
                                    .join(models.Deployable)
                                    .where(models.Deployable.rp_uuid == rp))]

    def orphan(self):
        arq, instance = self.bound()
        self.age_arq(arq)
        self.nova.codes[instance] = 404
        return arq, instance

    def test_reserved_until_confirmed_then_dirty(self):
        arq, instance = self.orphan()
        handle = self.handle_of(arq)
        first = self.auditor.run()
        self.assertEqual([(instance, nova_orphans.NOT_CONFIRMED)],
                         [k[:2] for k in first.kept_instances])
        self.assertEqual([(taints.UNALLOCATED_KEY, 'NoSchedule',
                           orphan_taints.SET_BY, instance)],
                         self.taints(self.af))
        self.assertEqual(1, self.reserved(self.af))
        self.assertEqual(0, self.reserved(self.d8))
        # The claim skips it: a new ARQ for that device fails to bind.
        (other,) = self.new_arqs()
        self.start(other, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(other))
        self.clock.now += GRACE
        second = self.auditor.run()
        self.assertEqual([arq], second.deleted_arqs)
        self.assertEqual([], self.taints(self.af))
        self.assertEqual(handle_states.DIRTY, self.handle(handle)[1])
        # Dirty: still reserved, by the cleaning now.
        self.assertEqual(1, self.reserved(self.af))
        key = taints.UNALLOCATED_KEY
        self.assertEqual([('accelerator.device.taint', self.af, key),
                          ('accelerator.arq.delete.end', arq),
                          ('accelerator.device.untaint', self.af, key)],
                         self.notes.sent)

    def test_instance_back_untainted(self):
        arq, instance = self.orphan()
        self.auditor.run()
        self.assertEqual(1, self.reserved(self.af))
        self.nova.codes[instance] = 200
        allocate(self.pclient, instance)
        self.clock.now += GRACE
        report_ = self.auditor.run()
        self.assertEqual([], report_.deleted_arqs)
        self.assertEqual([], self.taints(self.af))
        self.assertEqual(0, self.reserved(self.af))
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual((True, 'bound', None),
                         self.handle(self.handle_of(arq)))

    def test_live_server_without_allocation_stays_reserved(self):
        arq, instance = self.bound()
        self.age_arq(arq)
        self.auditor.run()
        self.assertEqual(1, self.reserved(self.af))
        self.clock.now += GRACE
        self.assertEqual([], self.auditor.run().deleted_arqs)
        self.assertEqual(1, len(self.taints(self.af)))
        allocate(self.pclient, instance)
        self.auditor.run()
        self.assertEqual([], self.taints(self.af))
        self.assertEqual(0, self.reserved(self.af))

    def test_placement_down_keeps_taints(self):
        arq, instance = self.orphan()
        self.auditor.run()
        self.placement.outage = 503
        self.clock.now += GRACE
        self.auditor.run()
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual(1, len(self.taints(self.af)))

    def test_admin_removal_set_again_while_still_gone(self):
        arq, instance = self.orphan()
        self.auditor.run()
        with self.db.transaction() as session:
            session.execute(sa.delete(models.DeployableTaint))
        self.auditor.run()
        self.assertEqual(1, len(self.taints(self.af)))


class TestUnallocatedPoolFunction(test_pooled.PooledTest):
    """A pooled deployable (the recorded HGX, ``test_pooled``): only the
    orphan's function is tainted, one unit reserved."""

    def test_one_unit_of_the_pool(self):
        svc = self.service()
        nova = audit_fixtures.NovaServers()
        audit_fixtures.intercept_nova(self, nova)
        clock = Clock()
        auditor = audit.Auditor(
            svc.db, test_pooled.COMPUTE, nova=binder_fixtures.nova_adapter(
                audit_fixtures.NOVA_URL + '/v2.1'),
            placement=svc.placement, grace_period=GRACE, clock=clock,
            reserved=svc.reporter.reserved)
        (arq,) = self.bind_group(svc, test_pooled.POOL0, 1)
        old = audit._utcnow() - datetime.timedelta(seconds=GRACE * 2)
        with svc.db.transaction() as session:
            session.execute(sa.update(models.ARQ).values(updated_at=old))
            instance = arq_obj.get(session, arq).instance_uuid
        nova.codes[instance] = 404
        before = self.inv(test_pooled.POOL0)[1]
        auditor.run()
        self.assertEqual(before + 1, self.inv(test_pooled.POOL0)[1])
        with svc.db.transaction() as session:
            (taint,) = session.scalars(sa.select(models.DeployableTaint))
            handle = arq_obj.get(session, arq).attach_handle
            self.assertEqual(orphan_taints.function_of(handle),
                             taint.function)
            self.assertNotEqual('', taint.function)
        nova.codes[instance] = 200
        allocate(svc.placement, instance)
        clock.now += GRACE
        auditor.run()
        self.assertEqual(before, self.inv(test_pooled.POOL0)[1])
