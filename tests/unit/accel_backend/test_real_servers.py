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

"""Device layouts of real servers, end to end: a ``Service`` discovers a
copy of a recorded tree (``real_servers``) and reports to a real
Placement (openstack-placement's fixture); the tests assert what Placement
holds afterwards (providers, inventories, traits, allocation candidates)
and how many writes it took."""

import collections
import os

import fixtures
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend.cmd import runner
from accel_backend import service as service_mod
from tests.unit.accel_backend import base
from tests.unit.accel_backend import real_servers
from tests.unit.accel_backend import test_lifecycle

COMPUTE = test_lifecycle.COMPUTE
rp_uuid = test_lifecycle.rp_uuid


def tree(name):
    return os.path.join(base.FIXTURES, name)


class RealServerTest(test_lifecycle.ServiceTestBase):
    """Services over copies of the recorded real-server trees."""

    def report(self, **kw):
        svc = self.make_service(self.make_conf(**kw))
        svc.discover_and_report()
        return svc

    def providers(self):
        """``{name without the host prefix: rp}`` of the host's children."""
        rps = self.raw.get('/resource_providers?in_tree=%s' %
                           self.compute_uuid).json()['resource_providers']
        return {rp['name'][len(COMPUTE) + 1:]: rp for rp in rps
                if rp['uuid'] != self.compute_uuid}

    def traits(self, rp):
        return set(self.raw.get('/resource_providers/%s/traits' % rp
                                ).json()['traits'])

    def inv(self, name, rc):
        """``(total, reserved, max_unit)`` of a provider's inventory, or
        None when it has none of ``rc``."""
        inv = self.inventory(self.providers()[name]['uuid']).get(rc)
        return inv and (inv['total'], inv['reserved'], inv['max_unit'])

    def candidates(self, query):
        """Names of the providers the allocation candidates of
        ``query`` would take from."""
        body = self.raw.get('/allocation_candidates?%s' % query).json()
        names = {rp['uuid']: n for n, rp in self.providers().items()}
        return sorted({names[u] for ar in body['allocation_requests']
                       for u in ar['allocations']})

    def allocate(self, name, rc, amount=1):
        consumer = uuidutils.generate_uuid()
        self.raw.put('/allocations/%s' % consumer, {
            'allocations': {self.providers()[name]['uuid']: {
                'resources': {rc: amount}}},
            'project_id': uuidutils.generate_uuid(),
            'user_id': uuidutils.generate_uuid(),
            'consumer_generation': None})
        return consumer

    def writes(self, svc):
        """Writes of the service's reporter since the last call."""
        done = svc.placement.writes()
        svc.placement.log.clear()
        return done

    def write_kinds(self, svc):
        """``writes(svc)`` counted by kind: ``create`` (a provider),
        ``inventory`` and ``traits`` (of a provider), ``new trait`` (a
        custom trait Placement did not know yet)."""
        kinds = collections.Counter()
        for method, url in self.writes(svc):
            kind = ('create' if url == '/resource_providers' else
                    'inventory' if url.endswith('/inventories') else
                    'traits' if url.endswith('/traits') else
                    'new trait' if url.startswith('/traits/') else
                    '%s %s' % (method, url))
            kinds[kind] += 1
        return dict(kinds)


class TestTreesAreRecorded(testtools.TestCase):

    def test_committed_trees_match_their_writer(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        for name in real_servers.TREES:
            fresh = os.path.join(tmp, name)
            real_servers.write(name, fresh)
            self.assertEqual(self.snapshot(fresh), self.snapshot(tree(name)),
                             name)

    @staticmethod
    def snapshot(root):
        """``{relative path: file text or link target}`` (links are not
        followed: ``physfn``/``virtfn*`` make cycles)."""
        found = {}
        for dirpath, dirnames, filenames in os.walk(root):
            for entry in dirnames + filenames:
                path = os.path.join(dirpath, entry)
                rel = os.path.relpath(path, root)
                if os.path.islink(path):
                    found[rel] = '-> ' + os.readlink(path)
                elif os.path.isfile(path):
                    with open(path) as f:
                        found[rel] = f.read()
        return found


class TestTwoGPUsBehindOneSwitch(RealServerTest):

    TREE = tree('switch-group')

    def test_one_device_per_group(self):
        svc = self.report()
        self.assertEqual(['0000:19:00.0', '0000:af:00.0'],
                         sorted(self.providers()))
        self.assertEqual((1, 0, 1), self.inv('0000:19:00.0', 'PGPU'))
        self.assertIn('Device 0000:1a:00.0 shares IOMMU group 40 with '
                      'device 0000:19:00.0', self.logger.output)
        # Both offered devices have a group of their own.
        self.assertEqual(['0000:19:00.0', '0000:af:00.0'], self.candidates(
            'resources=PGPU:1'))
        for name, numa in (('0000:19:00.0', 0), ('0000:af:00.0', 1)):
            self.assertEqual(
                {'OWNER_CYBORG', 'CUSTOM_NVIDIA_T4',
                 'CUSTOM_PCI_VENDOR_10DE', 'CUSTOM_PCI_PRODUCT_10DE_1EB8',
                 'CUSTOM_NUMA_NODE_%d' % numa},
                self.traits(self.providers()[name]['uuid']))
        # Per provider: create, inventory, traits; the 5 custom traits
        # once (NUMA nodes 0 and 1).
        self.assertEqual({'create': 2, 'inventory': 2, 'traits': 2,
                          'new trait': 5}, self.write_kinds(svc))
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))

    def test_the_device_a_guest_holds_stays_reported(self):
        # 0000:19:00.0 on no driver (back from a surprise removal) while a
        # guest holds its group sibling 0000:1a:00.0 (on vfio-pci): the
        # device under the guest stays the group's reported one, not the
        # lowest address.
        os.remove(os.path.join(self.root, '0000:19:00.0', 'driver'))
        self.report()
        self.assertEqual(['0000:1a:00.0', '0000:af:00.0'],
                         sorted(self.providers()))


class TestQATVirtualFunctions(RealServerTest):

    TREE = tree('qat-vfs')
    DRIVERS = 'generic_pci'
    QAT = {'vendor_id': '8086', 'resource_class': 'CUSTOM_QAT',
           'device_type': 'QAT', 'traits': ['CUSTOM_QAT_C62X']}

    def spec(self, **kw):
        return base.json.dumps(dict(self.QAT, **kw))

    def test_vf_product_id_opts_in(self):
        svc = self.report(device_spec=[self.spec(product_id='37c9')])
        vfs = ['0000:3d:01.%d' % i for i in range(4)]
        self.assertEqual(vfs, sorted(self.providers()))
        for vf in vfs:
            self.assertEqual((1, 0, 1), self.inv(vf, 'CUSTOM_QAT'))
            self.assertEqual(
                {'OWNER_CYBORG', 'CUSTOM_QAT_C62X', 'CUSTOM_PCI_VF',
                 'CUSTOM_PCI_VENDOR_8086', 'CUSTOM_PCI_PRODUCT_8086_37C9',
                 'CUSTOM_NUMA_NODE_0'},
                self.traits(self.providers()[vf]['uuid']))
        self.assertEqual(vfs, self.candidates(
            'resources=CUSTOM_QAT:1&required=CUSTOM_PCI_VF'))
        self.writes(svc)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))

    def test_pf_with_reported_vfs_is_withheld(self):
        self.report(device_spec=[self.spec(product_id='37c9'),
                                 self.spec(product_id='37c8')])
        # 0000:3d:00.0 gives its VFs; 0000:3f:00.0 has none enabled.
        self.assertEqual(['0000:3d:01.0', '0000:3d:01.1', '0000:3d:01.2',
                          '0000:3d:01.3', '0000:3f:00.0'],
                         sorted(self.providers()))
        self.assertNotIn('CUSTOM_PCI_VF', self.traits(
            self.providers()['0000:3f:00.0']['uuid']))

    def test_pf_with_vfs_enabled_never_whole(self):
        # 0000:3d:00.0 has 4 VFs enabled, none of them asked for.
        self.report(device_spec=[self.spec(product_id='37c8', vf=False)])
        self.assertEqual(['0000:3f:00.0'], sorted(self.providers()))


class TestSameIdVFsByFlag(RealServerTest):
    """A100 VFs carry the PF's product id: only ``"vf": true`` asks."""

    TREE = base.SRIOV_GPU
    DRIVERS = 'generic_pci'
    A100 = {'vendor_id': '10de', 'product_id': '20b5'}

    def test_flag(self):
        self.report(device_spec=[base.json.dumps(dict(self.A100, vf=True))])
        self.assertEqual(['0000:81:00.4', '0000:81:00.5'],
                         sorted(self.providers()))

    def test_pf_with_vfs_is_never_whole(self):
        self.report(device_spec=[base.json.dumps(self.A100)])
        self.assertEqual([], sorted(self.providers()))


class TestFPGAManagementAndUserFunctions(RealServerTest):

    TREE = tree('fpga-pairs')
    DRIVERS = 'fpga'

    def test_only_user_functions(self):
        svc = self.report()
        self.assertEqual(['0000:3b:00.1', '0000:b2:00.1', '0000:b2:00.2',
                          '0000:d8:00.1'], sorted(self.providers()))
        for name in self.providers():
            self.assertEqual((1, 0, 1), self.inv(name, 'FPGA'))
        self.assertIn('CUSTOM_PCI_VF', self.traits(
            self.providers()['0000:b2:00.1']['uuid']))
        self.assertNotIn('CUSTOM_PCI_VF', self.traits(
            self.providers()['0000:3b:00.1']['uuid']))
        self.assertIn('U250', self.device_view(svc, '0000:3b:00.1')['model'])
        self.assertIn('N3000',
                      self.device_view(svc, '0000:b2:00.1')['model'])
        # Per provider: create, inventory, traits; 10 custom traits once
        # (vendors, products, NUMA nodes, FPGA_XILINX/INTEL, PCI_VF).
        self.assertEqual({'create': 4, 'inventory': 4, 'traits': 4,
                          'new trait': 10}, self.write_kinds(svc))
        svc.discover_and_report()
        self.assertEqual({}, self.write_kinds(svc))

    def test_management_functions_on_request(self):
        self.report(fpga_management_functions='true')
        self.assertEqual(['0000:3b:00.0', '0000:3b:00.1', '0000:b2:00.0',
                          '0000:b2:00.1', '0000:b2:00.2', '0000:d8:00.0',
                          '0000:d8:00.1'], sorted(self.providers()))


class TestNoIOMMU(RealServerTest):
    """A host whose IOMMU is off: the recorded ``gpu-server`` tree with
    every ``iommu_group`` link removed, which is what Linux shows when no
    IOMMU is enabled (no ``/sys/kernel/iommu_groups`` entries).  vfio-pci
    cannot assign such a function: it is unhealthy, held back, and the
    host's discovery is degraded with the reason."""

    GPU = '0000:17:00.0'

    def setUp(self):
        super().setUp()
        for name in os.listdir(self.root):
            link = os.path.join(self.root, name, 'iommu_group')
            if os.path.lexists(link):
                os.unlink(link)

    def test_devices_unhealthy_not_offered_and_host_degraded(self):
        svc = self.make_service()
        svc.report_pass()
        # Reported, fully reserved: the scheduler finds no GPU.
        self.assertEqual((1, 1), self.reserved(self.GPU))
        self.assertEqual([], self.candidates('resources=PGPU:1'))
        dev = self.call(svc, '/v2/devices/%s' % test_lifecycle.device_uuid(
            self.GPU)).json
        self.assertEqual('unhealthy', dev['status'])
        self.assertIn('no IOMMU group', dev['status_reason'])
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        self.assertEqual(503, resp.status_int)
        reasons = ' '.join(resp.json['reasons'])
        self.assertIn('host compute1: discovery degraded: 0000:17:00.0',
                      reasons)
        self.assertIn('the IOMMU is off', reasons)


class TestNovaConfigFailsClosed(RealServerTest):
    """Nova's ``[pci] device_spec`` on a server: a line that does not
    parse withholds the devices of the ids it names and the health check
    says so; a nova.conf that cannot be read changes nothing."""

    TREE = tree('fpga-pairs')
    DRIVERS = 'fpga'
    U250 = '0000:3b:00.1'
    OTHERS = ['0000:b2:00.1', '0000:b2:00.2', '0000:d8:00.1']
    # No function 9: nova-compute refuses to start with this line.
    BAD = ('{"vendor_id": "10ee", "product_id": "5005", '
           '"address": "0000:3b:00.9"}')

    def health(self, svc):
        """``(status, reasons)`` of the service's ``/healthcheck``."""
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        return resp.status_int, ' '.join(resp.json['reasons'])

    def test_malformed_line_withholds_the_device_it_names(self):
        svc = self.make_service(self.make_conf(
            nova_pci_device_spec=[self.BAD]))
        svc.report_pass()
        self.assertEqual(self.OTHERS, sorted(self.providers()))
        self.assertEqual(self.OTHERS, self.candidates('resources=FPGA:1'))
        self.assertEqual(1, self.logger.output.count(
            'Cannot parse Nova [pci] device_spec %s' % self.BAD))
        status, reasons = self.health(svc)
        self.assertEqual(503, status)
        self.assertIn('host compute1: discovery degraded: Cannot parse '
                      'Nova [pci] device_spec %s' % self.BAD, reasons)
        self.assertIn('every device 10ee:5005 is left to Nova', reasons)
        # The line fixed: the U250 is offered, the host healthy again.
        fixed = self.make_service(self.make_conf(nova_pci_device_spec=[
            self.BAD.replace('3b:00.9', '3b:00.0')]))
        fixed.report_pass()
        self.assertEqual([self.U250] + self.OTHERS, sorted(self.providers()))
        self.assertEqual(200, self.health(fixed)[0])

    def test_unreadable_nova_conf_reports_and_removes_nothing(self):
        svc = self.make_service()
        svc.report_pass()
        before = sorted(self.providers())
        self.assertEqual([self.U250] + self.OTHERS, before)
        self.writes(svc)
        # Absent, and a directory: unreadable as a file even for root
        # (a chmod 000 file does not stop root).
        for path in (os.path.join(self.tmp, 'nova.conf'), self.tmp):
            conf = self.make_conf(nova_config_file=path)
            self.assertIsNone(runner.build_or_refuse(
                conf, service_mod.EMBEDDED, 'accel-backend'))
            self.assertEqual(before, sorted(self.providers()))
            status, reasons = self.health(svc)
            self.assertEqual(503, status)
            self.assertIn('host compute1: discovery refused: Nova\'s [pci] '
                          'device_spec cannot be used', reasons)
            self.assertIn(path, reasons)
        self.assertEqual([], self.writes(svc))
