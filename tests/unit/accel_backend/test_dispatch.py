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

"""Binding dispatchers and the agent RPC over oslo.messaging's ``fake://``
transport (in-process; the real RabbitMQ path is
``tests.functional.test_multinode``)."""

import json
import os
import threading
from unittest import mock

import fixtures
import oslo_messaging as messaging
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend.binding import dispatcher as dispatcher_mod
from accel_backend.binding import rpc
from accel_backend.db import api as db_api
from accel_backend.discovery.drivers import generic_pci
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend.objects import host_sync
from accel_backend import service as service_mod
from accel_backend import transports
from tests.unit.accel_backend import base
from tests.unit.accel_backend import binder_fixtures
from tests import waiting

TIMEOUT = 10
# noauth: an admin token plus the service token Nova adds to its binds.
ADMIN = {'X-Auth-Token': 'admin', 'X-Service-Token': 'nova',
         'Accept': 'application/json'}


def wait_for(predicate, timeout=TIMEOUT):
    """``tests.waiting.wait_for``, every 10 ms."""
    return waiting.wait_for('condition', predicate, timeout, interval=0.01)


class RecordingBinder:
    """Stands in for a host's ``Binder``: records what it is given."""

    def __init__(self):
        self.submitted = []
        self.lock = threading.Lock()

    def submit(self, uuids):
        with self.lock:
            self.submitted.extend(uuids)

    def got(self):
        with self.lock:
            return list(self.submitted)


def fake_transport(test):
    conf = base.make_conf(test, DEFAULT={'transport_url': 'fake://'})
    transport = transports.get_rpc_transport(conf)
    test.addCleanup(transport.cleanup)
    return transport


class TestRpcDispatcher(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.transport = fake_transport(self)
        self.binders = {}
        self.cleaners = {}
        for host in ('node1', 'node2'):
            self.binders[host] = RecordingBinder()
            self.cleaners[host] = mock.Mock()
            server = rpc.start_server(self.transport, 'accel-agent', host,
                                      self.binders[host],
                                      self.cleaners[host])
            self.addCleanup(rpc.stop_server, server)
        self.api = rpc.AgentAPI(self.transport, 'accel-agent')

    def test_casts_reach_the_agent_of_each_host(self):
        disp = dispatcher_mod.RpcDispatcher(self.api)
        disp.bind({'node1': ['a1'], 'node2': ['b1', 'b2']})
        self.assertTrue(wait_for(
            lambda: len(self.binders['node2'].got()) == 2))
        self.assertTrue(wait_for(lambda: self.binders['node1'].got()))
        self.assertEqual(['a1'], self.binders['node1'].got())
        self.assertEqual(['b1', 'b2'], self.binders['node2'].got())

    def test_clean_wakes_the_cleaner_of_the_host(self):
        disp = dispatcher_mod.RpcDispatcher(self.api)
        disp.clean({'node2', None})
        self.assertTrue(wait_for(
            lambda: self.cleaners['node2'].kick.called))
        self.assertFalse(self.cleaners['node1'].kick.called)

    def test_own_host_binds_in_process(self):
        local = RecordingBinder()
        disp = dispatcher_mod.RpcDispatcher(self.api, 'node1', local)
        disp.bind({'node1': ['a1'], 'node2': ['b1']})
        self.assertEqual(['a1'], local.got())
        self.assertTrue(wait_for(lambda: self.binders['node2'].got()))
        # Nothing was cast to node1: a bind cast after the dispatch is
        # the first node1's agent sees.
        self.api.bind('node1', ['marker'])
        self.assertTrue(wait_for(lambda: self.binders['node1'].got()))
        self.assertEqual(['marker'], self.binders['node1'].got())

    def test_failed_cast_is_a_503_after_casting_the_others(self):
        api = mock.Mock()
        api.bind.side_effect = lambda host, uuids, request_id=None: (
            (_ for _ in ()).throw(messaging.MessageDeliveryFailure('down'))
            if host == 'node1' else None)
        disp = dispatcher_mod.RpcDispatcher(api)
        err = self.assertRaises(dispatcher_mod.BindDispatchFailed, disp.bind,
                                {'node1': ['a1'], 'node2': ['b1']})
        self.assertEqual(503, err.status)
        self.assertIn('node1', err.detail)
        api.bind.assert_has_calls([
            mock.call('node1', ['a1'], request_id=None),
            mock.call('node2', ['b1'], request_id=None)])


class TestLocalDispatcher(testtools.TestCase):

    def test_every_host_to_the_own_binder(self):
        binder = RecordingBinder()
        dispatcher_mod.LocalDispatcher(binder).bind(
            {'node2': ['b1'], 'node1': ['a1', 'a2']})
        self.assertEqual(['a1', 'a2', 'b1'], binder.got())

    def test_embedded_default_is_inline(self):
        conf = base.make_conf(self)
        self.assertEqual('inline', conf.binding.mode)
        disp, transport = dispatcher_mod.for_service(conf, 'embedded',
                                                     RecordingBinder())
        self.assertIsInstance(disp, dispatcher_mod.LocalDispatcher)
        self.assertIsNone(transport)

    def test_deprecated_local_still_binds_inline(self):
        conf = base.make_conf(self, binding={'mode': 'local'})
        disp, transport = dispatcher_mod.for_service(conf, 'embedded',
                                                     RecordingBinder())
        self.assertIsInstance(disp, dispatcher_mod.LocalDispatcher)
        self.assertIsNone(transport)


class TestHostScopedBinder(binder_fixtures.BinderTestBase):
    """An agent's binder resumes and binds only its host's ARQs."""

    def test_resume_takes_only_its_host(self):
        mine, other = self.new_arqs(n=2)
        self.start(mine, self.af)
        self.start(other, self.d8, host='elsewhere')
        binder = self.make_binder(self.notifier, host=binder_fixtures.HOST)
        binder.resume()
        self.assertTrue(binder.wait_idle(TIMEOUT))
        with self.db.transaction() as session:
            self.assertEqual(arq_obj.BOUND,
                             arq_obj.get(session, mine).state)
            self.assertEqual(arq_obj.BIND_STARTED,
                             arq_obj.get(session, other).state)
        # A cast of another host's ARQ that reaches this agent is refused.
        self.assertIsNone(binder.bind_one(other))


class TestApiAndAgentServices(testtools.TestCase):
    """``Service`` roles: an API and two agents on one database, talking
    over one ``fake://`` transport."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        tmp = self.useFixture(fixtures.TempDir()).path
        self.url = 'sqlite:///%s' % os.path.join(tmp, 'accel.sqlite')
        db = db_api.Database(self.url)
        db.sync()
        self.rps = {}
        found = generic_pci.GenericPCIDriver(base.make_conf(self)).discover()
        with db.transaction() as session:
            for host in ('node1', 'node2'):
                deps = host_sync.sync(session, host, found)
                self.rps[host] = sorted(d.rp_uuid for d in deps)
            dp_obj.create(session, 'gpu', [{'resources:PGPU': '1'}])
        db.dispose()
        self.transport = fake_transport(self)
        self.notifiers = {}
        self.api = self.service(service_mod.API, 'api')
        self.agents = {h: self.service(service_mod.AGENT, h)
                       for h in ('node1', 'node2')}

    def make_conf(self, host):
        return base.make_conf(
            self, DEFAULT={'host': host, 'transport_url': 'fake://'},
            database={'connection': self.url},
            api={'auth_strategy': 'noauth'}, binding={'workers': '1'})

    def service(self, role, host):
        svc = service_mod.Service(self.make_conf(host), role=role,
                                  transport=self.transport)
        self.addCleanup(svc.stop)
        if svc.binder is not None:
            self.notifiers[host] = binder_fixtures.FakeNotifier()
            svc.binder.notifier = self.notifiers[host]
            # No Placement here: devices are in the database already.
            svc.discover_and_report = mock.Mock(return_value=[])
            svc.start()
        return svc

    def call(self, method, path, body=None, status=200):
        req = webob.Request.blank(path, method=method, headers=ADMIN)
        if body is not None:
            req.content_type = 'application/json'
            req.body = json.dumps(body).encode()
        resp = req.get_response(self.api.app)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp.json if resp.body else None

    def test_roles(self):
        self.assertIsNone(self.api.binder)
        self.assertIsInstance(self.api.dispatcher,
                              dispatcher_mod.RpcDispatcher)
        self.assertIsNone(self.agents['node1'].dispatcher)
        self.assertEqual('node1', self.agents['node1'].binder.host)

    def test_bind_is_done_by_the_agent_of_the_host(self):
        arqs = self.call('POST', '/v2/accelerator_requests',
                         {'device_profile_name': 'gpu'}, status=201)['arqs']
        arqs += self.call('POST', '/v2/accelerator_requests',
                          {'device_profile_name': 'gpu'}, status=201)['arqs']
        vm = uuidutils.generate_uuid()
        patch = {a['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': self.rps[host][0]},
            {'op': 'add', 'path': '/instance_uuid', 'value': vm}]
            for a, host in zip(arqs, ('node1', 'node2'))}
        self.call('PATCH', '/v2/accelerator_requests', patch, status=202)

        def resolved():
            got = self.call('GET', '/v2/accelerator_requests?instance=' + vm)
            return all(a['state'] == 'Bound' for a in got['arqs'])
        self.assertTrue(wait_for(resolved))
        for arq, host in zip(arqs, ('node1', 'node2')):
            self.assertTrue(wait_for(lambda: self.notifiers[host].sent))
            self.assertEqual([(vm, arq['uuid'], 'completed')],
                             self.notifiers[host].sent)

    #: The host whose ARQ the cast-failure test binds: one whose agent
    #: the API casts to.
    CAST_HOST = 'node1'

    def test_failed_cast_answers_503_and_keeps_bind_started(self):
        host = self.CAST_HOST
        (arq,) = self.call('POST', '/v2/accelerator_requests',
                           {'device_profile_name': 'gpu'},
                           status=201)['arqs']
        self.useFixture(fixtures.MockPatchObject(
            self.api.dispatcher.agent_api, 'bind',
            side_effect=messaging.MessageDeliveryFailure('broker down')))
        body = self.call('PATCH', '/v2/accelerator_requests', {
            arq['uuid']: [
                {'op': 'add', 'path': '/hostname', 'value': host},
                {'op': 'add', 'path': '/device_rp_uuid',
                 'value': self.rps[host][0]},
                {'op': 'add', 'path': '/instance_uuid',
                 'value': uuidutils.generate_uuid()}]}, status=503)
        self.assertEqual('accel.arq.bind_dispatch_failed',
                         body['errors'][0]['code'])
        self.assertEqual('BindStarted', self.call(
            'GET', '/v2/accelerator_requests/' + arq['uuid'])['state'])
        # The agent finds it when it (re)starts.
        self.agents[host].binder.resume()
        self.assertTrue(wait_for(lambda: self.call(
            'GET', '/v2/accelerator_requests/' + arq['uuid'])['state'] ==
            'Bound'))


class TestEmbeddedRpcMode(TestApiAndAgentServices):
    """An embedded ``accel-backend`` with ``[binding] mode = agents`` is the
    API and node1's agent; node2's agent binds node2's ARQs."""

    def service(self, role, host):
        if role == service_mod.API:
            role, host = service_mod.EMBEDDED, 'node1'
        elif host == 'node1':
            return None
        return super().service(role, host)

    def make_conf(self, host):
        return base.make_conf(
            self, DEFAULT={'host': host, 'transport_url': 'fake://'},
            database={'connection': self.url},
            api={'auth_strategy': 'noauth'},
            binding={'workers': '1', 'mode': 'agents'})

    def test_roles(self):
        self.assertEqual('node1', self.api.binder.host)
        self.assertIsInstance(self.api.dispatcher,
                              dispatcher_mod.RpcDispatcher)
        self.assertIs(self.api.binder, self.api.dispatcher.local_binder)
        self.assertIsNotNone(self.api._rpc_server)

    # node1 binds in-process here: the API casts to node2 only.
    CAST_HOST = 'node2'
