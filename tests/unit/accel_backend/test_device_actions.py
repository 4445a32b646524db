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

"""``POST /v2/devices/{uuid}/disable|enable`` against a real Placement.

A ``Service`` (noauth, SQLite, the recorded ``two-gpus`` sysfs tree)
reports to openstack-placement's functional fixture; the tests call the
WSGI app and read the inventories straight from Placement.
"""

import json

import fixtures
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend.agent.placement import client as pclient
from accel_backend.common import ids
from accel_backend.conductor import claim
from accel_backend import exception
from accel_backend.objects import device as device_obj
from accel_backend import service as service_mod
from accel_common import handle_states
from tests import placement_fixture
from tests.unit.accel_backend import base

COMPUTE = 'compute1'
AF, D8 = base.T4_ADDRESSES
ADMIN = {'X-Auth-Token': 'admin'}


def rp_uuid(address):
    return ids.stable_uuid('rp', COMPUTE, address)


def device_uuid(address):
    return ids.stable_uuid('device', COMPUTE, address)


class DeviceActionsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixture.PlacementFixture())
        conf = base.make_conf(
            self, DEFAULT={'host': COMPUTE},
            api={'auth_strategy': 'noauth'},
            binding={'workers': '1'},
            placement=base.placement_opts(self.placement.endpoint),
            nova=base.NO_NOVA)
        # The test's own view of Placement.
        self.raw = pclient.PlacementClient(pclient.adapter_from_conf(conf))
        self.compute_uuid = uuidutils.generate_uuid()
        self.raw.post('/resource_providers',
                      {'uuid': self.compute_uuid, 'name': COMPUTE})
        self.svc = service_mod.Service(conf)
        self.addCleanup(self.svc.stop)
        self.svc.discover_and_report()

    def call(self, method, path, status, headers=ADMIN):
        req = webob.Request.blank(path, method=method, headers=headers)
        resp = req.get_response(self.svc.app)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp

    def reserved(self, address):
        inv = self.raw.get('/resource_providers/%s/inventories' %
                           rp_uuid(address)).json()['inventories']
        return inv['PGPU']['reserved'], inv['PGPU']['total']

    def status(self, address):
        with self.svc.db.transaction() as session:
            return device_obj.get(session, device_uuid(address)).status

    def action(self, address, what, status=200):
        return self.call('POST', '/v2/devices/%s/%s' % (
            device_uuid(address), what), status)

    def test_disable_reserves_and_enable_frees(self):
        self.assertEqual((0, 1), self.reserved(AF))
        resp = self.action(AF, 'disable')
        self.assertEqual(b'', resp.body)
        self.assertEqual(device_obj.MAINTAINING, self.status(AF))
        self.assertEqual((1, 1), self.reserved(AF))
        self.assertEqual((0, 1), self.reserved(D8))
        self.action(AF, 'enable')
        self.assertEqual(device_obj.ENABLED, self.status(AF))
        self.assertEqual((0, 1), self.reserved(AF))

    def test_actions_are_idempotent(self):
        for _ in range(2):
            self.action(D8, 'disable')
            self.assertEqual((1, 1), self.reserved(D8))
        for _ in range(2):
            self.action(D8, 'enable')
            self.assertEqual((0, 1), self.reserved(D8))

    def test_periodic_report_keeps_a_disabled_device_reserved(self):
        self.action(AF, 'disable')
        records = {r.address: r for r in self.svc.discover_and_report()}
        self.assertTrue(records[AF].reserved)
        self.assertFalse(records[D8].reserved)
        self.assertEqual((1, 1), self.reserved(AF))
        self.assertEqual(device_obj.MAINTAINING, self.status(AF))
        self.action(AF, 'enable')
        self.svc.discover_and_report()
        self.assertEqual((0, 1), self.reserved(AF))

    def test_report_repairs_placement_after_a_failed_update(self):
        # Placement fails after the database was written: the device is
        # disabled all the same, and the next report reserves it.
        self.useFixture(fixtures.MockPatchObject(
            self.svc.reporter.reserved, 'set_reserved',
            side_effect=exception.PlacementError(
                method='PUT', url='/x', status=503, body='down')))
        resp = self.action(AF, 'disable', status=502)
        self.assertEqual('accel.placement.error',
                         resp.json['errors'][0]['code'])
        self.assertEqual(device_obj.MAINTAINING, self.status(AF))
        self.assertEqual((0, 1), self.reserved(AF))
        self.svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(AF))

    def test_disabled_device_is_not_bound(self):
        self.action(AF, 'disable')
        key = (rp_uuid(AF), COMPUTE)
        with self.svc.db.transaction() as session:
            self.assertEqual({}, claim.claim(session, {key: 1}))
        self.action(AF, 'enable')
        with self.svc.db.transaction() as session:
            (handle,) = claim.claim(session, {key: 1})[key]
            self.assertEqual({'domain': '0000', 'bus': 'af', 'device': '00',
                              'function': '0'}, handle.attach_info)
            self.assertEqual((True, handle_states.BOUND),
                             (handle.in_use, handle.state))

    def test_disable_a_device_in_use(self):
        # Placement accepts reserved = total over an allocation (the
        # provider is then over capacity until the guest goes).
        consumer = uuidutils.generate_uuid()
        self.raw.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid(AF): {'resources': {'PGPU': 1}}},
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid(),
            'consumer_generation': None})
        self.action(AF, 'disable')
        self.assertEqual((1, 1), self.reserved(AF))
        self.action(AF, 'enable')
        self.assertEqual((0, 1), self.reserved(AF))

    def test_set_reserved_retries_a_generation_conflict(self):
        url = '/resource_providers/%s/inventories' % rp_uuid(AF)
        real_put = self.svc.placement.put
        bumped = []
        statuses = []

        def put(path, body=None, ok=(200, 201, 204)):
            if path == url and not bumped:
                # Someone else changes the provider first.
                bumped.append(True)
                self.raw.put('/resource_providers/%s/traits' % rp_uuid(AF), {
                    'resource_provider_generation':
                        body['resource_provider_generation'],
                    'traits': sorted(set(self.raw.get(
                        '/resource_providers/%s/traits' % rp_uuid(AF)
                    ).json()['traits']) | {'HW_GPU_API_VULKAN'})})
            resp = real_put(path, body, ok=ok)
            if path == url:
                statuses.append(resp.status_code)
            return resp

        self.useFixture(fixtures.MockPatchObject(
            self.svc.placement, 'put', side_effect=put))
        self.assertTrue(self.svc.reporter.reserved.set_reserved(
            rp_uuid(AF), True))
        self.assertEqual([True], bumped)
        self.assertEqual([409, 200], statuses)
        self.assertEqual((1, 1), self.reserved(AF))

    def test_set_reserved_of_an_unknown_provider(self):
        self.assertFalse(self.svc.reporter.reserved.set_reserved(
            uuidutils.generate_uuid(), True))

    def test_disable_when_the_provider_is_not_in_placement(self):
        self.raw.delete('/resource_providers/%s' % rp_uuid(AF))
        self.action(AF, 'disable')
        self.assertEqual(device_obj.MAINTAINING, self.status(AF))
        # The next report creates it reserved.
        self.svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(AF))

    def test_missing_device_cannot_be_enabled(self):
        with self.svc.db.transaction() as session:
            device_obj.get(session, device_uuid(AF)).status = (
                device_obj.MISSING)
        resp = self.action(AF, 'enable', status=409)
        self.assertEqual('accel.device.missing',
                         resp.json['errors'][0]['code'])
        self.action(AF, 'disable')
        self.assertEqual(device_obj.MAINTAINING, self.status(AF))

    def test_unknown_device_is_404_and_touches_nothing(self):
        resp = self.call('POST', '/v2/devices/%s/disable' %
                         uuidutils.generate_uuid(), 404)
        self.assertEqual('accel.device.not_found',
                         resp.json['errors'][0]['code'])
        self.assertEqual((0, 1), self.reserved(AF))

    def test_member_is_forbidden_and_touches_nothing(self):
        resp = self.call('POST', '/v2/devices/%s/disable' % device_uuid(AF),
                         403, headers={'X-Auth-Token': 'user',
                                       'X-Roles': 'member,reader',
                                       'X-Project-Id': 'a' * 32})
        self.assertEqual('accel.policy.forbidden',
                         json.loads(resp.body)['errors'][0]['code'])
        self.assertEqual(device_obj.ENABLED, self.status(AF))
        self.assertEqual((0, 1), self.reserved(AF))
