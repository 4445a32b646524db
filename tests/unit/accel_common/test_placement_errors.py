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
"""``accel_common.placement_errors.error_code`` on the answers a real
Placement gives (openstack-placement's fixture, served in process)."""

import uuid

import requests

from accel_common import placement_errors
from tests import placement_fixture

HEADERS = {'X-Auth-Token': 'admin',
           'OpenStack-API-Version': 'placement 1.36'}


class TestErrorCode(placement_fixture.PlacementTestCase):

    def call(self, method, path, body=None):
        return requests.request(method, self.placement.endpoint + path,
                                json=body, headers=HEADERS, timeout=10)

    def test_codes_of_a_real_placement(self):
        rp = str(uuid.uuid4())
        self.assertEqual(200, self.call('POST', '/resource_providers', {
            'uuid': rp, 'name': 'rp'}).status_code)
        # A stale generation: Placement's concurrent update code.
        resp = self.call('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 7,
            'inventories': {'VCPU': {'total': 1}}})
        self.assertEqual(409, resp.status_code)
        self.assertEqual(placement_errors.CONCURRENT_UPDATE,
                         placement_errors.error_code(resp))
        # A success: no error document.
        ok = self.call('GET', '/resource_providers/%s' % rp)
        self.assertIsNone(placement_errors.error_code(ok))
