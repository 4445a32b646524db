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

"""The conductor split over oslo.messaging's ``fake://`` transport: an
``accel-backend-api``, an ``accel-backend-conductor`` and two
``accel-backend-agent`` services on one database, the agents configured
without a ``[database]`` section (the real processes over RabbitMQ and
PostgreSQL are ``tests.functional.test_multinode``)."""

import json
import os
from unittest import mock

import fixtures
import oslo_messaging as messaging
from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools
import webob

from accel_backend.agent.discovery.drivers import generic_pci
from accel_backend.conductor import dispatcher as dispatcher_mod
from accel_backend.conductor import payloads
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import device_profile as dp_obj
from accel_backend.objects import host_status
from accel_backend import service as service_mod
from accel_backend import transports
from accel_common import handle_states
from accel_common import taints
from tests.unit.accel_backend import base
from tests.unit.accel_backend import binder_fixtures
from tests import waiting

HOSTS = ('node1', 'node2')
ADMIN = {'X-Auth-Token': 'admin', 'X-Service-Token': 'nova',
         'Accept': 'application/json'}


def wait_for(predicate, timeout=10):
    return waiting.wait_for('condition', predicate, timeout, interval=0.01)


class TestPayloads(testtools.TestCase):

    def found(self):
        return generic_pci.GenericPCIDriver(base.make_conf(self)).discover()

    def test_deployable_round_trip(self):
        found = self.found()
        found[0].taints = [{'function': '', 'key': 'burn-in',
                            'effect': 'NoSchedule', 'value': None,
                            'reason': 'new board'}]
        for dep in found:
            primitive = payloads.deployable(dep)
            self.assertEqual('1.1', primitive['accel.version'])
            # What crosses the broker is JSON.
            again = payloads.to_deployable(json.loads(json.dumps(primitive)))
            self.assertEqual(dep, again)

    def test_newer_minor_fields_ignored_other_major_refused(self):
        primitive = payloads.deployable(self.found()[0])
        primitive['accel.data']['from_the_future'] = 1
        primitive['accel.version'] = '1.7'
        self.assertEqual(self.found()[0], payloads.to_deployable(primitive))
        primitive['accel.version'] = '2.0'
        self.assertRaises(payloads.PayloadError, payloads.to_deployable,
                          primitive)
        del primitive['accel.data']['address']
        primitive['accel.version'] = '1.0'
        err = self.assertRaises(payloads.PayloadError,
                                payloads.to_deployable, primitive)
        self.assertIn('address', str(err))


class TestSplitServices(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        tmp = self.useFixture(fixtures.TempDir()).path
        self.cleaned = os.path.join(tmp, 'cleaned')
        self.url = 'sqlite:///%s' % os.path.join(tmp, 'accel.sqlite')
        db = db_api.Database(self.url)
        db.sync()
        with db.transaction() as session:
            dp_obj.create(session, 'gpu', [{'resources:PGPU': '1'}])
        db.dispose()
        conf = base.make_conf(self, DEFAULT={'transport_url': 'fake://'})
        self.transport = transports.get_rpc_transport(conf)
        self.addCleanup(self.transport.cleanup)
        self.api = self.service(service_mod.API, 'api-host')
        self.conductor = self.service(service_mod.CONDUCTOR, 'cond-host')
        self.notifier = binder_fixtures.FakeNotifier()
        self.conductor.binder.notifier = self.notifier
        self.conductor.start()
        self.agents = {h: self.service(service_mod.AGENT, h) for h in HOSTS}
        for agent in self.agents.values():
            agent.reporter = mock.Mock()
            agent.reporter.report.return_value = None
        # Each agent's discovery, stored through the conductor.
        self.rps = {h: sorted(r.rp_uuid for r in
                              self.agents[h].report_pass())
                    for h in HOSTS}

    def make_conf(self, role, host):
        groups = dict(DEFAULT={'host': host, 'transport_url': 'fake://'},
                      api={'auth_strategy': 'noauth'},
                      binding={'workers': '1'}, audit={'interval': '0'},
                      cleaning={'poll_interval': '1',
                                'methods': 'generic_pci:command',
                                'command': 'sh -c "touch %s" clean' %
                                self.cleaned})
        if role != service_mod.AGENT:
            groups['database'] = {'connection': self.url}
        return base.make_conf(self, **groups)

    def service(self, role, host):
        conf = self.make_conf(role, host)
        svc = service_mod.Service(conf, role=role, transport=self.transport)
        self.addCleanup(svc.stop)
        return svc

    def call(self, method, path, body=None, status=200):
        req = webob.Request.blank(path, method=method, headers=ADMIN)
        if body is not None:
            req.content_type = 'application/json'
            req.body = json.dumps(body).encode()
        resp = req.get_response(self.api.app)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp.json if resp.body else None

    def bind(self, host, rp_uuid, status=202):
        (arq,) = self.call('POST', '/v2/accelerator_requests',
                           {'device_profile_name': 'gpu'},
                           status=201)['arqs']
        vm = uuidutils.generate_uuid()
        self.call('PATCH', '/v2/accelerator_requests', {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': host},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp_uuid},
            {'op': 'add', 'path': '/instance_uuid', 'value': vm}]},
            status=status)
        return arq['uuid'], vm

    def state(self, arq_uuid):
        return self.call('GET', '/v2/accelerator_requests/' +
                         arq_uuid)['state']

    def handles(self, host):
        """``{attach handle UUID: state}`` of ``host``'s devices."""
        with self.conductor.db.transaction() as session:
            return dict(session.execute(
                sa.select(models.AttachHandle.uuid, models.AttachHandle.state)
                .join(models.Deployable).join(models.Device)
                .where(models.Device.hostname == host)).all())

    def test_roles(self):
        self.assertIsNone(self.api.binder)
        self.assertIsInstance(self.api.dispatcher,
                              dispatcher_mod.RpcDispatcher)
        self.assertIsNone(self.conductor.binder.host)
        self.assertIsNone(self.conductor.store)
        agent = self.agents['node1']
        self.assertIsNone(agent.db)
        self.assertIsNone(agent.binder)
        self.assertIsNone(agent.auditor)
        self.assertIsInstance(agent.store, conductor_rpcapi.RemoteHostStore)

    def test_agents_open_no_database(self):
        # Their [database] default would be a SQLite file there.
        for agent in self.agents.values():
            self.assertEqual([], [f for f in os.listdir(
                agent.conf.state_path) if 'sqlite' in f])

    def test_discovery_is_stored_through_the_conductor(self):
        for host in HOSTS:
            devices = self.call('GET', '/v2/devices?hostname=' +
                                host)['devices']
            self.assertEqual(2, len(devices))
            self.assertEqual(2, len(self.rps[host]))
        self.assertEqual([], sorted(set(self.rps['node1']) &
                                    set(self.rps['node2'])))
        with self.conductor.db.transaction() as session:
            status = {r.hostname: r.state
                      for r in host_status.list_(session)}
        self.assertEqual({'node1': 'ok', 'node2': 'ok'}, status)

    def test_conductor_binds_and_tells_nova(self):
        arq, vm = self.bind('node2', self.rps['node2'][0])
        self.assertTrue(wait_for(lambda: self.state(arq) == 'Bound'))
        self.assertTrue(wait_for(lambda: self.notifier.sent))
        self.assertEqual([(vm, arq, 'completed')], self.notifier.sent)

    def test_an_idle_gpu_is_held_through_the_conductor(self):
        # The agent of a MIG repartition (agent.mig.repartition) holds
        # no database credentials: the conductor checks and taints.
        store = self.agents['node2'].store
        af, d8 = base.T4_ADDRESSES
        arq, _ = self.bind('node2', self.rps['node2'][0])
        self.assertTrue(wait_for(lambda: self.state(arq) == 'Bound'))
        with self.conductor.db.transaction() as session:
            bound = session.scalar(sa.select(models.Device.address).join(
                models.Deployable).where(
                models.Deployable.rp_uuid == self.rps['node2'][0]))
        idle = d8 if bound == af else af
        self.assertIsNone(store.hold_gpu(bound))
        (rp,) = store.hold_gpu(idle)
        with self.conductor.db.transaction() as session:
            self.assertEqual([('node2', idle)], [
                (t.deployable.device.hostname, t.deployable.device.address)
                for t in session.query(models.DeployableTaint).filter_by(
                    key=taints.REPARTITION_KEY)])
        held, _ = self.bind('node2', rp)
        self.assertTrue(wait_for(lambda: self.state(held) == 'BindFailed'))
        self.assertEqual([rp], store.release_gpu(idle))
        with self.conductor.db.transaction() as session:
            self.assertEqual(0, session.query(
                models.DeployableTaint).count())

    def test_failed_cast_answers_503_and_the_conductor_resumes(self):
        self.useFixture(fixtures.MockPatchObject(
            self.api.dispatcher.conductor_api, 'bind',
            side_effect=messaging.MessageDeliveryFailure('broker down')))
        arq, vm = self.bind('node1', self.rps['node1'][0], status=503)
        self.assertEqual('BindStarted', self.state(arq))
        self.conductor.binder.resume()
        self.assertTrue(wait_for(lambda: self.state(arq) == 'Bound'))

    def test_release_is_cleaned_by_the_agent_through_the_conductor(self):
        agent = self.agents['node1']
        agent.cleaner.start()
        arq, vm = self.bind('node1', self.rps['node1'][0])
        self.assertTrue(wait_for(lambda: self.state(arq) == 'Bound'))
        self.assertIn(handle_states.BOUND, self.handles('node1').values())
        self.call('DELETE', '/v2/accelerator_requests?instance=' + vm,
                  status=204)
        # The API's clean cast woke the agent, which ran its command and
        # committed cleaning, then available, through the conductor.
        self.assertTrue(wait_for(lambda: set(
            self.handles('node1').values()) == {'available'}))
        self.assertTrue(agent.cleaner.wait_idle())
        self.assertTrue(os.path.exists(self.cleaned))

    def test_an_agent_cannot_touch_another_hosts_rows(self):
        handle = sorted(self.handles('node2'))[0]
        store = self.agents['node1'].store
        for call in (lambda: store.start_cleaning(handle),
                     lambda: store.finish_cleaning(handle, 'x'),
                     lambda: store.reserved_units(self.rps['node2'][0])):
            err = self.assertRaises(exception.NotThisHost, call)
            self.assertIn('node1', str(err))
        self.assertEqual({'available'}, set(self.handles('node2').values()))
        self.assertEqual([], store.handles_to_clean())

    def test_agent_without_a_conductor_changes_nothing(self):
        store = conductor_rpcapi.RemoteHostStore(
            conductor_rpcapi.ConductorAPI(self.transport, 'nobody-serves',
                                          timeout=1), 'node1')
        self.assertRaises(exception.ConductorUnavailable,
                          store.handles_to_clean)
