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

"""The periodic audit (``accel_backend.audit``): one test per repair.

The database is accel_backend's own (SQLite file) with the two T4s of the
recorded ``two-gpus`` tree; Nova is a WSGI stub served with wsgi-intercept
answering ``GET /v2.1/servers/<uuid>`` with a per-server status; events go
to ``FakeNotifier``.  Drift is made by writing rows directly, as a crash,
an older release or an operator would leave them.
"""

import datetime

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa
import webob
import webob.dec
from wsgi_intercept import interceptor

from accel_backend import audit
from accel_backend.cmd import manage
from accel_backend.db import models
from accel_backend import metrics
from accel_backend.nova import orphans
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from accel_backend import periodic
from accel_backend.placement import client as pclient
from accel_backend import service as service_mod
from tests import placement_fixture
from tests.unit.accel_backend import base
from tests.unit.accel_backend import binder_fixtures

HOST = binder_fixtures.HOST
NOVA_URL = 'http://nova-audit.test:8774'
GRACE = 60


class NovaServers:
    """Nova's compute API as the audit and the binder use it:
    ``GET /v2.1/servers/<uuid>`` answers ``codes[uuid]`` (default 200);
    ``GET /v2.1/servers?all_tenants=1`` answers ``scope_code``;
    ``POST /v2.1/os-server-external-events`` answers 503 to the first
    ``refuse`` posts, then accepts every event (recorded in ``events``).
    """

    def __init__(self):
        self.codes = {}
        self.asked = []
        self.refuse = 0
        self.events = []
        #: Answer to ``GET /v2.1/servers?all_tenants=1`` (403: Nova 34's
        #: answer to credentials without get_all_tenants).
        self.scope_code = 200
        self.scope_probes = 0

    @webob.dec.wsgify
    def __call__(self, req):
        if req.method == 'POST' and \
                req.path == '/v2.1/os-server-external-events':
            if self.refuse > 0:
                self.refuse -= 1
                return webob.Response(status=503)
            events = [dict(e, code=200) for e in req.json['events']]
            self.events.extend(events)
            return webob.Response(json_body={'events': events})
        if req.method == 'GET' and req.path == '/v2.1/servers' and \
                req.GET.get('all_tenants') == '1':
            self.scope_probes += 1
            return webob.Response(status=self.scope_code,
                                  json_body={'servers': []})
        prefix = '/v2.1/servers/'
        if req.method != 'GET' or not req.path.startswith(prefix):
            return webob.Response(status=404)
        server = req.path[len(prefix):]
        self.asked.append(server)
        code = self.codes.get(server, 200)
        body = ({'server': {'id': server, 'status': 'ACTIVE'}}
                if code == 200 else {'error': code})
        return webob.Response(status=code, json_body=body)


def intercept_nova(test, nova, url=NOVA_URL):
    """Serve ``nova`` (a ``NovaServers``) at ``url`` with wsgi-intercept
    until ``test`` ends; returns the ``[nova]`` options of a service
    talking to it."""
    icpt = interceptor.RequestsInterceptor(lambda: nova, url=url)
    icpt.install_intercept()
    test.addCleanup(icpt.uninstall_intercept)
    return {'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': url + '/v2.1', 'endpoint_override': url + '/v2.1'}


class FakeCleaner:
    """``submit_pending`` as a cleaner whose workers are all busy with
    ``busy`` (those are not queued again) and queue everything else."""

    def __init__(self, db, busy=()):
        self.db = db
        self.busy = set(busy)
        self.calls = 0

    def submit_pending(self):
        self.calls += 1
        with self.db.transaction() as session:
            todo = device_obj.handles_to_clean(session, HOST)
        return [u for u in todo if u not in self.busy]


class AuditTestBase(binder_fixtures.BinderTestBase):

    def setUp(self):
        super().setUp()
        self.nova = NovaServers()
        self.useFixture(fixtures.MockPatchObject(
            audit.LOG, 'warning'))
        intercept_nova(self, self.nova)
        self.cleaner = FakeCleaner(self.db)
        self.auditor = self.make_auditor()

    def make_auditor(self, **kw):
        kw.setdefault('nova', binder_fixtures.nova_adapter(NOVA_URL + '/v2.1'))
        kw.setdefault('binder', self.binder)
        kw.setdefault('cleaner', self.cleaner)
        kw.setdefault('grace_period', GRACE)
        kw.setdefault('cleaning_timeout', 30)
        return audit.Auditor(self.db, HOST, **kw)

    def bound(self, rp=None, instance=None):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, rp or self.af, instance=instance)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        return arq, instance

    def age_arq(self, arq_uuid, seconds=GRACE * 2):
        old = audit._utcnow() - datetime.timedelta(seconds=seconds)
        with self.db.transaction() as session:
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.uuid == arq_uuid).values(updated_at=old))

    def handle_of(self, arq_uuid):
        with self.db.transaction() as session:
            arq = arq_obj.get(session, arq_uuid)
            return arq.attach_handle.uuid if arq.attach_handle else None

    def handle(self, handle_uuid):
        with self.db.transaction() as session:
            h = device_obj.get_handle(session, handle_uuid)
            return h.in_use, h.state, h.state_reason

    def set_handle(self, handle_uuid, age=None, **values):
        if age is not None:
            values['updated_at'] = audit._utcnow() - datetime.timedelta(
                seconds=age)
        with self.db.transaction() as session:
            session.execute(sa.update(models.AttachHandle).where(
                models.AttachHandle.uuid == handle_uuid).values(**values))

    def set_arq(self, arq_uuid, **values):
        with self.db.transaction() as session:
            session.execute(sa.update(models.ARQ).where(
                models.ARQ.uuid == arq_uuid).values(**values))

    def arq_exists(self, arq_uuid):
        with self.db.transaction() as session:
            return session.scalar(sa.select(models.ARQ.id).where(
                models.ARQ.uuid == arq_uuid)) is not None

    def af_handle(self):
        with self.db.transaction() as session:
            return session.scalar(
                sa.select(models.AttachHandle.uuid)
                .join(models.Deployable)
                .where(models.Deployable.rp_uuid == self.af))


class Clock:
    """A monotonic clock the test moves (seconds)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class TestDeletedInstances(AuditTestBase):
    """The ``deleted_instances`` step with the proof of
    ``accel_backend.nova.orphans``: a real Placement in this process
    holds (or not) the instances' allocations."""

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        conf = base.make_conf(
            self, placement={'auth_type': 'admin_token', 'token': 'admin',
                             'endpoint': self.placement.endpoint,
                             'endpoint_override': self.placement.endpoint})
        self.pclient = pclient.PlacementClient(pclient.adapter_from_conf(conf))
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
        self.assertEqual([(instance, orphans.NOT_CONFIRMED)],
                         [k[:2] for k in first.kept_instances])
        self.assertEqual(orphans.ALL_PROJECTS, first.scope.state)
        self.assertEqual([instance], second.deleted_instances)
        self.assertEqual([arq], second.deleted_arqs)
        self.assertFalse(self.arq_exists(arq))
        # generic_pci needs no cleaning: offered again at once.
        self.assertEqual((False, 'available', None), self.handle(handle))
        self.assertEqual(1, second.repairs())
        self.assertIn('deleted_arqs=1', str(second))

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
        for code, reason in ((500, orphans.NOVA_ERROR),
                             (503, orphans.NOVA_ERROR),
                             (403, orphans.NOVA_FORBIDDEN),
                             (401, orphans.NOVA_FORBIDDEN)):
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
        self.assertEqual(orphans.UNKNOWN, second.scope.state)
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
        self.assertEqual([(instance, orphans.NOVA_ERROR)],
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
        self.assertEqual(orphans.OWN_PROJECT, second.scope.state)
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
            {'host': HOST, 'reason': orphans.PLACEMENT_ALLOCATIONS}) or 0
        first, second = self.audit_twice()
        self.assertEqual([], second.deleted_arqs)
        self.assertEqual([(instance, orphans.PLACEMENT_ALLOCATIONS)],
                         [k[:2] for k in second.kept_instances])
        self.assertTrue(self.arq_exists(arq))
        self.assertEqual(before + 2, metrics.REGISTRY.get_sample_value(
            'accel_audit_kept_instances_total',
            {'host': HOST, 'reason': orphans.PLACEMENT_ALLOCATIONS}))

    def test_placement_down_keeps(self):
        arq, instance = self.deleted_arq()
        self.placement.outage = 503
        first, second = self.audit_twice()
        self.assertEqual([], second.deleted_arqs)
        self.assertEqual([(instance, orphans.PLACEMENT_ERROR)],
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


class TestHandles(AuditTestBase):

    def test_handle_in_use_without_arq_released(self):
        handle = self.af_handle()
        self.set_handle(handle, in_use=True, state='bound')
        report = self.auditor.run()
        self.assertEqual([handle], report.released_handles)
        self.assertEqual((False, 'available', None), self.handle(handle))
        # Bindable again.
        self.bound(rp=self.af)

    def test_released_handle_that_needs_cleaning_goes_dirty(self):
        handle = self.af_handle()
        with self.db.transaction() as session:
            session.execute(sa.update(models.Deployable).where(
                models.Deployable.rp_uuid == self.af).values(cleaning='flr'))
        self.set_handle(handle, in_use=True, state='bound')
        self.assertEqual([handle], self.auditor.run().released_handles)
        self.assertEqual((False, 'dirty', None), self.handle(handle))

    def test_handle_of_bound_arq_kept(self):
        arq, _ = self.bound()
        report = self.auditor.run()
        self.assertEqual(0, report.repairs())
        self.assertEqual((True, 'bound', None),
                         self.handle(self.handle_of(arq)))

    def test_handle_held_by_failed_arq_released(self):
        arq, _ = self.bound()
        handle = self.handle_of(arq)
        self.set_arq(arq, state='BindFailed')
        report = self.auditor.run()
        self.assertEqual([handle], report.unheld_handles)
        self.assertIsNone(self.handle_of(arq))
        self.assertEqual('BindFailed', self.state(arq))
        self.assertEqual((False, 'available', None), self.handle(handle))

    def test_bound_arq_handle_not_in_use_reclaimed(self):
        arq, _ = self.bound()
        handle = self.handle_of(arq)
        self.set_handle(handle, in_use=False, state='available')
        report = self.auditor.run()
        self.assertEqual([handle], report.reclaimed_handles)
        self.assertEqual((True, 'bound', None), self.handle(handle))
        # Nobody else can claim it now.
        (other,) = self.new_arqs()
        self.start(other, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(other))


class TestBoundWithoutHandle(AuditTestBase):

    def test_marked_failed_and_nova_told(self):
        arq, instance = self.bound()
        handle = self.handle_of(arq)
        self.set_arq(arq, attach_handle_id=None, pending_event=None)
        self.set_handle(handle, in_use=False, state='available')
        report = self.auditor.run()
        self.assertEqual([arq], report.failed_arqs)
        self.assertEqual('BindFailed', self.state(arq))
        self.assertTrue(self.binder.wait_idle())
        self.assertIn((instance, arq, 'failed'), self.notifier.sent)
        self.assertIsNone(self.arq(arq)[1])
        # Nothing left on a second run.
        self.assertEqual(0, self.auditor.run().repairs())


class TestStuckBindings(AuditTestBase):

    def test_old_bind_started_bound_again(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        # The task was lost (nothing called bind_one).
        report = self.auditor.run()
        self.assertEqual([], report.requeued_bindings)
        self.age_arq(arq)
        report = self.auditor.run()
        self.assertEqual([arq], report.requeued_bindings)
        self.assertTrue(self.binder.wait_idle())
        self.assertEqual('Bound', self.state(arq))
        self.assertIn((instance, arq, 'completed'), self.notifier.sent)


class TestCleanings(AuditTestBase):

    def test_stale_cleaning_requeued(self):
        handle = self.af_handle()
        self.set_handle(handle, state='cleaning', age=GRACE + 31)
        report = self.auditor.run()
        self.assertEqual([handle], report.requeued_cleanings)
        self.assertEqual(1, self.cleaner.calls)

    def test_recent_cleaning_left_alone(self):
        handle = self.af_handle()
        self.set_handle(handle, state='cleaning', age=GRACE)
        report = self.auditor.run()
        self.assertEqual(0, report.repairs())
        self.assertEqual(0, self.cleaner.calls)

    def test_stale_dirty_requeued(self):
        handle = self.af_handle()
        self.set_handle(handle, state='dirty', age=GRACE + 31)
        self.assertEqual([handle], self.auditor.run().requeued_cleanings)

    def test_hanging_cleaning_failed(self):
        handle = self.af_handle()
        self.cleaner.busy.add(handle)
        self.set_handle(handle, state='cleaning', age=GRACE + 31)
        report = self.auditor.run()
        self.assertEqual([handle], report.stuck_cleanings)
        in_use, state, reason = self.handle(handle)
        self.assertEqual('clean_failed', state)
        self.assertIn('did not finish within 90 s', reason)
        # The hung step finishing later changes nothing.
        with self.db.transaction() as session:
            device_obj.finish_cleaning(session, handle)
        self.assertEqual('clean_failed', self.handle(handle)[1])

    def test_real_cleaner_finishes_requeued_cleaning(self):
        from accel_backend import cleaning
        conf = base.make_conf(self)
        cleaner = cleaning.Cleaner(self.db, None, conf, HOST)
        cleaner.start()
        self.addCleanup(cleaner.stop)
        handle = self.af_handle()
        self.set_handle(handle, state='cleaning', age=GRACE + 31)
        report = self.make_auditor(cleaner=cleaner).run()
        self.assertIn(report.requeued_cleanings, ([handle], []))
        self.assertTrue(cleaner.wait_idle())
        self.assertEqual((False, 'available', None), self.handle(handle))


class TestRun(AuditTestBase):

    def test_failing_step_does_not_stop_the_others(self):
        handle = self.af_handle()
        self.set_handle(handle, in_use=True, state='bound')

        def boom(report):
            raise RuntimeError('boom')
        self.useFixture(fixtures.MockPatchObject(
            self.auditor, '_deleted_instances', boom))
        self.useFixture(fixtures.MockPatchObject(audit.LOG, 'exception'))
        report = self.auditor.run()
        self.assertEqual([('deleted_instances', 'boom')], report.errors)
        self.assertEqual([handle], report.released_handles)

    def test_service_runs_audit_periodically(self):
        conf = base.make_conf(
            self, DEFAULT={'host': HOST}, audit={'interval': 1},
            placement={'auth_type': 'admin_token', 'token': 'admin',
                       'endpoint': 'http://127.0.0.1:9'},
            nova={'auth_type': 'admin_token', 'token': 'admin',
                  'endpoint': 'http://127.0.0.1:9'},
            discovery={'report_interval': 3600})
        self.assertEqual(600, conf.audit.grace_period)
        self.assertTrue(conf.audit.delete_orphaned_arqs)
        svc = service_mod.Service(conf)
        calls = []
        svc.auditor.run = lambda: calls.append(1) or audit.AuditReport()
        svc.start()
        self.addCleanup(svc.stop)
        deadline = datetime.datetime.now() + datetime.timedelta(seconds=10)
        while not calls and datetime.datetime.now() < deadline:
            svc._stop.wait(0.1)
        self.assertTrue(calls)
        self.assertEqual(1, svc._audit_loop.interval)

    def test_interval_zero_disables(self):
        loop = periodic.AuditLoop(self.auditor, 0)
        loop.start()
        self.assertIsNone(loop._thread)
        loop.stop()
