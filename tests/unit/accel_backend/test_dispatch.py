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

"""Binding dispatchers and the agent and conductor RPC over
oslo.messaging's ``fake://`` transport (in-process; the services of the
split are ``test_conductor``, the real RabbitMQ path is
``tests.functional.test_multinode``)."""

import threading
from unittest import mock

import fixtures
import oslo_messaging as messaging
import testtools

from accel_backend.agent import rpc
from accel_backend.agent import rpcapi as agent_rpcapi
from accel_backend.conductor import dispatcher as dispatcher_mod
from accel_backend.conductor import rpc as conductor_rpc
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend.objects import arq as arq_obj
from accel_backend import transports
from accel_common import arq_states
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
        self.finished = []
        self.lock = threading.Lock()

    def submit(self, uuids):
        with self.lock:
            self.submitted.extend(uuids)

    def finish(self, outcomes):
        self.finished.append(outcomes)

    def got(self):
        with self.lock:
            return list(self.submitted)


def fake_transport(test):
    conf = base.make_conf(test, DEFAULT={'transport_url': 'fake://'})
    transport = transports.get_rpc_transport(conf)
    test.addCleanup(transport.cleanup)
    return transport


class TestRpcDispatcher(testtools.TestCase):
    """The API's dispatcher: binds to a conductor, wake-ups to agents."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.transport = fake_transport(self)
        self.conductor = RecordingBinder()
        server = conductor_rpc.start_server(
            self.transport, 'accel-conductor', 'c1', None, self.conductor)
        self.addCleanup(conductor_rpc.stop_server, server)
        self.cleaners = {}
        for host in ('node1', 'node2'):
            self.cleaners[host] = mock.Mock()
            server = rpc.start_server(self.transport, 'accel-agent', host,
                                      RecordingBinder(), self.cleaners[host])
            self.addCleanup(rpc.stop_server, server)
        self.disp = dispatcher_mod.RpcDispatcher(
            conductor_rpcapi.ConductorAPI(self.transport, 'accel-conductor'),
            agent_rpcapi.AgentAPI(self.transport, 'accel-agent'))

    def test_every_host_in_one_cast_to_a_conductor(self):
        self.disp.bind({'node2': ['b1', 'b2'], 'node1': ['a1']})
        self.assertTrue(wait_for(lambda: len(self.conductor.got()) == 3))
        self.assertEqual(['a1', 'b1', 'b2'], self.conductor.got())

    def test_clean_wakes_the_cleaner_of_the_host(self):
        self.disp.clean({'node2', None})
        self.assertTrue(wait_for(
            lambda: self.cleaners['node2'].kick.called))
        self.assertFalse(self.cleaners['node1'].kick.called)

    def test_failed_cast_is_a_503(self):
        conductor = mock.Mock()
        conductor.bind.side_effect = messaging.MessageDeliveryFailure('down')
        disp = dispatcher_mod.RpcDispatcher(conductor, mock.Mock())
        err = self.assertRaises(dispatcher_mod.BindDispatchFailed, disp.bind,
                                {'node1': ['a1'], 'node2': ['b1']})
        self.assertEqual(503, err.status)
        self.assertIn('a1, b1', err.detail)
        conductor.bind.assert_called_once_with(['a1', 'b1'],
                                               request_id=None)


class TestLocalDispatcher(testtools.TestCase):

    def test_every_host_to_the_own_binder(self):
        binder = RecordingBinder()
        dispatcher_mod.LocalDispatcher(binder).bind(
            {'node2': ['b1'], 'node1': ['a1', 'a2']})
        self.assertEqual(['a1', 'a2', 'b1'], binder.got())

    def test_embedded_default_is_inline(self):
        conf = base.make_conf(self)
        self.assertEqual('inline', conf.binding.mode)
        disp = dispatcher_mod.for_service(conf, 'embedded',
                                          RecordingBinder(), None)
        self.assertIsInstance(disp, dispatcher_mod.LocalDispatcher)
        self.assertTrue(disp.binds_in_transaction)
        self.assertIsNone(disp.agent_api)

    def test_deprecated_local_still_binds_inline(self):
        conf = base.make_conf(self, binding={'mode': 'local'})
        disp = dispatcher_mod.for_service(conf, 'embedded',
                                          RecordingBinder(), None)
        self.assertIsInstance(disp, dispatcher_mod.LocalDispatcher)
        self.assertTrue(disp.binds_in_transaction)

    def test_agents_mode_binds_after_commit_and_wakes_other_hosts(self):
        conf = base.make_conf(self, DEFAULT={'host': 'node1'},
                              binding={'mode': 'agents'})
        binder = RecordingBinder()
        disp = dispatcher_mod.for_service(conf, 'embedded', binder,
                                          fake_transport(self))
        self.assertFalse(disp.binds_in_transaction)
        disp.agent_api = mock.Mock()
        disp.clean({'node1', 'node2', None})
        disp.agent_api.clean.assert_called_once_with('node2')


class TestBindFlow(testtools.TestCase):
    """Step 4 of the bind flow (``dispatcher.hand_over``) with a stand-in
    binder given to the ``Dispatcher`` constructor."""

    def test_bound_in_the_transaction_finished_after_the_answer(self):
        binder = RecordingBinder()
        later = []
        dispatcher_mod.hand_over(dispatcher_mod.LocalDispatcher(binder),
                                 {'node1': ['a1']}, ['outcome'], 'req-1',
                                 later.append)
        # Nothing before the answer is sent, and nothing submitted.
        self.assertEqual([], binder.finished)
        self.assertEqual(1, len(later))
        later[0]()
        self.assertEqual([['outcome']], binder.finished)
        self.assertEqual([], binder.got())

    def test_started_goes_to_the_binder_at_once_host_by_host(self):
        binder = RecordingBinder()
        disp = dispatcher_mod.LocalDispatcher(binder, in_transaction=False)
        dispatcher_mod.hand_over(disp, {'node2': ['b1'], 'node1': ['a1']},
                                 None, 'req-1', self.fail)
        self.assertEqual(['a1', 'b1'], binder.got())
        self.assertEqual([], binder.finished)

    def test_a_dispatcher_takes_a_binder_or_a_conductor(self):
        self.assertRaises(ValueError, dispatcher_mod.Dispatcher)
        self.assertRaises(ValueError, dispatcher_mod.Dispatcher,
                          binder=RecordingBinder(),
                          conductor_api=mock.Mock())

    def test_only_a_binder_binds_in_the_transaction(self):
        disp = dispatcher_mod.Dispatcher(conductor_api=mock.Mock(),
                                         in_transaction=True)
        self.assertFalse(disp.binds_in_transaction)


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
            self.assertEqual(arq_states.BOUND,
                             arq_obj.get(session, mine).state)
            self.assertEqual(arq_states.BIND_STARTED,
                             arq_obj.get(session, other).state)
        # A cast of another host's ARQ that reaches this agent is refused.
        self.assertIsNone(binder.bind_one(other))
