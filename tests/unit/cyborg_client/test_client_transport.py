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

"""AcceleratorClient around its calls: a client built from a request
context, an unreachable service, the details of error answers, and the
exception hierarchy and messages."""

import io

import fixtures

import nova.conf
from nova import context as nova_context
from oslo_config import fixture as config_fixture
import requests
import testtools

from nova_accel import cyborg_client
from nova_accel.cyborg_client import exception
from nova_accel.cyborg_client import transport
from tests.unit.cyborg_client import fake_accel
from tests.unit.cyborg_client.test_client import _free_port
from tests.unit.cyborg_client.test_client import GROUPS
from tests.unit.cyborg_client.test_client import INSTANCE
from tests.unit.cyborg_client.test_client import RP1


class TestConnectionRefused(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        endpoint = 'http://127.0.0.1:%d/v2' % _free_port()
        self.client = cyborg_client.AcceleratorClient(
            fake_accel.make_adapter(endpoint=endpoint))

    def test_every_call_maps_to_unavailable(self):
        calls = [
            (self.client.get_device_profile, ('dp1',)),
            (self.client.create_arqs, ('dp1',)),
            (self.client.bind_arqs, ({'a': {'hostname': 'h',
                                            'device_rp_uuid': RP1,
                                            'instance_uuid': INSTANCE}},)),
            (self.client.unbind_arqs, (['a'],)),
            (self.client.get_arq, ('a',)),
            (self.client.get_arqs_for_instance, (INSTANCE,)),
            (self.client.delete_arqs_for_instance, (INSTANCE,)),
            (self.client.delete_arqs, (['a'],)),
        ]
        for func, args in calls:
            with self.subTest(call=func.__name__):
                exc = self.assertRaises(
                    exception.AcceleratorServiceUnavailable, func, *args)
                self.assertIsNone(exc.status_code)
                self.assertIsInstance(exc, exception.AcceleratorClientError)


class TestFromContext(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.fake = self.useFixture(fake_accel.FakeAcceleratorFixture()).fake
        self.fake.add_profile('dp1', GROUPS)
        conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        conf.config(group='cyborg', endpoint_override=fake_accel.ENDPOINT)

    def test_uses_context_token_and_conf(self):
        ctxt = nova_context.RequestContext('user', 'project', is_admin=False,
                                           auth_token='ctx-token')
        client = cyborg_client.AcceleratorClient.from_context(ctxt)
        self.assertEqual('accelerator', client._adapter.service_type)
        self.assertEqual('dp1', client.get_device_profile('dp1')['name'])
        req = self.fake.requests[-1]
        self.assertEqual('/v2/device_profiles', req.path)
        self.assertEqual('ctx-token', req.headers['X-Auth-Token'])
        self.assertNotIn('X-Service-Token', req.headers)


class TestErrorDetails(testtools.TestCase):

    def _resp(self, status, content, ctype='application/json'):
        # The body through the public ``raw`` file object, which
        # ``Response.content`` reads (requests, ``models.py``).
        resp = requests.Response()
        resp.status_code = status
        resp.raw = io.BytesIO(content.encode())
        resp.headers['Content-Type'] = ctype
        return resp

    def test_formats(self):
        cases = [
            ('{"error_message": "{\\"faultcode\\": \\"Client\\", '
             '\\"faultstring\\": \\"bad\\", \\"debuginfo\\": null}"}',
             ('Client', 'bad')),
            ('{"error_message": "plain"}', (None, 'plain')),
            ('{"error_message": {"faultstring": "d", "faultcode": "S"}}',
             ('S', 'd')),
            ('{"errors": [{"status": 409, "code": "c", "title": "t", '
             '"detail": "d"}]}', ('c', 'd')),
            ('{"errors": [{"status": 409, "title": "t"}]}', (None, 't')),
            ('{"badRequest": {"message": "m", "code": 400}}',
             ('badRequest', 'm')),
            ('not json', (None, 'not json')),
            ('', (None, None)),
        ]
        for content, expected in cases:
            with self.subTest(content=content):
                self.assertEqual(expected, transport.error_details(
                    self._resp(400, content)))


class TestExceptions(testtools.TestCase):

    def test_hierarchy_and_message(self):
        for name in ('AcceleratorServiceUnavailable', 'DeviceProfileNotFound',
                     'DeviceProfileAmbiguous', 'InvalidDeviceProfile',
                     'ARQCreateFailed', 'ARQNotFound', 'ARQBindFailed',
                     'ARQUnbindFailed', 'ARQDeleteFailed', 'ARQMatchError'):
            cls = getattr(cyborg_client, name)
            self.assertTrue(issubclass(cls, exception.AcceleratorClientError))
        exc = exception.ARQNotFound(uuid='u1', status_code=404,
                                    error_code='Client', error_message='gone')
        self.assertEqual('Accelerator request u1 not found. (HTTP 404: gone)',
                         str(exc))
        self.assertEqual(('Client', 'gone'),
                         (exc.error_code, exc.error_message))

    def test_missing_kwargs_do_not_raise(self):
        exc = exception.ARQBindFailed()
        self.assertIn('%(arqs)s', str(exc))
