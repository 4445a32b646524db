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

"""Reserved units written at once (``agent.placement.reserved``) and by the
periodic report, against a real Placement: the value read last is the
value that lands last."""

from accel_backend.agent.placement import report
from tests.unit.accel_backend.test_report import COMPUTE
from tests.unit.accel_backend.test_report import ReporterTestBase


class TestReservedLandsLast(ReporterTestBase):

    def setUp(self):
        super().setUp()
        # The database's reserved units per provider (``reserved_for``).
        self.db = {}
        self.reporter = report.Reporter(
            self.client, [COMPUTE], reserved_for=self.db.get,
            reserved_for_many=lambda rps: {r: self.db[r] for r in rps})
        self.af, self.d8 = self.two_t4s()
        self.db.update({self.af.rp_uuid: 0, self.d8.rp_uuid: 0})
        self.reporter.report([self.af, self.d8])

    def reserved(self, rec):
        return self.inventories(rec.rp_uuid)['PGPU']['reserved']

    def test_a_report_read_before_a_release_does_not_undo_it(self):
        # The report read the states (nothing reserved) into its records;
        # then a release made a device dirty and the cleaner reserved it.
        stale = self.two_t4s()
        self.db[self.af.rp_uuid] = 1
        self.assertTrue(self.reporter.reserved.sync_reserved(self.af.rp_uuid))
        self.assertEqual(1, self.reserved(self.af))
        del self.client.log[:]
        self.reporter.report(stale)
        # Still reserved, and nothing was written: the report read the
        # database again before its write and found Placement right.
        self.assertEqual((1, 0), (self.reserved(self.af),
                                  self.reserved(self.d8)))
        self.assertEqual([], self.client.writes())

    def test_a_report_writes_what_the_database_says_at_write_time(self):
        # Placement is behind (the cleaner's write failed); the record
        # says reserved, but the device was cleaned since: 0 is written.
        self.db[self.af.rp_uuid] = 1
        self.reporter.reserved.sync_reserved(self.af.rp_uuid)
        self.raw.put('/resource_providers/%s/inventories' % self.af.rp_uuid,
                     {'resource_provider_generation': self.rp(
                         self.af.rp_uuid)['generation'],
                      'inventories': {'PGPU': {'total': 1, 'reserved': 0}}})
        self.db[self.af.rp_uuid] = 0
        self.reporter.forget()
        self.reporter.report(self.two_t4s(reserved=1))
        self.assertEqual(0, self.reserved(self.af))

    def test_sync_reserved_reads_the_database_when_it_writes(self):
        self.db[self.d8.rp_uuid] = 1
        self.assertTrue(self.reporter.reserved.sync_reserved(self.d8.rp_uuid))
        self.assertEqual((0, 1), (self.reserved(self.af),
                                  self.reserved(self.d8)))
        # Not ours (the database knows no such provider): nothing.
        del self.client.log[:]
        self.assertFalse(self.reporter.reserved.sync_reserved(
            '6a0c2f0e-8f1b-4a37-9d55-3c1f1e0a2b77'))
        self.assertEqual([], self.client.writes())

    def test_without_reserved_for_sync_writes_nothing(self):
        reporter = report.Reporter(self.client, [COMPUTE])
        del self.client.log[:]
        self.assertFalse(reporter.reserved.sync_reserved(self.af.rp_uuid))
        self.assertEqual([], self.client.writes())

    def test_a_release_is_reserved_over_another_process_write(self):
        # This process reserved the device once (its view says 1); the
        # host's agent cleaned it and wrote 0 since.  A new release must
        # write 1, not trust the stale view.
        self.db[self.af.rp_uuid] = 1
        self.reporter.reserved.reserve_released([self.af.rp_uuid])
        self.assertEqual(1, self.reserved(self.af))
        self.raw.put('/resource_providers/%s/inventories' % self.af.rp_uuid,
                     {'resource_provider_generation': self.rp(
                         self.af.rp_uuid)['generation'],
                      'inventories': {'PGPU': {'total': 1, 'reserved': 0}}})
        self.reporter.reserved.reserve_released([self.af.rp_uuid])
        self.assertEqual((1, 0), (self.reserved(self.af),
                                  self.reserved(self.d8)))

    def test_a_disable_is_written_over_another_process_write(self):
        # This API process disabled the device (its view says reserved
        # 1); another API process behind the same load balancer enabled
        # it since (Placement says 0).  Disabling it again here must
        # write 1, not trust the stale view.
        self.assertTrue(self.reporter.reserved.set_reserved(
            self.af.rp_uuid, True))
        self.assertEqual(1, self.reserved(self.af))
        self.raw.put('/resource_providers/%s/inventories' % self.af.rp_uuid,
                     {'resource_provider_generation': self.rp(
                         self.af.rp_uuid)['generation'],
                      'inventories': {'PGPU': {'total': 1, 'reserved': 0}}})
        self.assertTrue(self.reporter.reserved.set_reserved(
            self.af.rp_uuid, True))
        self.assertEqual((1, 0), (self.reserved(self.af),
                                  self.reserved(self.d8)))
