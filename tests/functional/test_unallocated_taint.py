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

"""A bound device whose instance holds no allocation never looks free to
Nova 34's scheduler (issue 53 item 4,
``accel_backend.conductor.orphan_taints``).

Host: the recorded ``two-gpus`` tree, two T4s, one provider each.  A
server is booted with one; its allocations are then deleted in the
harness's real Placement behind accel_backend's back (as Nova does when
it deletes a server while accel_backend is down).  Placement then shows
that T4 free.  One audit run (called directly, not after ``[audit]
interval``) taints and reserves it, so the next accelerator boot lands
on the other T4 instead of on a device the claim would refuse.
"""

from accel_backend.conductor import audit
from accel_backend.conductor import orphan_taints
from accel_common import taints
from tests.functional import base


class UnallocatedTaintTest(base.AccelServersTestBase):

    def setUp(self):
        super().setUp()
        self.rps = self.device_rps()
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])
        self.flavor = self.accel_flavor('gpu')

    def reserved(self, rp_uuid):
        return self.placement.get(
            '/resource_providers/%s/inventories' % rp_uuid
        ).body['inventories']['PGPU']['reserved']

    def test_next_boot_lands_on_the_other_device(self):
        self.assertEqual(2, len(self.rps))
        first = self._create_server(flavor_id=self.flavor, networks='none')
        (arq,) = self.arqs_of(first['id'])
        orphan_rp = arq['device_rp_uuid']
        (other_rp,) = set(self.rps.values()) - {orphan_rp}
        self.placement.delete('/allocations/%s' % first['id'])
        self.assertEqual(0, self.reserved(orphan_rp))

        auditor = audit.Auditor(
            self.accel.db, self.COMPUTE, nova=self.accel.notifier.adapter,
            binder=self.accel.binder, cleaner=self.accel.cleaner,
            grace_period=0, placement=self.accel.placement,
            reserved=self.accel.reporter.reserved)
        report = auditor.run()

        self.assertEqual([], report.deleted_arqs)
        self.assertEqual(1, self.reserved(orphan_rp))
        # What the operator sees: GET /v2/deployables at 2.5.
        resp = self.accel_api.request(
            base.ACCEL_URL + '/v2/deployables', 'GET', headers={
                'X-Auth-Token': 'admin',
                'OpenStack-API-Version': 'accelerator 2.5'})
        (dep,) = [d for d in resp.json()['deployables']
                  if d['rp_uuid'] == orphan_rp]
        (taint,) = dep['taints']
        self.assertEqual((taints.UNALLOCATED_KEY, 'NoSchedule',
                          orphan_taints.SET_BY),
                         (taint['key'], taint['effect'], taint['set_by']))
        self.assertIn(first['id'], taint['reason'])
        second = self._create_server(flavor_id=self.flavor, networks='none')
        self.assert_one_bound_arq(second['id'], other_rp)
        self.assert_one_bound_arq(first['id'], orphan_rp)
