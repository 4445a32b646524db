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

"""A restarted reporter (``agent.placement.provider_tree`` checkpoint) against
a real Placement: one GET per host when nothing changed, and still right
when something did while it was down."""

import json
import os

import fixtures

from accel_backend.agent.placement import provider_tree
from accel_backend.agent.placement import report
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_report

COMPUTE = test_report.COMPUTE
IN_TREE = '/resource_providers?in_tree=%s'


class TestRestart(test_report.ReporterTestBase):

    def setUp(self):
        super().setUp()
        self.state = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.state, provider_tree.CHECKPOINT)
        self.records = [self.record('0000:%02x:00.0' % bus)
                        for bus in range(0x10, 0x18)]
        self.reporter = self.restart()
        self.reporter.report(self.records)

    def restart(self, names=(COMPUTE,)):
        """A new reporter, as a restarted agent builds it; the call log
        starts empty."""
        del self.client.log[:]
        return report.Reporter(self.client, list(names),
                               checkpoint=self.path)

    def test_restart_without_change_reads_the_tree_once(self):
        reporter = self.restart()
        reporter.report(self.records)
        self.assertEqual([('GET', IN_TREE % self.compute_uuid)],
                         self.client.log)

    def test_without_a_checkpoint_every_provider_is_read(self):
        # What the checkpoint saves: 2 reads per provider, the lookup of
        # the compute node and the custom traits.
        os.unlink(self.path)
        self.restart().report(self.records)
        self.assertEqual(2 + 2 * len(self.records), len(self.client.log))
        self.assertEqual([], self.client.writes())

    def test_a_provider_changed_while_down_is_read_and_set_right(self):
        first = self.records[0]
        self.set_traits(first.rp_uuid, ['CUSTOM_FOREIGN', 'OWNER_CYBORG'])
        reporter = self.restart()
        reporter.report(self.records)
        self.assertEqual(set(test_report.T4_TRAITS),
                         self.traits(first.rp_uuid))
        reads = [url for method, url in self.client.log if method == 'GET']
        self.assertEqual([IN_TREE % self.compute_uuid,
                          '/resource_providers/%s/inventories' %
                          first.rp_uuid,
                          '/resource_providers/%s/traits' % first.rp_uuid],
                         reads)

    def test_a_change_of_ours_while_down_writes_only_it(self):
        changed = self.records[:-1] + [self.record(
            self.records[-1].address, total=1, reserved=True)]
        reporter = self.restart()
        reporter.report(changed)
        self.assertEqual(
            [('PUT', '/resource_providers/%s/inventories' %
              changed[-1].rp_uuid)], self.client.writes())
        self.assertEqual(1, self.inventories(changed[-1].rp_uuid)[
            'PGPU']['reserved'])

    def test_compute_node_recreated_while_down(self):
        # nova-compute re-created its provider (new UUID): the view
        # looks it up again and reports under the new one.
        for rec in self.records:
            self.raw.delete('/resource_providers/%s' % rec.rp_uuid)
        self.raw.delete('/resource_providers/%s' % self.compute_uuid)
        self.compute_uuid = self.create_rp(COMPUTE)
        self.restart().report(self.records)
        self.assertEqual({r.rp_uuid for r in self.records},
                         set(self.children()))
        self.assertEqual(set(test_report.T4_TRAITS),
                         self.traits(self.records[0].rp_uuid))

    def test_bad_checkpoints_are_ignored(self):
        with open(self.path) as f:
            good = json.load(f)
        for text in ('{', json.dumps(dict(good, version=99)),
                     json.dumps(dict(good, entries=[1])),
                     json.dumps(dict(good, root=['x']))):
            with open(self.path, 'w') as f:
                f.write(text)
            self.restart().report(self.records)
            self.assertEqual(2 + 2 * len(self.records), len(
                self.client.log), text)
            self.assertEqual([], self.client.writes())

    def test_another_compute_node_name_is_ignored(self):
        self.create_rp('other')
        self.restart(names=('other',)).report([])
        self.assertIn(('GET', '/resource_providers?name=other'),
                      self.client.log)

    def test_an_unwritable_state_path_only_costs_reads(self):
        self.path = os.path.join(self.state, 'file', 'x.json')
        with open(os.path.join(self.state, 'file'), 'w'):
            pass
        reporter = self.restart()
        reporter.report(self.records)
        reporter.report(self.records)
        self.assertEqual([], self.client.writes())


class TestAgentRestart(test_lifecycle.ServiceTestBase):
    """The service saves its view under ``[DEFAULT] state_path``."""

    def test_restarted_service_reads_its_tree_once(self):
        sysfs_tree.many_gpus(self.root, 8)
        self.make_service().discover_and_report()
        self.assertTrue(os.path.exists(os.path.join(
            self.tmp, provider_tree.CHECKPOINT)))
        svc = self.make_service()
        svc.discover_and_report()
        self.assertEqual(1, len(svc.placement.log), svc.placement.log)
