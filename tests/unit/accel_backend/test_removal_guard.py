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

"""A misconfiguration never wipes a host's devices (issue: a typo in the
sysfs root deleted every provider of the host from Placement).

Services over the recorded ``two-gpus`` tree report to a real Placement
(openstack-placement's fixture) and share one SQLite database; the second
service of each test has a broken configuration. The database and
Placement must keep both GPUs, until the operator forces the removal.
"""

import os

import fixtures
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend.agent.discovery import sysfs
from accel_backend.agent.placement import client as pclient
from accel_backend.cmd import manage
from accel_backend.cmd import runner
from accel_backend.common import removal
from accel_backend import exception
from accel_backend.objects import device as device_obj
from accel_backend import service as service_mod
from tests import placement_fixture
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_dispatch

COMPUTE = 'compute1'
AF, D8 = base.T4_ADDRESSES
TYPO_SPEC = dict(base.T4_SPEC, product_id='1eb9')


class RemovalGuardTest(placement_fixture.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.db_url = 'sqlite:///%s' % os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'accel.sqlite')
        first = self.service()
        self.raw = pclient.PlacementClient(pclient.adapter_from_conf(
            first.conf))
        self.compute_uuid = uuidutils.generate_uuid()
        self.raw.post('/resource_providers',
                      {'uuid': self.compute_uuid, 'name': COMPUTE})
        first.discover_and_report()
        self.assert_both_gpus_kept()

    def make_conf(self, sysfs_root=base.TWO_GPUS, specs=(base.T4_SPEC,)):
        return base.make_conf(
            self, sysfs_root=sysfs_root, specs=specs,
            DEFAULT={'host': COMPUTE},
            database={'connection': self.db_url},
            binding={'workers': '1'},
            placement=base.placement_opts(self.placement.endpoint),
            nova=base.NO_NOVA)

    def service(self, **kw):
        svc = service_mod.Service(self.make_conf(**kw))
        self.addCleanup(svc.stop)
        return svc

    def providers(self):
        rps = self.raw.get('/resource_providers?in_tree=%s' %
                           self.compute_uuid).json()['resource_providers']
        return sorted(rp['name'] for rp in rps
                      if rp['uuid'] != self.compute_uuid)

    def devices(self, svc):
        with svc.db.transaction() as session:
            return sorted(d.address for d in device_obj.list_(session))

    def assert_both_gpus_kept(self, svc=None):
        self.assertEqual(['%s_%s' % (COMPUTE, a) for a in (AF, D8)],
                         self.providers())
        if svc is not None:
            self.assertEqual([AF, D8], self.devices(svc))

    def test_absent_sysfs_root_is_refused(self):
        missing = os.path.join(base.TWO_GPUS, 'no-such-dir')
        self.assertRaises(exception.SysfsRootUnavailable, sysfs.scan,
                          missing)
        svc = self.service(sysfs_root=missing)
        err = self.assertRaises(exception.SysfsRootUnavailable,
                                svc.discover_and_report)
        self.assertIn(missing, str(err))
        self.assertIn('[discovery] sysfs_root', str(err))
        self.assert_both_gpus_kept(svc)

    def test_unreadable_sysfs_root_is_refused_like_an_absent_one(self):
        # Roots that exist but cannot be listed, even by root: a file (a
        # root that names one function's attribute) and a symlink whose
        # target is gone (test_sysfs covers EACCES as another user).
        tmp = self.useFixture(fixtures.TempDir()).path
        dangling = os.path.join(tmp, 'devices')
        os.symlink(os.path.join(tmp, 'gone'), dangling)
        for root in (os.path.join(base.TWO_GPUS, AF, 'vendor'), dangling):
            svc = self.service(sysfs_root=root)
            err = self.assertRaises(exception.SysfsRootUnavailable,
                                    svc.report_pass)
            self.assertIn('Cannot read the PCI devices under %s' % root,
                          str(err))
            self.assert_both_gpus_kept(svc)
            self.assertEqual(
                [('refused', 'accel.discovery.root_unavailable')],
                [(r['state'], r['code']) for r in self.status(svc)])

    def health(self, svc, status):
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        self.assertEqual(status, resp.status_int, resp.text)
        return resp.json

    def test_health_says_which_host_refuses_and_why(self):
        good = self.service()
        good.report_pass()
        self.assertEqual(['ok'], [r['state'] for r in self.status(good)])
        self.health(good, 200)
        missing = os.path.join(base.TWO_GPUS, 'no-such-dir')
        bad = self.service(sysfs_root=missing)
        self.assertRaises(exception.SysfsRootUnavailable, bad.report_pass)
        self.assert_both_gpus_kept(bad)
        # The API (either service's: one database) tells what is wrong.
        body = self.health(good, 503)
        reasons = ' '.join(body['reasons'])
        self.assertIn('host compute1: discovery refused: Cannot read the '
                      'PCI devices under %s' % missing, reasons)
        self.assertEqual(('refused', 'accel.discovery.root_unavailable'),
                         (self.status(good)[0]['state'],
                          self.status(good)[0]['code']))
        # So does the operator's command, with exit status 1.
        argv = ['--config-file', bad.conf.config_file[0], 'discovery',
                'status']
        out = self.useFixture(fixtures.StringStream('stdout'))
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
        self.assertEqual(1, manage.main(argv))
        self.assertIn('compute1\trefused', out.getDetails()[
            'stdout'].as_text())
        # Fixed: healthy again.
        good.report_pass()
        self.health(good, 200)
        self.assertEqual(0, manage.main(argv))

    def status(self, svc):
        from accel_backend.objects import host_status
        with svc.db.transaction() as session:
            return [host_status.to_dict(r)
                    for r in host_status.list_(session)]

    def test_spec_that_matches_nothing_removes_nothing(self):
        svc = self.service(specs=(TYPO_SPEC,))
        err = self.assertRaises(exception.MassRemovalRefused,
                                svc.discover_and_report)
        # One line that says what was kept and how to force it.
        self.assertIn('2 of the 2 devices of host compute1', str(err))
        self.assertIn('%s, %s' % (AF, D8), str(err))
        self.assertIn('discovery sync --force', str(err))
        self.assert_both_gpus_kept(svc)
        # The next periodic pass refuses again, still changing nothing.
        self.assertRaises(exception.MassRemovalRefused,
                          svc.discover_and_report)
        self.assert_both_gpus_kept(svc)

    def test_operator_forces_the_removal(self):
        conf = self.make_conf(specs=(TYPO_SPEC,))
        argv = ['--config-file', conf.config_file[0], 'discovery', 'sync']
        self.assertEqual(1, manage.main(argv))
        self.assert_both_gpus_kept()
        self.assertEqual(0, manage.main(argv + ['--force']))
        self.assertEqual([], self.providers())
        svc = self.service(specs=(TYPO_SPEC,))
        self.assertEqual([], self.devices(svc))

    def test_removing_up_to_the_share_goes_ahead(self):
        # One of two GPUs taken out of the spec: half, not more than half.
        svc = self.service(specs=(dict(base.T4_SPEC,
                                       address='0000:af:*'),))
        svc.discover_and_report()
        self.assertEqual(['%s_%s' % (COMPUTE, AF)], self.providers())
        self.assertEqual([AF], self.devices(svc))


class UnusableNovaConfigTest(testtools.TestCase):

    def test_service_refuses_to_start(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        conf = base.make_conf(self, discovery={
            'nova_config_file': os.path.join(tmp, 'nova.conf')})
        logger = self.useFixture(fixtures.FakeLogger())
        self.assertIsNone(runner.build_or_refuse(
            conf, service_mod.EMBEDDED, 'accel-backend'))
        self.assertIn('accel-backend refuses to start: Nova\'s [pci] '
                      'device_spec cannot be used', logger.output)

    def test_agent_refusal_is_in_the_api_health(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        db = 'sqlite:///%s' % os.path.join(tmp, 'accel.sqlite')
        groups = dict(DEFAULT={'host': 'compute7'},
                      database={'connection': db}, nova=base.NO_NOVA,
                      placement=base.placement_opts('http://p.invalid'))
        api = service_mod.Service(base.make_conf(self, **groups))
        self.addCleanup(api.stop)
        self.useFixture(fixtures.FakeLogger())
        # The agent records its refusal through the conductor.
        transport = test_dispatch.fake_transport(self)
        conductor = service_mod.Service(
            base.make_conf(self, audit={'interval': 0}, **groups),
            role=service_mod.CONDUCTOR, transport=transport)
        self.addCleanup(conductor.stop)
        conductor.start()
        del groups['database']
        agent_conf = base.make_conf(self, discovery={
            'nova_config_file': os.path.join(tmp, 'nova.conf')}, **groups)
        self.assertIsNone(runner.build_or_refuse(
            agent_conf, service_mod.AGENT, 'accel-backend-agent',
            transport=transport))
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(api.app)
        self.assertEqual(503, resp.status_int)
        self.assertIn('host compute7: discovery refused: Nova\'s [pci] '
                      'device_spec cannot be used',
                      ' '.join(resp.json['reasons']))


class RemovalRuleTest(testtools.TestCase):

    def test_share(self):
        removal.check('h', 'devices', 4, ['a', 'b'], 0.5)
        self.assertRaises(exception.MassRemovalRefused, removal.check,
                          'h', 'devices', 4, ['a', 'b', 'c'], 0.5)
        removal.check('h', 'devices', 4, ['a', 'b', 'c'], 0.5, force=True)
        removal.check('h', 'devices', 1, ['a'], 1.0)
        self.assertRaises(exception.MassRemovalRefused, removal.check,
                          'h', 'devices', 1, ['a'], 0.0)
        removal.check('h', 'devices', 0, [], 0.0)
