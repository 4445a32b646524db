"""ARQ binding: state machine, Binder, and events to a Nova stub.

The database is accel_backend's own (SQLite file, alembic sync), devices
come from GenericPCIDriver over the recorded ``two-gpus`` tree, and
events go over HTTP (keystoneauth) to the Nova stub of
``tools.fixtures.nova_stub`` behind wsgi-intercept.
"""

import functools
import os
import socket
import threading

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools
from wsgi_intercept import interceptor

from accel_backend.binding import binder as binder_mod
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend.discovery.drivers import generic_pci
from accel_backend import exception
from accel_backend.nova import notifier as notifier_mod
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend.objects import host_sync
from tests.unit.accel_backend import base
from tools.fixtures import nova_stub

HOST = 'compute1'
NOVA_URL = 'http://nova.test:8774'


def nova_adapter(url=NOVA_URL + '/v2.1'):
    auth = token_endpoint.Token(url, 'admin')
    sess = ks_session.Session(auth=auth)
    return ks_adapter.Adapter(sess, service_type='compute',
                              endpoint_override=url)


class FakeNotifier:
    """Accepts every event; records them."""

    def __init__(self):
        self.sent = []
        self.lock = threading.Lock()

    def send(self, events):
        with self.lock:
            self.sent.extend(events)
        return {arq for _, arq, _ in events}, set()


class BinderTestBase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Keep expected warnings out of the test output (root logger).
        self.useFixture(fixtures.FakeLogger())
        tmp = self.useFixture(fixtures.TempDir()).path
        self.db = db_api.Database('sqlite:///%s' % os.path.join(
            tmp, 'accel.sqlite'))
        self.addCleanup(self.db.dispose)
        self.db.sync()
        found = generic_pci.GenericPCIDriver(base.make_conf(self)).discover()
        with self.db.transaction() as session:
            deps = host_sync.sync(session, HOST, found)
            self.rps = {d.device.address: d.rp_uuid for d in deps}
            dp_obj.create(session, 'one-t4', [
                {'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'}])
            dp_obj.create(session, 'two-t4', [
                {'resources:PGPU': '1'}, {'resources:PGPU': '1'}])
        self.af = self.rps['0000:af:00.0']
        self.d8 = self.rps['0000:d8:00.0']
        self.notifier = FakeNotifier()
        self.binder = self.make_binder(self.notifier)

    def make_binder(self, notifier, **kw):
        kw.setdefault('retry_interval', 0.01)
        kw.setdefault('retry_timeout', 5)
        kw.setdefault('workers', 2)
        b = binder_mod.Binder(self.db, notifier, **kw)
        self.addCleanup(b.stop)
        return b

    def new_arqs(self, profile='one-t4', n=1):
        with self.db.transaction() as session:
            uuids = []
            for _ in range(n):
                uuids += [a.uuid for a in arq_obj.create(session, profile,
                                                         project_id='p1')]
        return uuids

    def start(self, arq_uuid, rp_uuid, instance=None, host=HOST):
        instance = instance or uuidutils.generate_uuid()
        with self.db.transaction() as session:
            arq = arq_obj.get(session, arq_uuid, for_update=True)
            started = arq_obj.start_binding(session, arq, host, rp_uuid,
                                            instance)
        return instance, started

    def arq(self, arq_uuid):
        with self.db.transaction() as session:
            arq = arq_obj.get(session, arq_uuid)
            return arq_obj.to_dict(arq, 'http://x/v2'), arq.pending_event

    def state(self, arq_uuid):
        return self.arq(arq_uuid)[0]['state']

    def handles_in_use(self):
        with self.db.transaction() as session:
            return session.scalar(sa.select(sa.func.count()).where(
                models.AttachHandle.in_use.is_(True)))


class TestStateMachine(BinderTestBase):

    def test_create_one_arq_per_unit(self):
        self.assertEqual(1, len(self.new_arqs('one-t4')))
        uuids = self.new_arqs('two-t4')
        self.assertEqual(2, len(uuids))
        views = [self.arq(u)[0] for u in uuids]
        self.assertEqual([0, 1], [v['device_profile_group_id']
                                  for v in views])
        for v in views:
            self.assertEqual('Initial', v['state'])
            # Cyborg 17's view of an ARQ without a handle.
            self.assertEqual('', v['attach_handle_type'])
            self.assertEqual({}, v['attach_handle_info'])
            self.assertEqual('p1', v['project_id'])

    def test_unknown_profile(self):
        with self.db.transaction() as session:
            self.assertRaises(exception.DeviceProfileNotFound,
                              arq_obj.create, session, 'nope')

    def test_start_binding_idempotent(self):
        (arq,) = self.new_arqs()
        instance, started = self.start(arq, self.af)
        self.assertTrue(started)
        self.assertEqual('BindStarted', self.state(arq))
        self.assertEqual((instance, False),
                         self.start(arq, self.af, instance=instance))
        self.assertEqual('Bound', self.binder.bind_one(arq))
        # Same binding again once Bound: still nothing to do.
        self.assertEqual((instance, False),
                         self.start(arq, self.af, instance=instance))
        self.assertEqual('Bound', self.state(arq))

    def test_start_binding_elsewhere_refused(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        for kw in ({'rp_uuid': self.d8, 'instance': instance},
                   {'rp_uuid': self.af},
                   {'rp_uuid': self.af, 'instance': instance,
                    'host': 'compute2'}):
            e = self.assertRaises(exception.ARQInvalidState, self.start,
                                  arq, **kw)
            self.assertEqual(409, e.status)
        self.binder.bind_one(arq)
        self.assertRaises(exception.ARQInvalidState, self.start, arq,
                          self.d8, instance)
        view = self.arq(arq)[0]
        self.assertEqual((self.af, instance, HOST),
                         (view['device_rp_uuid'], view['instance_uuid'],
                          view['hostname']))

    def test_bind_failed_cannot_be_rebound_directly(self):
        (arq,) = self.new_arqs()
        self.start(arq, uuidutils.generate_uuid())
        self.assertEqual('BindFailed', self.binder.bind_one(arq))
        self.assertRaises(exception.ARQInvalidState, self.start, arq,
                          self.af)
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.start(arq, self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))

    def test_unbind_initial_is_noop(self):
        (arq,) = self.new_arqs()
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.assertEqual('Initial', self.state(arq))


class TestBindOne(BinderTestBase):

    def test_bound_with_pci_handle(self):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        view, pending = self.arq(arq)
        self.assertEqual('Bound', view['state'])
        self.assertEqual('PCI', view['attach_handle_type'])
        self.assertEqual({'domain': '0000', 'bus': 'af', 'device': '00',
                          'function': '0'}, view['attach_handle_info'])
        self.assertTrue(uuidutils.is_uuid_like(view['attach_handle_uuid']))
        self.assertEqual(instance, view['instance_uuid'])
        self.assertEqual('completed', pending)
        self.assertEqual(1, self.handles_in_use())

    def test_bind_one_ignores_other_states(self):
        (arq,) = self.new_arqs()
        self.assertIsNone(self.binder.bind_one(arq))
        self.assertEqual('Initial', self.state(arq))
        self.assertIsNone(self.binder.bind_one(uuidutils.generate_uuid()))

    def test_unknown_rp_or_host_fails(self):
        a, b = self.new_arqs(n=2)
        self.start(a, uuidutils.generate_uuid())
        self.start(b, self.af, host='compute2')
        self.assertEqual('BindFailed', self.binder.bind_one(a))
        self.assertEqual('BindFailed', self.binder.bind_one(b))
        view, pending = self.arq(a)
        self.assertEqual('', view['attach_handle_type'])
        self.assertEqual('failed', pending)
        self.assertEqual(0, self.handles_in_use())

    def test_one_device_two_arqs(self):
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.af)
        results = sorted([self.binder.bind_one(a), self.binder.bind_one(b)])
        self.assertEqual(['BindFailed', 'Bound'], results)
        self.assertEqual(1, self.handles_in_use())

    def test_batch_of_two_arqs_for_one_device(self):
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.af)
        results = self.binder.bind_many([a, b])
        self.assertEqual(['BindFailed', 'Bound'],
                         sorted(o.state for o in results.values()))
        self.assertEqual(1, self.handles_in_use())
        # The lower ARQ id gets the device: the batch goes in lock order.
        self.assertEqual(('Bound', 'completed'),
                         (results[a].state, results[a].event))
        self.assertEqual(('BindFailed', 'failed'),
                         (results[b].state, results[b].event))

    def _statements(self, fn):
        count = []
        listener = (lambda *args: count.append(1))
        sa.event.listen(self.db.engine, 'before_cursor_execute', listener)
        try:
            fn()
        finally:
            sa.event.remove(self.db.engine, 'before_cursor_execute',
                            listener)
        return len(count)

    def test_batch_costs_the_same_statements_as_one_arq(self):
        # The cost of binding the ARQs of a PATCH is set by round trips,
        # not by the number of ARQs (issue 15).
        (one,) = self.new_arqs()
        self.start(one, self.af)
        single = self._statements(lambda: self.binder.bind_many([one]))
        self.assertEqual('Bound', self.state(one))
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, one, for_update=True))
        with self.db.transaction() as session:
            session.execute(sa.update(models.AttachHandle).values(
                in_use=False, state='available'))
        a, b = self.new_arqs(n=2)
        self.start(a, self.af)
        self.start(b, self.d8)
        pair = self._statements(lambda: self.binder.bind_many([a, b]))
        self.assertEqual(['Bound', 'Bound'], [self.state(a), self.state(b)])
        self.assertEqual(single, pair)

    def test_disabled_or_missing_device_not_bound(self):
        with self.db.transaction() as session:
            dev = session.scalar(sa.select(models.Device).where(
                models.Device.address == '0000:af:00.0'))
            dev.status = 'disabled'
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(arq))

    def test_concurrent_binds_never_share_a_device(self):
        uuids = self.new_arqs(n=20)
        for i, u in enumerate(uuids):
            self.start(u, self.af if i % 2 else self.d8)
        results = {}
        queue = list(uuids)
        qlock = threading.Lock()

        def worker():
            while True:
                with qlock:
                    if not queue:
                        return
                    u = queue.pop()
                results[u] = self.binder.bind_one(u)

        self._race([worker])
        states = [self.state(u) for u in uuids]
        self.assertEqual(2, states.count('Bound'), states)
        self.assertEqual(18, states.count('BindFailed'), states)
        self.assertEqual(sorted(results.values()), sorted(states))
        handles = {self.arq(u)[0]['attach_handle_uuid'] for u in uuids
                   if self.state(u) == 'Bound'}
        self.assertEqual(2, len(handles))
        rps = {self.arq(u)[0]['device_rp_uuid'] for u in uuids
               if self.state(u) == 'Bound'}
        self.assertEqual({self.af, self.d8}, rps)
        self.assertEqual(2, self.handles_in_use())

    def _race(self, fns, n=8):
        """Run ``n`` threads released together by a barrier, thread ``i``
        calling ``fns[i % len(fns)]()``; joins each for up to 30 s, fails
        the test if any raised, and returns what they returned."""
        errors, results, barrier = [], [], threading.Barrier(n)

        def go(i):
            barrier.wait()
            try:
                results.append(fns[i % len(fns)]())
            except Exception as e:  # noqa
                errors.append(e)

        threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual([], errors)
        return results

    def test_same_arq_bound_concurrently(self):
        # The same BindStarted ARQ handed to several workers (e.g. a
        # restarted worker's resume() while another still binds it): one
        # binding, one handle, and no worker turns it into BindFailed.
        for attempt in range(3):
            (arq,) = self.new_arqs()
            self.start(arq, self.af if attempt % 2 else self.d8)
            results = self._race([lambda: self.binder.bind_one(arq)])
            self.assertEqual('Bound', self.state(arq), results)
            self.assertEqual(1, results.count('Bound'), results)
            self.assertEqual(7, results.count(None), results)
            self.assertEqual(1, self.handles_in_use())
            with self.db.transaction() as session:
                arq_obj.unbind(arq_obj.get(session, arq))
            self.assertEqual(0, self.handles_in_use())

    def test_unbind_racing_bind_leaks_nothing(self):
        for _ in range(5):
            (arq,) = self.new_arqs()
            self.start(arq, self.af)

            def unbind():
                with self.db.transaction() as session:
                    arq_obj.unbind(arq_obj.get(session, arq,
                                               for_update=True))
            self._race([lambda: self.binder.bind_one(arq), unbind], n=2)
            self.assertEqual('Unbound', self.state(arq))
            self.assertEqual(0, self.handles_in_use())

    def test_concurrent_binds_two_database_objects(self):
        # Two Database objects on the same file stand for two API
        # workers (processes) sharing the embedded store.
        other = db_api.Database(str(self.db.engine.url))
        self.addCleanup(other.dispose)
        binders = [self.binder, self.make_binder(FakeNotifier())]
        binders[1].db = other
        uuids = self.new_arqs(n=8)
        for u in uuids:
            self.start(u, self.af)
        self._race([functools.partial(binders[i % 2].bind_one, u)
                    for i, u in enumerate(uuids)])
        states = [self.state(u) for u in uuids]
        self.assertEqual(1, states.count('Bound'), states)
        self.assertEqual(7, states.count('BindFailed'), states)


class TestRelease(BinderTestBase):

    def _bound(self, rp=None):
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, rp or self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        return arq, instance

    def test_unbind_releases_handle(self):
        arq, _ = self._bound()
        (other,) = self.new_arqs()
        self.start(other, self.af)
        self.assertEqual('BindFailed', self.binder.bind_one(other))
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        view, pending = self.arq(arq)
        self.assertEqual('Unbound', view['state'])
        self.assertIsNone(view['attach_handle_uuid'])
        self.assertIsNone(view['device_rp_uuid'])
        self.assertIsNone(view['instance_uuid'])
        self.assertIsNone(pending)
        self.assertEqual(0, self.handles_in_use())
        (new,) = self.new_arqs()
        self.start(new, self.af)
        self.assertEqual('Bound', self.binder.bind_one(new))
        # The unbound ARQ can be bound again (to the other device).
        self.start(arq, self.d8)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        self.assertEqual(2, self.handles_in_use())

    def test_unbind_idempotent(self):
        arq, _ = self._bound()
        for _ in range(2):
            with self.db.transaction() as session:
                arq_obj.unbind(arq_obj.get(session, arq))
        self.assertEqual('Unbound', self.state(arq))

    def test_delete_releases_handle(self):
        arq, _ = self._bound()
        with self.db.transaction() as session:
            arq_obj.delete(session, arq_obj.get(session, arq))
        self.assertEqual(0, self.handles_in_use())
        with self.db.transaction() as session:
            self.assertRaises(exception.ARQNotFound, arq_obj.get, session,
                              arq)
        self._bound()

    def test_delete_of_arq_bound_since_it_was_loaded(self):
        # DELETE ?instance= loads the ARQs, the binder finishes meanwhile:
        # the handle the binder took must be released too.
        (arq,) = self.new_arqs()
        instance, _ = self.start(arq, self.af)
        with self.db.transaction() as session:
            (loaded,) = arq_obj.list_(session, instance_uuid=instance)
            self.assertIsNone(loaded.attach_handle)
            self.assertEqual('Bound', self.binder.bind_one(arq))
            arq_obj.delete(session, loaded)
        self.assertEqual(0, self.handles_in_use())
        self._bound()

    def test_delete_of_arq_deleted_since_it_was_loaded(self):
        # Two DELETE ?instance= at once (Nova retries): not an error.
        arq, instance = self._bound()
        with self.db.transaction() as session:
            (loaded,) = arq_obj.list_(session, instance_uuid=instance)
            with self.db.transaction() as other:
                arq_obj.delete(other, arq_obj.get(other, arq))
            arq_obj.delete(session, loaded)
        self.assertEqual(0, self.handles_in_use())
        with self.db.transaction() as session:
            self.assertEqual([], arq_obj.list_(session))

    def test_delete_racing_bind_leaks_nothing(self):
        for _ in range(5):
            (arq,) = self.new_arqs()
            instance, _ = self.start(arq, self.af)
            errors, barrier = [], threading.Barrier(2)

            def delete():
                barrier.wait()
                with self.db.transaction() as session:
                    for a in arq_obj.list_(session, instance_uuid=instance):
                        arq_obj.delete(session, a)

            def bind():
                barrier.wait()
                self.binder.bind_one(arq)

            threads = [threading.Thread(target=f) for f in (delete, bind)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            self.assertEqual(0, self.handles_in_use())

    def test_unbind_while_bind_started_then_bind_one(self):
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.assertIsNone(self.binder.bind_one(arq))
        self.assertEqual('Unbound', self.state(arq))
        self.assertEqual(0, self.handles_in_use())

    def test_device_vanishing_while_in_use_kept(self):
        arq, _ = self._bound()
        with self.db.transaction() as session:
            deps = host_sync.sync(session, HOST, [])
            self.assertEqual([self.af], [d.rp_uuid for d in deps])
            self.assertEqual('missing', deps[0].device.status)
        self.assertEqual('Bound', self.state(arq))
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        with self.db.transaction() as session:
            self.assertEqual([], host_sync.sync(session, HOST, []))


class TestSubmitAndResume(BinderTestBase):

    def test_submit_binds_and_notifies(self):
        arqs = self.new_arqs('two-t4')
        instance, _ = self.start(arqs[0], self.af)
        self.start(arqs[1], self.d8, instance=instance)
        self.binder.submit(arqs)
        self.assertTrue(self.binder.wait_idle(5))
        self.assertEqual(['Bound', 'Bound'], [self.state(u) for u in arqs])
        self.assertEqual({(instance, arqs[0], 'completed'),
                          (instance, arqs[1], 'completed')},
                         set(self.notifier.sent))
        self.assertEqual([None, None], [self.arq(u)[1] for u in arqs])

    def test_resume_after_crash(self):
        # A previous process committed BindStarted (and one outcome whose
        # event it never delivered), then died.
        started = self.new_arqs(n=2)
        done = self.new_arqs()[0]
        inst = {}
        inst[started[0]], _ = self.start(started[0], self.af)
        inst[started[1]], _ = self.start(started[1], self.d8)
        inst[done], _ = self.start(done, uuidutils.generate_uuid())
        crashed = binder_mod.Binder(self.db, FakeNotifier())
        crashed.stop()  # nothing was submitted: its work is lost
        self.assertEqual('BindFailed',
                         binder_mod.Binder.bind_one(crashed, done))
        self.assertEqual('failed', self.arq(done)[1])

        self.binder.resume()
        self.assertTrue(self.binder.wait_idle(5))
        self.assertEqual(['Bound', 'Bound'],
                         [self.state(u) for u in started])
        self.assertEqual(
            {(inst[started[0]], started[0], 'completed'),
             (inst[started[1]], started[1], 'completed'),
             (inst[done], done, 'failed')}, set(self.notifier.sent))
        self.assertEqual(3, len(self.notifier.sent))
        for u in started + [done]:
            self.assertIsNone(self.arq(u)[1])
        # Nothing left for the next restart.
        again = FakeNotifier()
        self.make_binder(again).resume()
        self.assertEqual([], again.sent)

    def test_resume_with_nothing_to_do(self):
        self.new_arqs()
        self.binder.resume()
        self.assertTrue(self.binder.wait_idle(5))
        self.assertEqual([], self.notifier.sent)


class NovaTestBase(BinderTestBase):

    def setUp(self):
        super().setUp()
        self.notifier_log = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.nova.notifier'))
        self.nova = nova_stub.NovaStub(serve=False)
        icpt = interceptor.RequestsInterceptor(lambda: self.nova,
                                               url=NOVA_URL)
        icpt.install_intercept()
        self.addCleanup(icpt.uninstall_intercept)
        self.real_notifier = notifier_mod.NovaNotifier(nova_adapter())


class TestNovaNotifier(NovaTestBase):

    def test_event_body_and_headers(self):
        inst, arq = uuidutils.generate_uuid(), uuidutils.generate_uuid()
        done, retry = self.real_notifier.send([(inst, arq, 'completed')])
        self.assertEqual(({arq}, set()), (done, retry))
        (req,) = self.nova.posts
        self.assertEqual({'events': [{
            'name': 'accelerator-request-bound', 'server_uuid': inst,
            'tag': arq, 'status': 'completed'}]}, req['body'])
        headers = {k.lower(): v for k, v in req['headers'].items()}
        self.assertEqual('compute 2.82', headers['openstack-api-version'])
        self.assertEqual('admin', headers['x-auth-token'])

    def test_nothing_to_send(self):
        self.assertEqual((set(), set()), self.real_notifier.send([]))
        self.assertEqual([], self.nova.posts)

    def test_per_event_codes(self):
        gone, early, ok = (uuidutils.generate_uuid() for _ in range(3))
        self.nova.codes = {gone: 404, early: 422}
        done, retry = self.real_notifier.send([
            (gone, 'a-gone', 'completed'), (early, 'a-early', 'failed'),
            (ok, 'a-ok', 'completed')])
        self.assertEqual({'a-gone', 'a-ok'}, done)
        self.assertEqual({'a-early'}, retry)

    def test_whole_request_errors(self):
        ev = [(uuidutils.generate_uuid(), 'a1', 'completed')]
        for status, expect in ((500, (set(), {'a1'})),
                               (503, (set(), {'a1'})),
                               (404, ({'a1'}, set()))):
            self.nova.fail_next(status)
            self.assertEqual(expect, self.real_notifier.send(ev))

    def test_connection_refused_is_retry(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        notifier = notifier_mod.NovaNotifier(
            nova_adapter('http://127.0.0.1:%d/v2.1' % port))
        self.assertEqual((set(), {'a1'}), notifier.send(
            [(uuidutils.generate_uuid(), 'a1', 'completed')]))
        self.assertIn('Cannot reach Nova', self.notifier_log.output)


class TestBinderWithNova(NovaTestBase):

    def _bind(self, rp=None, n=1):
        arqs = self.new_arqs(n=n)
        inst = {}
        for u in arqs:
            inst[u], _ = self.start(u, rp or self.af)
        binder = self.make_binder(self.real_notifier)
        binder.submit(arqs)
        self.assertTrue(binder.wait_idle(5))
        return arqs, inst, binder

    def test_422_retried_until_accepted(self):
        self.nova.refuse = 3
        (arq,), inst, _ = self._bind()
        self.assertEqual(4, len(self.nova.posts))
        self.assertEqual([arq] * 4, [e['tag'] for e in self.nova.sent()])
        self.assertEqual({'completed'},
                         {e['status'] for e in self.nova.sent()})
        self.assertEqual(inst[arq], self.nova.sent()[-1]['server_uuid'])
        self.assertIsNone(self.arq(arq)[1])
        self.assertEqual('Bound', self.state(arq))

    def test_failed_status_sent(self):
        (arq,), _, _ = self._bind(rp=uuidutils.generate_uuid())
        self.assertEqual([('accelerator-request-bound', arq, 'failed')],
                         [(e['name'], e['tag'], e['status'])
                          for e in self.nova.sent()])
        self.assertIsNone(self.arq(arq)[1])

    def test_404_drops_event(self):
        arqs = self.new_arqs()
        inst, _ = self.start(arqs[0], self.af)
        self.nova.codes[inst] = 404
        binder = self.make_binder(self.real_notifier)
        binder.submit(arqs)
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual(1, len(self.nova.posts))
        self.assertIsNone(self.arq(arqs[0])[1])

    def test_5xx_retried(self):
        self.nova.fail_next(500, 502)
        (arq,), _, _ = self._bind()
        self.assertEqual(3, len(self.nova.posts))
        self.assertIsNone(self.arq(arq)[1])

    def test_only_refused_events_resent(self):
        arqs = self.new_arqs(n=2)
        early, _ = self.start(arqs[0], self.af)
        self.start(arqs[1], self.d8)
        # Nova refuses the first event's first two deliveries only.
        self.nova.codes[early] = [422, 422]
        binder = self.make_binder(self.real_notifier)
        binder.submit(arqs)
        self.assertTrue(binder.wait_idle(5))
        tags = [e['tag'] for e in self.nova.sent()]
        self.assertEqual(1, tags.count(arqs[1]))
        self.assertGreater(tags.count(arqs[0]), 1)
        self.assertEqual([None, None], [self.arq(u)[1] for u in arqs])

    def test_connection_refused_retried(self):
        sock = socket.socket()
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        sock.close()
        calls = []

        class Flaky:
            """First two sends go to a closed port, then to the stub."""

            def __init__(inner):
                inner.dead = notifier_mod.NovaNotifier(
                    nova_adapter('http://127.0.0.1:%d/v2.1' % port))

            def send(inner, events):
                calls.append(events)
                if len(calls) <= 2:
                    return inner.dead.send(events)
                return self.real_notifier.send(events)

        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        binder = self.make_binder(Flaky())
        binder.submit([arq])
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual(3, len(calls))
        self.assertEqual(1, len(self.nova.posts))
        self.assertIsNone(self.arq(arq)[1])

    def test_give_up_after_timeout(self):
        self.nova.refuse = 10 ** 6
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        binder = self.make_binder(self.real_notifier, retry_interval=0.05,
                                  retry_timeout=0.3)
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.binding.binder'))
        binder.submit([arq])
        self.assertTrue(binder.wait_idle(5))
        self.assertIn('Giving up', logger.output)
        self.assertLess(len(self.nova.posts), 10)
        self.assertIsNone(self.arq(arq)[1])
        self.assertEqual('Bound', self.state(arq))

    def test_resume_resends_pending_event(self):
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        # Bound, but the process died before Nova took the event.
        self.assertEqual('Bound', self.binder.bind_one(arq))
        self.assertEqual('completed', self.arq(arq)[1])
        self.assertEqual([], self.nova.posts)
        binder = self.make_binder(self.real_notifier)
        binder.resume()
        self.assertTrue(binder.wait_idle(5))
        self.assertEqual([(arq, 'completed')],
                         [(e['tag'], e['status'])
                          for e in self.nova.sent()])
        self.assertIsNone(self.arq(arq)[1])

    def test_stop_interrupts_retries(self):
        self.nova.refuse = 10 ** 6
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        binder = binder_mod.Binder(self.db, self.real_notifier,
                                   retry_interval=5, retry_timeout=600)
        binder.submit([arq])
        for _ in range(200):
            if self.nova.posts:
                break
            threading.Event().wait(0.01)
        binder.stop()  # must not wait out the 5 s backoff
        self.assertEqual(1, len(self.nova.posts))
        # The event is still pending for the next process.
        self.assertEqual('completed', self.arq(arq)[1])
