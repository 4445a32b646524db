#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS,
#    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#    See the License for the specific language governing permissions and
#    limitations under the License.
"""Agent RPC versions during a rolling upgrade, over oslo.messaging's
``fake://`` transport with real RPC servers and clients: a new API sends
an agent of the previous release nothing it cannot read, and a new agent
serves an old API's ``bind`` casts (1.0 and 1.1) by handing them to a
conductor."""

import fixtures
from oslo_config import cfg
import oslo_messaging as messaging
import testtools

from accel_backend.agent import rpc
from accel_backend.agent import rpcapi as agent_rpcapi
from accel_backend.conductor import rpc as conductor_rpc
from accel_backend.conductor import rpcapi as conductor_rpcapi
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_dispatch

TOPIC = 'accel-agent'


class PreviousReleaseEndpoint:
    """The agent endpoint of a release that serves 1.0 only, as it was:
    ``bind(ctxt, arq_uuids)`` and ``clean(ctxt)``."""

    target = messaging.Target(namespace=agent_rpcapi.NAMESPACE, version='1.0')

    def __init__(self, binder):
        self.binder = binder

    def bind(self, ctxt, arq_uuids):
        self.binder.submit(list(arq_uuids))

    def clean(self, ctxt):
        pass


class TestRollingUpgrade(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.transport = test_dispatch.fake_transport(self)
        self.old = test_dispatch.RecordingBinder()
        server = messaging.get_rpc_server(
            self.transport, messaging.Target(
                exchange=agent_rpcapi.EXCHANGE, topic=TOPIC,
                server='old-node'),
            [PreviousReleaseEndpoint(self.old)], executor='threading')
        server.start()
        self.addCleanup(rpc.stop_server, server)
        self.new = test_dispatch.RecordingBinder()
        self.submitted_with = []
        real_bind = rpc.AgentEndpoint.bind

        def bind(endpoint, ctxt, arq_uuids, request_id=None):
            self.submitted_with.append(request_id)
            return real_bind(endpoint, ctxt, arq_uuids,
                             request_id=request_id)
        self.useFixture(fixtures.MockPatchObject(rpc.AgentEndpoint, 'bind',
                                                 bind))
        # A new agent hands binds to a conductor.
        server = conductor_rpc.start_server(
            self.transport, 'accel-conductor', 'c1', None, self.new)
        self.addCleanup(conductor_rpc.stop_server, server)
        server = rpc.start_server(
            self.transport, TOPIC, 'new-node', conductor_rpcapi.BindForwarder(
                conductor_rpcapi.ConductorAPI(self.transport,
                                              'accel-conductor')))
        self.addCleanup(rpc.stop_server, server)

    def api(self, cap=None):
        conf = base.make_conf(self, DEFAULT={'transport_url': 'fake://'},
                              upgrade_levels={'agent': cap} if cap else {})
        return agent_rpcapi.AgentAPI(self.transport, TOPIC,
                                     version_cap=conf.upgrade_levels.agent)

    def test_api_sends_the_previous_release_only_1_0(self):
        # Bind casts go to the conductor now: what an API sends an agent
        # is ``clean``, a 1.0 method, capped or not.
        for cap in ('1.0', None):
            self.api(cap=cap).clean('old-node')
        self.assertNotIn('UnsupportedVersion', self.logger.output)

    def test_new_agent_serves_the_previous_api(self):
        # What an API of earlier releases sent: bind without request_id
        # (1.0) and with it (1.1); the agent hands both to a conductor.
        client = messaging.get_rpc_client(self.transport, messaging.Target(
            exchange=agent_rpcapi.EXCHANGE, topic=TOPIC,
            namespace=agent_rpcapi.NAMESPACE, version='1.1'))
        client.prepare(server='new-node', version='1.0').cast(
            {}, 'bind', arq_uuids=['c1'])
        client.prepare(server='new-node', version='1.1').cast(
            {}, 'bind', arq_uuids=['c2'], request_id='req-9')
        self.assertTrue(test_dispatch.wait_for(
            lambda: len(self.new.got()) == 2))
        self.assertEqual(['c1', 'c2'], sorted(self.new.got()))
        self.assertEqual([None, 'req-9'], sorted(
            self.submitted_with, key=str))
        self.assertIn('(API request not sent)', self.logger.output)

    def test_cap_above_this_release_is_refused(self):
        self.assertRaisesRegex(ValueError,
                               r'agent = 1\.7: this release speaks it up '
                               r'to 1\.1',
                               self.api, cap='1.7')

    def test_cap_that_is_no_version_is_a_configuration_error(self):
        conf = base.make_conf(self, DEFAULT={'transport_url': 'fake://'},
                              upgrade_levels={'agent': 'queens'})
        self.assertRaises(cfg.ConfigFileValueError,
                          lambda: conf.upgrade_levels.agent)
