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

"""Reporter against a real Placement (``test_report``'s fixtures): the
compute node's provider as the parent, generation conflicts, and the
Placement client's own calls."""

import socket

import fixtures
from oslo_utils import uuidutils

from accel_backend.agent.placement import report
from accel_backend.agent.placement import retry
from accel_backend.common import provider_records
from accel_backend import exception
from tests.unit.accel_backend import base
from tests.unit.accel_backend.test_report import COMPUTE
from tests.unit.accel_backend.test_report import ReporterTestBase
from tests.unit.accel_backend.test_report import T4_TRAITS


class TestComputeRP(ReporterTestBase):

    def test_missing_compute_rp(self):
        reporter = report.Reporter(self.client, ['nope', 'nope.example'])
        e = self.assertRaises(exception.ComputeNodeProviderNotFound,
                              reporter.report, self.two_t4s())
        self.assertIn('nope.example', str(e))
        self.assertEqual([], self.client.writes())

    def test_find_by_short_name_when_host_is_fqdn(self):
        self.useFixture(fixtures.MonkeyPatch(
            'socket.getfqdn', lambda name='': name))
        conf = base.make_conf(self, DEFAULT={'host': COMPUTE + '.example.org'})
        names = provider_records.compute_rp_names(conf)
        self.assertEqual([COMPUTE + '.example.org', COMPUTE], names)
        reporter = report.Reporter(self.client, names)
        self.assertEqual((self.compute_uuid, COMPUTE),
                         reporter.view.find_compute_rp())
        recs = self.two_t4s()
        reporter.report(recs)
        self.assertEqual(
            {'%s_%s' % (COMPUTE, a) for a in base.T4_ADDRESSES},
            {rp['name'] for rp in self.children().values()})

    def test_fqdn_rp_preferred_over_short(self):
        fqdn_uuid = self.create_rp(COMPUTE + '.example.org')
        self.useFixture(fixtures.MonkeyPatch(
            'socket.getfqdn', lambda name='': name))
        conf = base.make_conf(self, DEFAULT={'host': COMPUTE + '.example.org'})
        reporter = report.Reporter(self.client,
                                   provider_records.compute_rp_names(conf))
        self.assertEqual((fqdn_uuid, COMPUTE + '.example.org'),
                         reporter.view.find_compute_rp())

    def test_find_by_fqdn_when_host_is_short(self):
        fqdn_uuid = self.create_rp('node7.example.org')
        self.useFixture(fixtures.MonkeyPatch(
            'socket.getfqdn',
            lambda name='': {'node7': 'node7.example.org'}.get(name, name)))
        conf = base.make_conf(self, DEFAULT={'host': 'node7'})
        reporter = report.Reporter(self.client,
                                   provider_records.compute_rp_names(conf))
        self.assertEqual((fqdn_uuid, 'node7.example.org'),
                         reporter.view.find_compute_rp())

    def test_configured_name_only(self):
        conf = base.make_conf(
            self, DEFAULT={'host': COMPUTE},
            discovery={'resource_provider_name': 'custom-node'})
        self.assertEqual(['custom-node'],
                         provider_records.compute_rp_names(conf))

    def test_getfqdn_failure_ignored(self):
        def boom(name=''):
            raise socket.gaierror('no DNS')
        self.useFixture(fixtures.MonkeyPatch('socket.getfqdn', boom))
        conf = base.make_conf(self, DEFAULT={'host': 'a.b.c'})
        self.assertEqual(['a.b.c', 'a'],
                         provider_records.compute_rp_names(conf))


class TestGenerationConflicts(ReporterTestBase):

    def _bump_generation_before(self, suffix, times=1):
        """Before the next ``times`` PUTs to ``*suffix``, change the RP's
        traits behind the reporter's back (a concurrent writer)."""
        state = {'left': times, 'bumped': 0}

        def hook(method, url):
            if method != 'PUT' or not url.endswith(suffix) or \
                    not state['left']:
                return
            state['left'] -= 1
            rp_uuid = url.split('/')[2]
            self.set_traits(rp_uuid, self.traits(rp_uuid) |
                            {'CUSTOM_CONCURRENT_%d' % state['left']})
            state['bumped'] += 1
        self.client.before = hook
        return state

    def test_inventory_conflict_retried(self):
        state = self._bump_generation_before('/inventories')
        rec = self.record('0000:af:00.0')
        self.reporter.report([rec])
        self.assertEqual(1, state['bumped'])
        inv_puts = [c for c in self.client.log
                    if c == ('PUT', '/resource_providers/%s/inventories' %
                             rec.rp_uuid)]
        self.assertEqual(2, len(inv_puts))
        self.assertEqual(1, self.inventories(rec.rp_uuid)['PGPU']['total'])
        # Our traits win over the concurrent writer's on our own RP.
        self.assertEqual(set(T4_TRAITS), self.traits(rec.rp_uuid))

    def test_traits_conflict_retried(self):
        rec = self.record('0000:af:00.0')
        self.reporter.report([rec])
        state = self._bump_generation_before('/traits')
        self.reporter.report([self.record('0000:af:00.0',
                                          traits=('CUSTOM_NEW',))])
        self.assertEqual(1, state['bumped'])
        self.assertEqual({'CUSTOM_NEW', 'OWNER_CYBORG',
                          'CUSTOM_PCI_VENDOR_10DE',
                          'CUSTOM_PCI_PRODUCT_10DE_1EB8'},
                         self.traits(rec.rp_uuid))

    def test_endless_conflicts_give_up(self):
        self._bump_generation_before('/inventories', times=100)
        rec = self.record('0000:af:00.0')
        e = self.assertRaises(exception.PlacementError,
                              self.reporter.report, [rec])
        self.assertIn('409', str(e))
        puts = [c for c in self.client.log if c[0] == 'PUT' and
                c[1].endswith('/inventories')]
        self.assertEqual(retry.RETRIES, len(puts))
        # The next period succeeds once the other writer calms down.
        self.client.before = None
        self.reporter.report([rec])
        self.assertEqual(1, self.inventories(rec.rp_uuid)['PGPU']['total'])


class TestPlacementClient(ReporterTestBase):

    def test_unexpected_status_raises(self):
        e = self.assertRaises(exception.PlacementError, self.client.get,
                              '/resource_providers/%s' %
                              uuidutils.generate_uuid())
        self.assertIn('404', str(e))
        self.assertEqual(502, e.status)

    def test_microversion_sent(self):
        resp = self.client.get('/')
        self.assertEqual('placement 1.36',
                         resp.headers['openstack-api-version'])
