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

"""Wire tests of AcceleratorClient (``test_client``'s fixtures): reading
and deleting ARQs, by UUID and by instance, and the typed exceptions of
each."""

from nova_accel.cyborg_client import exception
from tests.unit.cyborg_client import fake_accel
from tests.unit.cyborg_client.test_client import ClientTestBase
from tests.unit.cyborg_client.test_client import INSTANCE
from tests.unit.cyborg_client.test_client import RP1


class TestGetAndDelete(ClientTestBase):

    def setUp(self):
        super().setUp()
        arqs = self.client.create_arqs('dp1')
        self.uuids = [a['uuid'] for a in arqs]
        self.client.bind_arqs({u: dict(hostname='node1', device_rp_uuid=RP1,
                                       instance_uuid=INSTANCE)
                               for u in self.uuids[:2]})

    def test_get_arq(self):
        arq = self.client.get_arq(self.uuids[0])
        self.assertWire('GET', '/accelerator_requests/' + self.uuids[0])
        self.assertEqual('Bound', arq['state'])
        self.assertEqual({'domain': '0000', 'bus': 'af', 'device': '00',
                          'function': '0'}, arq['attach_handle_info'])

    def test_get_arq_404(self):
        exc = self.assertRaises(exception.ARQNotFound, self.client.get_arq,
                                'missing')
        self.assertEqual(404, exc.status_code)
        self.assertIn('missing', str(exc))

    def test_get_arqs_for_instance(self):
        arqs = self.client.get_arqs_for_instance(INSTANCE)
        self.assertWire('GET', '/accelerator_requests',
                        {'instance': [INSTANCE]})
        self.assertEqual(set(self.uuids[:2]), {a['uuid'] for a in arqs})

    def test_only_resolved_filters_client_side(self):
        self.fake.arqs[self.uuids[1]]['state'] = 'BindStarted'
        arqs = self.client.get_arqs_for_instance(INSTANCE,
                                                 only_resolved=True)
        # bind_state is never sent (Cyborg would answer 423).
        self.assertWire('GET', '/accelerator_requests',
                        {'instance': [INSTANCE]})
        self.assertEqual([self.uuids[0]], [a['uuid'] for a in arqs])
        for state in ('BindFailed', 'Deleting'):
            self.fake.arqs[self.uuids[1]]['state'] = state
            self.assertEqual(2, len(self.client.get_arqs_for_instance(
                INSTANCE, only_resolved=True)))

    def test_no_arqs_is_not_an_error(self):
        self.assertEqual([], self.client.get_arqs_for_instance('other'))

    def test_get_arqs_errors(self):
        self.fake.inject(*fake_accel.cyborg_error(423, 'unresolved'))
        exc = self.assertRaises(exception.AcceleratorClientError,
                                self.client.get_arqs_for_instance, INSTANCE)
        self.assertEqual(423, exc.status_code)
        self.fake.inject(502, text='bad gateway')
        self.assertRaises(exception.AcceleratorServiceUnavailable,
                          self.client.get_arqs_for_instance, INSTANCE)

    def test_delete_for_instance(self):
        self.client.delete_arqs_for_instance(INSTANCE)
        self.assertWire('DELETE', '/accelerator_requests',
                        {'instance': [INSTANCE]})
        self.assertEqual([self.uuids[2]], list(self.fake.arqs))
        # Idempotent: 404 is success.
        self.fake.inject(*fake_accel.cyborg_error(404, 'gone'))
        self.client.delete_arqs_for_instance(INSTANCE)

    def test_delete_for_instance_errors(self):
        self.fake.inject(*fake_accel.cyborg_error(409, 'busy'))
        exc = self.assertRaises(exception.ARQDeleteFailed,
                                self.client.delete_arqs_for_instance,
                                INSTANCE)
        self.assertEqual(409, exc.status_code)
        self.assertIn(INSTANCE, str(exc))
        self.fake.inject(*fake_accel.cyborg_error(500, 'db'))
        self.assertRaises(exception.AcceleratorServiceUnavailable,
                          self.client.delete_arqs_for_instance, INSTANCE)

    def test_delete_by_uuid(self):
        self.client.delete_arqs(self.uuids[1:])
        self.assertWire('DELETE', '/accelerator_requests',
                        {'arqs': [','.join(self.uuids[1:])]})
        self.assertEqual([self.uuids[0]], list(self.fake.arqs))
        # Again: the fake answers 404, which is success.
        sent = len(self.fake.requests)
        self.client.delete_arqs(self.uuids[1:])
        self.assertEqual(sent + 1, len(self.fake.requests))
        before = len(self.fake.requests)
        self.client.delete_arqs([])
        self.assertEqual(before, len(self.fake.requests))

    def test_delete_by_uuid_400(self):
        self.fake.inject(*fake_accel.cyborg_error(400, 'bad uuid'))
        exc = self.assertRaises(exception.ARQDeleteFailed,
                                self.client.delete_arqs, ['x'])
        self.assertEqual('bad uuid', exc.error_message)
