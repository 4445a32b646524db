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

"""The periodic audit (``accel_backend.conductor.audit``): one test per repair.

The database is accel_backend's own (SQLite file) with the two T4s of the
recorded ``two-gpus`` tree; Nova is a WSGI stub served with wsgi-intercept
answering ``GET /v2.1/servers/<uuid>`` with a per-server status; events go
to ``FakeNotifier``.  Drift is made by writing rows directly, as a crash,
an older release or an operator would leave them.
"""

import fixtures
from oslo_utils import uuidutils

from accel_backend.cmd import manage
from accel_backend.conductor import nova_orphans
from accel_backend import metrics
from tests.unit.accel_backend.audit_fixtures import AuditTestBase
from tests.unit.accel_backend.audit_fixtures import Clock
from tests.unit.accel_backend.audit_fixtures import GRACE
from tests.unit.accel_backend.audit_fixtures import HOST
from tests.unit.accel_backend.audit_fixtures import intercept_nova
from tests.unit.accel_backend import base
from tests.unit.accel_backend import binder_fixtures


class TestDeletedInstances(AuditTestBase):
    """The ``deleted_instances`` step with the proof of
    ``accel_backend.conductor.nova_orphans``: a real Placement in this process
    holds (or not) the instances' allocations."""

    def setUp(self):
        super().setUp()
        self.use_placement()
        self.clock = Clock()
        self.auditor = self.make_auditor(placement=self.pclient,
                                         clock=self.clock)

    def audit_twice(self, auditor=None):
        """Two audits ``GRACE`` seconds apart; returns both reports."""
        auditor = auditor or self.auditor
        first = auditor.run()
        self.clock.now += GRACE
        return first, auditor.run()

    def allocate(self, instance):
        """Give ``instance`` an allocation of 1 VCPU in Placement, as a
        live server has."""
        rp = uuidutils.generate_uuid()
        self.pclient.post('/resource_providers', {'uuid': rp, 'name': rp})
        self.pclient.put('/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 4}}})
        self.pclient.put('/allocations/%s' % instance, {
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid(),
            'consumer_generation': None})

    def deleted_arq(self):
        """A Bound ARQ, old enough, whose instance Nova answers 404 for
        and Placement holds nothing of."""
        arq, instance = self.bound()
        self.age_arq(arq)
        self.nova.codes[instance] = 404
        return arq, instance

    def test_deleted_after_two_audits_and_device_freed(self):
        arq, instance = self.deleted_arq()
        handle = self.handle_of(arq)
        first, second = self.audit_twice()
        self.assertEqual([], first.deleted_arqs)
        self.assertEqual([(instance, nova_orphans.NOT_CONFIRMED)],
                         [k[:2] for k in first.kept_instances])
        self.assertEqual(nova_orphans.ALL_PROJECTS, first.scope.state)
        self.assertEqual([instance], second.deleted_instances)
        self.assertEqual([arq], second.deleted_arqs)
        self.assertFalse(self.arq_exists(arq))
        # generic_pci needs no cleaning: offered again at once.
        self.assertEqual((False, 'available', None), self.handle(handle))
        self.assertEqual(1, second.repairs())
        self.assertIn('deleted_arqs=1', str(second))

    def test_other_hosts_audit_between_forgets_nothing(self):
        # A conductor audits its hosts in turn with one shared finder
        # (conductor.audit_hosts): the audit of a host without suspects,
        # run between this host's two audits, must not make it forget
        # what it first found gone (the ARQ was never deleted).
        arq, instance = self.deleted_arq()
        other = self.make_auditor(placement=self.pclient, clock=self.clock)
        other.hostname = 'other-host'
        other.orphans = self.auditor.orphans
        self.assertEqual([], self.auditor.run().deleted_arqs)
        self.assertEqual([], other.run().deleted_arqs)
        self.clock.now += GRACE
        self.assertEqual([], other.run().deleted_arqs)
        self.assertEqual([arq], self.auditor.run().deleted_arqs)

    def test_second_audit_within_grace_period_keeps(self):
        arq, instance = self.deleted_arq()
        self.auditor.run()
        self.clock.now += GRACE - 1
        report = self.auditor.run()
        self.assertEqual([], report.deleted_arqs)
        self.assertTrue(self.arq_exists(arq))
        self.clock.now += 1
        self.assertEqual([arq], self.auditor.run().deleted_arqs)

    def test_grace_period_zero_takes_two_audits_in_a_row(self):
        arq, instance = self.deleted_arq()
        auditor = self.make_auditor(placement=self.pclient, grace_period=0,
                                    clock=self.clock)
        self.assertEqual([], auditor.run().deleted_arqs)
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual([arq], auditor.run().deleted_arqs)

    def test_live_instance_kept(self):
        arq, instance = self.bound()
        self.age_arq(arq)
        first, second = self.audit_twice()
        self.assertEqual([instance, instance], self.nova.asked)
        self.assertEqual([], first.kept_instances + second.kept_instances)
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual('nothing to repair', str(second))

    def test_nova_errors_keep_arqs(self):
        arq, instance = self.bound()
        self.age_arq(arq)
        for code, reason in ((500, nova_orphans.NOVA_ERROR),
                             (503, nova_orphans.NOVA_ERROR),
                             (403, nova_orphans.NOVA_FORBIDDEN),
                             (401, nova_orphans.NOVA_FORBIDDEN)):
            self.nova.codes[instance] = code
            first, second = self.audit_twice()
            self.assertEqual([], second.deleted_arqs)
            self.assertEqual([(instance, reason)],
                             [k[:2] for k in second.kept_instances])
            self.assertTrue(self.arq_exists(arq))

    def test_nova_unreachable_keeps_arqs(self):
        arq, instance = self.deleted_arq()
        auditor = self.make_auditor(
            nova=binder_fixtures.nova_adapter('http://127.0.0.1:9/v2.1'),
            placement=self.pclient, clock=self.clock)
        first, second = self.audit_twice(auditor)
        self.assertEqual(nova_orphans.UNKNOWN, second.scope.state)
        self.assertIn('Nova cannot be asked', second.scope.reason)
        self.assertEqual([], second.deleted_arqs)
        self.assertEqual([], second.errors)
        self.assertTrue(self.arq_exists(arq))

    def test_nova_unreachable_after_first_sighting_keeps_arqs(self):
        arq, instance = self.deleted_arq()
        self.auditor.run()
        self.nova.codes[instance] = 502
        self.clock.now += GRACE
        report = self.auditor.run()
        self.assertEqual([(instance, nova_orphans.NOVA_ERROR)],
                         [k[:2] for k in report.kept_instances])
        self.assertTrue(self.arq_exists(arq))
        # Gone again: the count starts over.
        self.nova.codes[instance] = 404
        self.clock.now += GRACE
        self.assertEqual([], self.auditor.run().deleted_arqs)
        self.clock.now += GRACE
        self.assertEqual([arq], self.auditor.run().deleted_arqs)

    def test_credentials_that_cannot_see_every_project_delete_nothing(self):
        """Nova 34 answers 403 to ``all_tenants`` for a ``service``-role
        token and 404 for other projects' servers: nothing is deleted,
        Nova is not even asked about the instances."""
        logger = self.useFixture(fixtures.FakeLogger())
        arq, instance = self.deleted_arq()
        self.nova.scope_code = 403
        first, second = self.audit_twice()
        self.assertEqual(nova_orphans.OWN_PROJECT, second.scope.state)
        self.assertIn('403', second.scope.reason)
        self.assertEqual([], self.nova.asked)
        self.assertEqual([], second.deleted_arqs)
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual(2, self.nova.scope_probes)
        self.assertEqual(0, metrics.REGISTRY.get_sample_value(
            'accel_audit_orphan_deletion', {'host': HOST}))
        # One warning line, not one per audit.
        self.assertEqual(1, logger.output.count(
            'deleting the ARQs of deleted instances is off'))

    def test_scope_lost_between_audits_starts_over(self):
        arq, instance = self.deleted_arq()
        self.auditor.run()
        self.nova.scope_code = 403
        self.clock.now += GRACE
        self.assertEqual([], self.auditor.run().deleted_arqs)
        self.nova.scope_code = 200
        self.clock.now += GRACE
        report = self.auditor.run()
        self.assertEqual([], report.deleted_arqs)
        self.assertEqual(1, metrics.REGISTRY.get_sample_value(
            'accel_audit_orphan_deletion', {'host': HOST}))
        self.clock.now += GRACE
        self.assertEqual([arq], self.auditor.run().deleted_arqs)

    def test_404_while_placement_holds_allocations_keeps(self):
        arq, instance = self.deleted_arq()
        self.allocate(instance)
        before = metrics.REGISTRY.get_sample_value(
            'accel_audit_kept_instances_total',
            {'host': HOST, 'reason': nova_orphans.PLACEMENT_ALLOCATIONS}) or 0
        first, second = self.audit_twice()
        self.assertEqual([], second.deleted_arqs)
        self.assertEqual([(instance, nova_orphans.PLACEMENT_ALLOCATIONS)],
                         [k[:2] for k in second.kept_instances])
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual(before + 2, metrics.REGISTRY.get_sample_value(
            'accel_audit_kept_instances_total',
            {'host': HOST, 'reason': nova_orphans.PLACEMENT_ALLOCATIONS}))

    def test_placement_down_keeps(self):
        arq, instance = self.deleted_arq()
        self.placement.outage = 503
        first, second = self.audit_twice()
        self.assertEqual([], second.deleted_arqs)
        self.assertEqual([(instance, nova_orphans.PLACEMENT_ERROR)],
                         [k[:2] for k in second.kept_instances])
        self.assertTrue(self.arq_exists(arq))

    def test_without_placement_nothing_is_deleted(self):
        arq, instance = self.deleted_arq()
        auditor = self.make_auditor(clock=self.clock)
        first, second = self.audit_twice(auditor)
        self.assertIsNone(second.scope)
        self.assertEqual([], self.nova.asked)
        self.assertTrue(self.arq_exists(arq))

    def test_recent_binding_not_checked(self):
        arq, instance = self.bound()
        self.nova.codes[instance] = 404
        first, second = self.audit_twice()
        self.assertEqual([], self.nova.asked)
        self.assertEqual([], second.deleted_arqs)
        self.assertTrue(self.arq_exists(arq))

    def test_bind_failed_arqs_of_deleted_instance_deleted(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, uuidutils.generate_uuid())
        self.assertEqual('BindFailed', self.binder.bind_one(arq))
        self.age_arq(arq)
        self.nova.codes[instance] = 404
        self.assertEqual([arq], self.audit_twice()[1].deleted_arqs)

    def test_other_hosts_and_unbound_arqs_ignored(self):
        other, _ = self.bound()
        self.set_arq(other, hostname='compute2')
        self.age_arq(other)
        (initial,) = self.new_arqs()
        self.age_arq(initial)
        self.audit_twice()
        self.assertEqual([], self.nova.asked)
        self.assertTrue(self.arq_exists(other))
        self.assertTrue(self.arq_exists(initial))

    def test_disabled(self):
        arq, instance = self.deleted_arq()
        auditor = self.make_auditor(delete_orphaned_arqs=False,
                                    placement=self.pclient, clock=self.clock)
        first, second = self.audit_twice(auditor)
        self.assertEqual([], self.nova.asked)
        self.assertEqual(0, self.nova.scope_probes)
        self.assertEqual([], second.deleted_arqs)
        self.assertTrue(self.arq_exists(arq))

    def test_one_question_per_instance(self):
        a, instance = self.bound(rp=self.af)
        b, _ = self.bound(rp=self.d8, instance=instance)
        self.age_arq(a)
        self.age_arq(b)
        self.nova.codes[instance] = 404
        first, second = self.audit_twice()
        self.assertEqual([instance, instance], self.nova.asked)
        self.assertEqual(sorted([a, b]), sorted(second.deleted_arqs))


class TestManageCommand(TestDeletedInstances):
    """``accel-backend-manage audit deleted-instances``: the step now,
    from the services' configuration file, two passes."""

    def manage(self, host=HOST):
        conf = base.make_conf(
            self, DEFAULT={'host': host},
            database={'connection': str(self.db.engine.url)},
            nova=intercept_nova(self, self.nova),
            placement={'auth_type': 'admin_token', 'token': 'admin',
                       'endpoint': self.placement.endpoint,
                       'endpoint_override': self.placement.endpoint})
        out = self.useFixture(fixtures.StringStream('stdout'))
        err = self.useFixture(fixtures.StringStream('stderr'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', err.stream))
        code = manage.main(['--config-file', conf.config_file[0], 'audit',
                            'deleted-instances', '--grace-period', '0'])
        out.stream.flush()
        err.stream.flush()
        return (code, out.getDetails()['stdout'].as_text(),
                err.getDetails()['stderr'].as_text())

    def test_deletes_after_two_passes(self):
        arq, instance = self.deleted_arq()
        code, out, err = self.manage()
        self.assertEqual(0, code, err)
        self.assertIn('deleted 1 ARQs of 1 instances proven gone', out)
        self.assertIn(instance, out)
        self.assertEqual([instance, instance], self.nova.asked)
        self.assertFalse(self.arq_exists(arq))

    def test_live_instance_one_pass(self):
        arq, instance = self.bound()
        self.age_arq(arq)
        code, out, err = self.manage()
        self.assertEqual(0, code, err)
        self.assertIn('deleted 0 ARQs', out)
        self.assertEqual([instance], self.nova.asked)
        self.assertTrue(self.arq_exists(arq))

    def test_credentials_that_cannot_see_every_project(self):
        arq, instance = self.deleted_arq()
        self.nova.scope_code = 403
        code, out, err = self.manage()
        self.assertEqual(1, code)
        self.assertIn('Nothing deleted', err)
        self.assertIn('403', err)
        self.assertTrue(self.arq_exists(arq))

    def test_another_host(self):
        arq, instance = self.deleted_arq()
        code, out, err = self.manage(host='compute2')
        self.assertEqual(0, code, err)
        self.assertIn('Host compute2: deleted 0 ARQs', out)
        self.assertTrue(self.arq_exists(arq))
