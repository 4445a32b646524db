#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Wire tests of AcceleratorClient.

A real keystoneauth Session + Adapter talks HTTP (through wsgi-intercept) to
the in-memory service of ``fake_accel``; the tests assert the exact requests
on the wire (the wire contract of
nova 34.0.0's nova/accelerator/cyborg.py) and the typed exceptions.
"""

import logging
import socket

import fixtures

from nova import objects
import testtools

from nova_accel import cyborg_client
from nova_accel.cyborg_client import exception
from tests.unit.cyborg_client import fake_accel

objects.register_all()
INSTANCE = '9f3a5d2e-7c1b-4d8e-a0f1-2b3c4d5e6f70'
PROJECT = '0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b'
RP1 = 'c0ffee00-0000-4000-8000-000000000001'
RP2 = 'c0ffee00-0000-4000-8000-000000000002'
GROUPS = [
    {'resources:CUSTOM_ACCELERATOR_FPGA': '2',
     'trait:CUSTOM_INTEL_PAC_ARRIA10': 'required',
     'accel:bitstream_id': 'FB021995'},
    {'resources:PGPU': '1', 'trait:CUSTOM_SLOW': 'forbidden'},
]


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class ClientTestBase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        self.fake = self.useFixture(fake_accel.FakeAcceleratorFixture()).fake
        self.fake.add_profile('dp1', GROUPS)
        self.client = cyborg_client.AcceleratorClient(
            fake_accel.make_adapter())

    @property
    def last(self):
        return self.fake.requests[-1]

    def assertWire(self, method, path, query=None, body=None):
        req = self.last
        self.assertEqual(method, req.method)
        self.assertEqual('/v2' + path, req.path)
        self.assertEqual(query or {}, req.query)
        self.assertEqual(body, req.body)
        self.assertEqual(fake_accel.TOKEN, req.headers.get('X-Auth-Token'))


class TestDeviceProfiles(ClientTestBase):

    def test_get_device_profile(self):
        profile = self.client.get_device_profile('dp1')
        self.assertEqual('dp1', profile['name'])
        self.assertEqual(GROUPS, profile['groups'])
        self.assertEqual(1, len(self.fake.requests))
        self.assertWire('GET', '/device_profiles', {'name': ['dp1']})
        # No microversion header: 2.0 is what Nova speaks.
        self.assertNotIn('OpenStack-API-Version', self.last.headers)

    def test_not_found(self):
        exc = self.assertRaises(exception.DeviceProfileNotFound,
                                self.client.get_device_profile, 'nope')
        self.assertIn('nope', str(exc))
        self.assertIsNone(exc.status_code)

    def test_404_is_not_found(self):
        self.fake.inject(*fake_accel.cyborg_error(404, 'no such thing'))
        exc = self.assertRaises(exception.DeviceProfileNotFound,
                                self.client.get_device_profile, 'dp1')
        self.assertEqual(404, exc.status_code)
        self.assertEqual('no such thing', exc.error_message)
        self.assertEqual('Client', exc.error_code)

    def test_ambiguous(self):
        self.fake.add_profile('dp1', GROUPS)
        exc = self.assertRaises(exception.DeviceProfileAmbiguous,
                                self.client.get_device_profile, 'dp1')
        self.assertEqual(2, exc.kwargs['count'])

    def test_server_ignoring_name_filter(self):
        self.fake.add_profile('other', GROUPS)
        self.fake.inject(200, {'device_profiles': self.fake.profiles})
        self.assertEqual('dp1', self.client.get_device_profile('dp1')['name'])

    def test_500(self):
        self.fake.inject(*fake_accel.api_wg_error(500, 'accel.db', 'boom'))
        exc = self.assertRaises(exception.AcceleratorServiceUnavailable,
                                self.client.get_device_profile, 'dp1')
        self.assertEqual(500, exc.status_code)
        self.assertEqual('accel.db', exc.error_code)
        self.assertEqual('boom', exc.error_message)

    def test_400_and_malformed(self):
        self.fake.inject(*fake_accel.cyborg_error(400, 'bad name'))
        exc = self.assertRaises(exception.AcceleratorClientError,
                                self.client.get_device_profile, 'dp1')
        self.assertEqual(400, exc.status_code)
        self.fake.inject(200, {'profiles': []})
        self.assertRaises(exception.AcceleratorClientError,
                          self.client.get_device_profile, 'dp1')

    def test_empty_name_sends_nothing(self):
        self.assertRaises(exception.InvalidDeviceProfile,
                          self.client.get_device_profile, '')
        self.assertEqual([], self.fake.requests)

    def test_get_request_groups(self):
        groups = self.client.get_request_groups('dp1', owner='port1')
        self.assertEqual(['device_profile_0port1', 'device_profile_1port1'],
                         [g.requester_id for g in groups])
        self.assertEqual({'CUSTOM_ACCELERATOR_FPGA': 2}, groups[0].resources)
        self.assertEqual({'CUSTOM_SLOW'}, groups[1].forbidden_traits)

    def test_get_request_groups_invalid_profile(self):
        self.fake.add_profile('bad', [{'resources:fpga': '1'}])
        exc = self.assertRaises(exception.InvalidDeviceProfile,
                                self.client.get_request_groups, 'bad')
        self.assertIn('bad', str(exc))


class TestCreateArqs(ClientTestBase):

    def test_create(self):
        arqs = self.client.create_arqs('dp1')
        self.assertWire('POST', '/accelerator_requests',
                        body={'device_profile_name': 'dp1'})
        self.assertEqual(3, len(arqs))
        self.assertEqual(
            cyborg_client.device_count(GROUPS), len(arqs))
        self.assertEqual([0, 0, 1],
                         [a['device_profile_group_id'] for a in arqs])

    def test_unknown_profile(self):
        exc = self.assertRaises(exception.ARQCreateFailed,
                                self.client.create_arqs, 'nope')
        self.assertEqual(404, exc.status_code)
        self.assertIn('Device profile nope not found', str(exc))

    def test_400_plain_string_error(self):
        self.fake.inject(400, {'error_message': 'Invalid input'})
        exc = self.assertRaises(exception.ARQCreateFailed,
                                self.client.create_arqs, 'dp1')
        self.assertEqual('Invalid input', exc.error_message)

    def test_empty_arq_list(self):
        self.fake.inject(201, {'arqs': []})
        exc = self.assertRaises(exception.ARQCreateFailed,
                                self.client.create_arqs, 'dp1')
        self.assertEqual(201, exc.status_code)

    def test_500_text(self):
        self.fake.inject(503, text='Service Unavailable')
        exc = self.assertRaises(exception.AcceleratorServiceUnavailable,
                                self.client.create_arqs, 'dp1')
        self.assertEqual(503, exc.status_code)
        self.assertEqual('Service Unavailable', exc.error_message)

    def test_create_and_match(self):
        rp_map = {'device_profile_0': [RP1], 'device_profile_1': [RP2]}
        arqs = self.client.create_arqs_and_match('dp1', rp_map)
        self.assertEqual([RP1, RP1, RP2],
                         [a['device_rp_uuid'] for a in arqs])

    def test_create_and_match_failure_cleans_up(self):
        exc = self.assertRaises(exception.ARQMatchError,
                                self.client.create_arqs_and_match, 'dp1',
                                {'device_profile_0': [RP1]})
        self.assertIn('device_profile_1', str(exc))
        created = self.fake.requests[0]
        self.assertEqual('POST', created.method)
        self.assertEqual('DELETE', self.last.method)
        self.assertEqual(1, len(self.last.query['arqs']))
        self.assertEqual(3, len(self.last.query['arqs'][0].split(',')))
        self.assertEqual({}, dict(self.fake.arqs))


class TestBindUnbind(ClientTestBase):

    def setUp(self):
        super().setUp()
        self.arqs = self.client.create_arqs('dp1')
        self.uuids = [a['uuid'] for a in self.arqs]

    def _bindings(self, **extra):
        return {u: dict(hostname='node1', device_rp_uuid=RP1,
                        instance_uuid=INSTANCE, **extra)
                for u in self.uuids}

    def test_bind(self):
        self.client.bind_arqs(self._bindings())
        expected = {u: [
            {'path': '/hostname', 'op': 'add', 'value': 'node1'},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': RP1},
            {'path': '/instance_uuid', 'op': 'add', 'value': INSTANCE}]
            for u in self.uuids}
        self.assertWire('PATCH', '/accelerator_requests', body=expected)
        self.assertNotIn('OpenStack-API-Version', self.last.headers)
        self.assertEqual({'Bound'},
                         {a['state'] for a in self.fake.arqs.values()})
        self.assertIn('Binding accelerator requests %s' %
                      ','.join(sorted(self.uuids)), self.log.output)

    def test_bind_with_project_uses_2_1(self):
        self.client.bind_arqs(self._bindings(project_id=PROJECT))
        ops = self.last.body[self.uuids[0]]
        self.assertEqual({'path': '/project_id', 'op': 'add',
                          'value': PROJECT}, ops[-1])
        self.assertEqual(4, len(ops))
        self.assertEqual('accelerator 2.1',
                         self.last.headers['Openstack-Api-Version'])

    def test_bind_409(self):
        self.fake.inject(*fake_accel.api_wg_error(
            409, 'accelerator.arq.state', 'ARQ in wrong state'))
        exc = self.assertRaises(exception.ARQBindFailed,
                                self.client.bind_arqs, self._bindings())
        self.assertEqual(409, exc.status_code)
        self.assertEqual('accelerator.arq.state', exc.error_code)
        self.assertIn('ARQ in wrong state', str(exc))
        for u in self.uuids:
            self.assertIn(u, str(exc))

    def test_bind_400_and_404(self):
        self.fake.inject(*fake_accel.cyborg_error(400, 'bad patch'))
        exc = self.assertRaises(exception.ARQBindFailed,
                                self.client.bind_arqs, self._bindings())
        self.assertEqual(400, exc.status_code)
        exc = self.assertRaises(
            exception.ARQBindFailed, self.client.bind_arqs,
            {'unknown-arq': dict(hostname='h', device_rp_uuid=RP1,
                                 instance_uuid=INSTANCE)})
        self.assertEqual(404, exc.status_code)

    def test_bind_500(self):
        self.fake.inject(*fake_accel.cyborg_error(500, 'conductor down'))
        exc = self.assertRaises(exception.AcceleratorServiceUnavailable,
                                self.client.bind_arqs, self._bindings())
        self.assertEqual('conductor down', exc.error_message)

    def test_bad_binding_sends_nothing(self):
        before = len(self.fake.requests)
        bindings = self._bindings()
        del bindings[self.uuids[0]]['hostname']
        self.assertRaises(exception.ARQBindFailed, self.client.bind_arqs,
                          bindings)
        self.assertRaises(exception.ARQBindFailed, self.client.bind_arqs,
                          self._bindings(colour='red'))
        self.client.bind_arqs({})
        self.assertEqual(before, len(self.fake.requests))

    def test_unbind(self):
        self.client.bind_arqs(self._bindings())
        self.client.unbind_arqs(self.uuids[:2])
        ops = [{'path': '/hostname', 'op': 'remove'},
               {'path': '/device_rp_uuid', 'op': 'remove'},
               {'path': '/instance_uuid', 'op': 'remove'}]
        self.assertWire('PATCH', '/accelerator_requests',
                        body={u: ops for u in self.uuids[:2]})
        self.assertEqual('Unbound', self.fake.arqs[self.uuids[0]]['state'])
        self.assertEqual('Bound', self.fake.arqs[self.uuids[2]]['state'])

    def test_unbind_errors(self):
        self.fake.inject(*fake_accel.cyborg_error(400, 'nope'))
        exc = self.assertRaises(exception.ARQUnbindFailed,
                                self.client.unbind_arqs, self.uuids)
        self.assertEqual(400, exc.status_code)
        before = len(self.fake.requests)
        self.client.unbind_arqs([])
        self.assertEqual(before, len(self.fake.requests))
