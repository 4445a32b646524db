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

"""Reporter against a real Placement (openstack-placement's fixture).

Placement runs in-process (wsgi-intercept at the fixture's ``endpoint``)
on its in-memory database; accel_backend talks to it through the same
keystoneauth adapter it builds from its config (``auth_type =
admin_token``, noauth2 token ``admin``).
"""

import fixtures
from oslo_utils import uuidutils

from accel_backend.agent.placement import client as pclient
from accel_backend.agent.placement import report
from accel_backend.common import ids
from accel_backend.common import provider_records
from accel_backend import exception
from tests import placement_fixture
from tests.unit.accel_backend import base

COMPUTE = 'compute1'
WRITES = ('PUT', 'POST', 'DELETE')
T4_TRAITS = ('CUSTOM_NVIDIA_T4', 'CUSTOM_PCI_VENDOR_10DE',
             'CUSTOM_PCI_PRODUCT_10DE_1EB8', 'OWNER_CYBORG')


class RecordingClient(pclient.PlacementClient):
    """PlacementClient that records ``(method, url)`` of every call and
    can run a hook before a call goes out."""

    def __init__(self, adapter):
        super().__init__(adapter)
        self.log = []
        self.before = None

    def _request(self, method, url, ok=(200,), json=None):
        if self.before is not None:
            self.before(method, url)
        self.log.append((method, url))
        return super()._request(method, url, ok=ok, json=json)

    def writes(self):
        return [c for c in self.log if c[0] in WRITES]


class ReporterTestBase(placement_fixture.PlacementTestCase):

    def setUp(self):
        super().setUp()
        # Plugin options (token, endpoint) exist only once keystoneauth
        # loads the plugin, so they come from a config file as in service.
        self.conf = base.make_conf(
            self, DEFAULT={'host': COMPUTE},
            placement={'auth_type': 'admin_token', 'token': 'admin',
                       'endpoint': self.placement.endpoint,
                       'endpoint_override': self.placement.endpoint})
        conf = self.conf
        self.adapter = pclient.adapter_from_conf(conf)
        # The test's own view of Placement: never counted.
        self.raw = pclient.PlacementClient(self.adapter)
        self.client = RecordingClient(self.adapter)
        self.compute_uuid = self.create_rp(COMPUTE)
        self.reporter = report.Reporter(self.client, [COMPUTE])

    # -- Placement helpers (uncounted) -----------------------------------

    def create_rp(self, name, parent=None, rp_uuid=None):
        rp_uuid = rp_uuid or uuidutils.generate_uuid()
        body = {'uuid': rp_uuid, 'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        self.raw.post('/resource_providers', body)
        return rp_uuid

    def rp(self, rp_uuid):
        return self.raw.get('/resource_providers/%s' % rp_uuid).json()

    def rp_exists(self, rp_uuid):
        return self.raw.get('/resource_providers/%s' % rp_uuid,
                            ok=(200, 404)).status_code == 200

    def traits(self, rp_uuid):
        return set(self.raw.get('/resource_providers/%s/traits' % rp_uuid
                                ).json()['traits'])

    def set_traits(self, rp_uuid, traits):
        for t in traits:
            if t.startswith('CUSTOM_'):
                self.raw.put('/traits/%s' % t)
        gen = self.rp(rp_uuid)['generation']
        self.raw.put('/resource_providers/%s/traits' % rp_uuid,
                     {'resource_provider_generation': gen,
                      'traits': sorted(traits)})

    def inventories(self, rp_uuid):
        return self.raw.get('/resource_providers/%s/inventories' % rp_uuid
                            ).json()['inventories']

    def children(self):
        rps = self.raw.get('/resource_providers?in_tree=%s' %
                           self.compute_uuid).json()['resource_providers']
        return {rp['uuid']: rp for rp in rps if rp['uuid'] !=
                self.compute_uuid}

    def allocate(self, rp_uuid, rc='PGPU', amount=1):
        consumer = uuidutils.generate_uuid()
        self.raw.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid: {'resources': {rc: amount}}},
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid(),
            'consumer_generation': None})
        return consumer

    # -- what accel_backend would report ---------------------------------

    @staticmethod
    def record(address, traits=('CUSTOM_NVIDIA_T4',), rc='PGPU', total=1,
               reserved=False, host=COMPUTE):
        traits = set(traits) | {'OWNER_CYBORG', 'CUSTOM_PCI_VENDOR_10DE',
                                'CUSTOM_PCI_PRODUCT_10DE_1EB8'}
        return provider_records.ProviderRecord(
            rp_uuid=ids.stable_uuid('rp', host, address),
            address=address, resource_class=rc, total=total,
            traits=tuple(sorted(traits)), reserved=reserved)

    def two_t4s(self, **kw):
        return [self.record(a, **kw) for a in base.T4_ADDRESSES]


class TestReport(ReporterTestBase):

    def test_creates_children_of_compute_rp(self):
        records = self.two_t4s()
        self.assertEqual((self.compute_uuid, COMPUTE),
                         self.reporter.report(records))
        kids = self.children()
        self.assertEqual({r.rp_uuid for r in records}, set(kids))
        for rec in records:
            rp = kids[rec.rp_uuid]
            self.assertEqual('%s_%s' % (COMPUTE, rec.address), rp['name'])
            self.assertEqual(self.compute_uuid, rp['parent_provider_uuid'])
            self.assertEqual(self.compute_uuid, rp['root_provider_uuid'])
            self.assertEqual({'PGPU': {
                'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
                'step_size': 1, 'allocation_ratio': 1.0}},
                self.inventories(rec.rp_uuid))
            self.assertEqual(set(T4_TRAITS), self.traits(rec.rp_uuid))
        # The compute node RP itself is untouched.
        self.assertEqual(0, self.rp(self.compute_uuid)['generation'])
        self.assertEqual(set(), self.traits(self.compute_uuid))

    def test_owner_trait_added_even_if_record_lacks_it(self):
        rec = self.record('0000:af:00.0')._replace(traits=('CUSTOM_X',))
        self.reporter.report([rec])
        self.assertEqual({'CUSTOM_X', 'OWNER_CYBORG'},
                         self.traits(rec.rp_uuid))

    def test_second_report_without_change_writes_nothing(self):
        records = self.two_t4s()
        self.reporter.report(records)
        self.assertNotEqual([], self.client.writes())
        gens = {u: rp['generation'] for u, rp in self.children().items()}
        del self.client.log[:]
        calls = self.client.calls
        self.reporter.report(records)
        self.assertEqual([], self.client.writes())
        self.assertGreater(self.client.calls, calls)
        self.assertEqual(gens, {u: rp['generation']
                                for u, rp in self.children().items()})

    def test_custom_resource_class(self):
        rec = self.record('0000:af:00.0', rc='CUSTOM_GPU_T4')
        self.reporter.report([rec])
        self.assertEqual(['CUSTOM_GPU_T4'],
                         list(self.inventories(rec.rp_uuid)))
        self.assertIn(('PUT', '/resource_classes/CUSTOM_GPU_T4'),
                      self.client.log)
        # Changing the class replaces the inventory.
        self.reporter.report([rec._replace(resource_class='PGPU')])
        self.assertEqual(['PGPU'], list(self.inventories(rec.rp_uuid)))

    def test_reserved_when_disabled_or_missing(self):
        rec = self.record('0000:af:00.0')
        self.reporter.report([rec])
        self.reporter.report([rec._replace(reserved=True)])
        self.assertEqual(1, self.inventories(rec.rp_uuid)['PGPU']['reserved'])
        self.reporter.report([rec])
        self.assertEqual(0, self.inventories(rec.rp_uuid)['PGPU']['reserved'])

    def test_total_follows_accelerator_count(self):
        rec = self.record('0000:af:00.0', total=4)
        self.reporter.report([rec])
        inv = self.inventories(rec.rp_uuid)['PGPU']
        self.assertEqual((4, 4), (inv['total'], inv['max_unit']))

    def test_trait_removed_from_spec_is_removed_from_rp(self):
        rec = self.record('0000:af:00.0',
                          traits=('CUSTOM_NVIDIA_T4', 'CUSTOM_OLD'))
        self.reporter.report([rec])
        self.assertIn('CUSTOM_OLD', self.traits(rec.rp_uuid))
        self.reporter.report([self.record('0000:af:00.0')])
        self.assertEqual(set(T4_TRAITS), self.traits(rec.rp_uuid))

    def test_foreign_trait_on_our_rp_is_reset(self):
        rec = self.record('0000:af:00.0')
        self.reporter.report([rec])
        self.set_traits(rec.rp_uuid, set(T4_TRAITS) | {'CUSTOM_STRAY'})
        self.reporter.report([rec])
        self.assertEqual(set(T4_TRAITS), self.traits(rec.rp_uuid))

    def test_rp_recreated_when_deleted_behind_our_back(self):
        rec = self.record('0000:af:00.0')
        self.reporter.report([rec])
        self.raw.delete('/resource_providers/%s' % rec.rp_uuid)
        self.reporter.report([rec])
        self.assertEqual(set(T4_TRAITS), self.traits(rec.rp_uuid))
        self.assertEqual(1, self.inventories(rec.rp_uuid)['PGPU']['total'])

    def test_vanished_device_rp_deleted(self):
        af, d8 = self.two_t4s()
        self.reporter.report([af, d8])
        del self.client.log[:]
        self.reporter.report([af])
        self.assertEqual({af.rp_uuid}, set(self.children()))
        self.assertIn(('DELETE', '/resource_providers/%s' % d8.rp_uuid),
                      self.client.log)
        self.reporter.report([])
        self.assertEqual({}, self.children())
        self.assertTrue(self.rp_exists(self.compute_uuid))

    def test_mass_removal_of_providers_is_refused(self):
        # The reporter's own guard (the database's is in
        # test_removal_guard): more than the share, nothing is deleted.
        reporter = report.Reporter(self.client, [COMPUTE],
                                   max_removal_share=0.5)
        af, d8 = self.two_t4s()
        reporter.report([af, d8])
        del self.client.log[:]
        err = self.assertRaises(exception.MassRemovalRefused,
                                reporter.report, [])
        self.assertIn('2 of the 2 resource providers', str(err))
        self.assertEqual({af.rp_uuid, d8.rp_uuid}, set(self.children()))
        self.assertEqual([], [c for c in self.client.log
                              if c[0] == 'DELETE'])
        reporter.report([af])   # half: allowed
        self.assertEqual({af.rp_uuid}, set(self.children()))
        reporter.report([], force=True)
        self.assertEqual({}, self.children())

    def test_vanished_device_with_allocations_kept(self):
        af, d8 = self.two_t4s()
        self.reporter.report([af, d8])
        self.allocate(d8.rp_uuid)
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.agent.placement.report'))
        self.reporter.report([af])  # no exception
        self.assertTrue(self.rp_exists(d8.rp_uuid))
        self.assertIn(d8.rp_uuid, logger.output)
        self.assertIn('allocations', logger.output)
        # Again next period: still no exception, still there.
        self.reporter.report([af])
        self.assertTrue(self.rp_exists(d8.rp_uuid))
        # Once the allocation is gone, the provider goes.
        usages = self.raw.get('/resource_providers/%s/allocations' %
                              d8.rp_uuid).json()['allocations']
        for consumer in usages:
            self.raw.delete('/allocations/%s' % consumer)
        self.reporter.report([af])
        self.assertFalse(self.rp_exists(d8.rp_uuid))

    def test_other_owners_rps_never_touched(self):
        # Nova's own child providers (e.g. mdev/VGPU RPs are named
        # <node>_pci_<addr>) and any RP without OWNER_CYBORG, even one
        # named like ours, stay as they are.
        nova_rp = self.create_rp('%s_pci_0000_af_00_0' % COMPUTE,
                                 parent=self.compute_uuid)
        self.raw.put('/resource_providers/%s/inventories' % nova_rp, {
            'resource_provider_generation': 0,
            'inventories': {'VGPU': {'total': 4}}})
        self.set_traits(nova_rp, {'CUSTOM_NOVA_THING'})
        lookalike = self.create_rp('%s_0000:3b:00.0' % COMPUTE,
                                   parent=self.compute_uuid)
        self.set_traits(lookalike, {'CUSTOM_SOMEONE_ELSE'})
        before = {u: (rp['generation'], rp['name'])
                  for u, rp in self.children().items()}

        self.reporter.report(self.two_t4s())
        self.reporter.report([])

        after = self.children()
        for u in (nova_rp, lookalike):
            self.assertEqual(before[u], (after[u]['generation'],
                                         after[u]['name']))
        self.assertEqual({'CUSTOM_NOVA_THING'}, self.traits(nova_rp))
        self.assertEqual({'CUSTOM_SOMEONE_ELSE'}, self.traits(lookalike))
        self.assertEqual({'VGPU'}, set(self.inventories(nova_rp)))
        self.assertEqual({nova_rp, lookalike}, set(after))
        for method, url in self.client.writes():
            self.assertNotIn(nova_rp, url)
            self.assertNotIn(lookalike, url)

    def test_rp_with_our_name_but_foreign_uuid_untouched(self):
        # Someone else holds the name one of our providers would get: we
        # must not take it over, and the other devices are still reported.
        other = self.create_rp('%s_0000:af:00.0' % COMPUTE,
                               parent=self.compute_uuid)
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.agent.placement.report'))
        af, d8 = self.two_t4s()
        self.reporter.report([af, d8])
        self.assertIn('0000:af:00.0', logger.output)
        self.assertEqual({other, d8.rp_uuid}, set(self.children()))
        self.assertEqual(0, self.rp(other)['generation'])
        self.assertEqual(set(), self.traits(other))
        self.assertEqual({}, self.inventories(other))
        self.assertEqual(set(T4_TRAITS), self.traits(d8.rp_uuid))
        # Once the name is free, the device gets its provider.
        self.raw.delete('/resource_providers/%s' % other)
        self.reporter.report([af, d8])
        self.assertEqual({af.rp_uuid, d8.rp_uuid}, set(self.children()))

    def test_rps_of_another_compute_node_untouched(self):
        other_root = self.create_rp('compute2')
        other_rec = self.record('0000:af:00.0', host='compute2')
        report.Reporter(self.raw, ['compute2']).report([other_rec])
        self.reporter.report(self.two_t4s())
        self.reporter.report([])
        self.assertTrue(self.rp_exists(other_rec.rp_uuid))
        self.assertEqual(other_root,
                         self.rp(other_rec.rp_uuid)['parent_provider_uuid'])
