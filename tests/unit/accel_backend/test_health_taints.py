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

"""Health faults as automatic taints (``conductor.health_taints``, issue
53 item 1): a ``Service`` over copies of recorded sysfs trees
(``gpu-server``, one provider per GPU; the HGX tree of ``test_pooled``
for pools) reporting to a real Placement, read through the API at
microversion 2.5 and through a real scrape of ``/metrics``."""

import os
import shutil

import testtools
import webob

from accel_backend.common import aer
from accel_backend.common import discovered
from accel_backend.conductor import health_taints
from accel_common import taints
from tests.unit.accel_backend import audit_fixtures
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_metrics
from tests.unit.accel_backend import test_pooled
from tests.unit.accel_backend import test_taints

GPU = test_lifecycle.GPU
BAD = '0000:ca:00.0'
V25 = test_taints.V25


def health_taints_of(test, svc, rp_uuid):
    """``[(function, effect, reason, set_by, uuid)]`` of the health
    taints in ``GET /v2/deployables`` (2.5) of the deployable of
    ``rp_uuid``."""
    (dep,) = [d for d in test.call(svc, '/v2/deployables', V25).json[
        'deployables'] if d['rp_uuid'] == rp_uuid]
    return [(t['function'], t['effect'], t['reason'], t['set_by'],
             t['uuid']) for t in dep['taints']
            if t['key'] == health_taints.HEALTH_KEY], dep


class TestEffect(testtools.TestCase):
    """The effect of each verdict (no service)."""

    def test_effects(self):
        board = {aer.TOTAL: 3}
        new = aer.verdict({aer.TOTAL: 1}, board, 2)
        self.assertEqual(taints.NO_EXECUTE, health_taints.effect_of(
            discovered.UNHEALTHY, new))
        recovering = aer.verdict(board, {aer.TOTAL: 3}, 2)
        self.assertTrue(aer.is_recovering(recovering))
        self.assertFalse(aer.is_recovering(new))
        self.assertEqual(taints.NO_SCHEDULE, health_taints.effect_of(
            discovered.UNHEALTHY, recovering))
        self.assertEqual(taints.NO_EXECUTE, health_taints.effect_of(
            discovered.UNHEALTHY, 'iommu_group link missing'))
        self.assertIsNone(health_taints.effect_of(discovered.HEALTHY, None))


class TestDeviceHealthTaints(test_lifecycle.ServiceTestBase):

    def setUp(self):
        super().setUp()
        # Nova's external events API (wsgi-intercept), for the bind.
        self.nova = audit_fixtures.NovaServers()
        self.NOVA_OPTS = audit_fixtures.intercept_nova(self, self.nova)

    def make_conf(self, cleaning=None, groups=None, **discovery):
        groups = dict({'metrics': test_metrics.MetricsTest.METRICS,
                       'healthcheck': {'detailed': 'true'}},
                      **(groups or {}))
        return super().make_conf(cleaning=cleaning, groups=groups,
                                 **discovery)

    def health(self, svc):
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        return resp.json['reasons']

    def test_aer_fault_recovery_and_return(self):
        svc = self.make_service(self.make_conf(aer_recovery_passes='2'))
        svc.metrics.start()
        self.addCleanup(svc.metrics.stop)
        svc.discover_and_report()
        rp = test_lifecycle.rp_uuid(BAD)
        self.assertEqual([], health_taints_of(self, svc, rp)[0])
        with open(os.path.join(self.root, BAD, 'aer_dev_fatal'), 'w') as f:
            f.write(sysfs_tree.aer_fatal_text(1))
        svc.discover_and_report()
        (taint,), dep = health_taints_of(self, svc, rp)
        self.assertEqual((None, 'NoExecute', health_taints.SET_BY),
                         (taint[0], taint[1], taint[3]))
        self.assertIn('1 new fatal PCIe AER', taint[2])
        # The same record in the taint list, and in the gauge.
        listed = self.call(svc, '/v2/deployables/%s/taints' % dep['uuid'],
                           V25).json['taints']
        self.assertEqual([taint[4]], [t['uuid'] for t in listed])
        samples = test_metrics.scrape(svc.metrics.port)
        self.assertEqual(1, test_metrics.value(
            samples, 'accel_device_taints', host=test_lifecycle.COMPUTE,
            key=health_taints.HEALTH_KEY, effect='NoExecute'))
        # ... and in /healthcheck (accel_devices, always available).
        (found,) = [r for r in self.health(svc)
                    if r['reason'].startswith('devices:')]
        self.assertEqual('devices: 1 NoExecute, 0 NoSchedule taints',
                         found['reason'])
        self.assertEqual([(test_lifecycle.COMPUTE, dep['name'],
                           health_taints.HEALTH_KEY, health_taints.SET_BY)],
                         [(d['host'], d['deployable'], d['key'],
                           d['set_by']) for d in found['details']])
        # Reserved in Placement as before (the device's health).
        self.assertEqual((1, 1), self.reserved(BAD))
        # Removed by hand while the fault lasts: the next pass sets it.
        self.call(svc, '/v2/deployables/%s/taints/%s' % (
            dep['uuid'], taint[4]), V25, 'DELETE', 204)
        self.assertEqual([], health_taints_of(self, svc, rp)[0])
        # One pass without a new error: recovering, NoSchedule.
        svc.discover_and_report()
        (again,), _ = health_taints_of(self, svc, rp)
        self.assertEqual('NoSchedule', again[1])
        self.assertIn('recovering: 1 of 2', again[2])
        samples = test_metrics.scrape(svc.metrics.port)
        self.assertEqual((0, 1), tuple(test_metrics.value(
            samples, 'accel_device_taints', host=test_lifecycle.COMPUTE,
            key=health_taints.HEALTH_KEY, effect=effect)
            for effect in ('NoExecute', 'NoSchedule')))
        # Healthy: the taint goes in the same pass; GPU never had one.
        svc.discover_and_report()
        self.assertEqual([], health_taints_of(self, svc, rp)[0])
        self.assertEqual([], health_taints_of(
            self, svc, test_lifecycle.rp_uuid(GPU))[0])
        self.assertEqual((0, 1), self.reserved(BAD))

    def test_device_gone_under_its_guest_is_no_execute(self):
        svc = self.make_service()
        svc.discover_and_report()
        _, state = self.bind(svc, GPU)
        self.assertEqual('Bound', state)
        shutil.rmtree(os.path.join(self.root, GPU))
        svc.discover_and_report()
        (taint,), _ = health_taints_of(self, svc, test_lifecycle.rp_uuid(GPU))
        self.assertEqual(('NoExecute', health_taints.MISSING_REASON),
                         (taint[1], taint[2]))
        self.assertEqual('missing', self.device_view(svc, GPU)['status'])


class TestPoolMemberHealthTaint(test_pooled.PooledTest):

    def test_unhealthy_member_taints_its_function(self):
        svc = self.service()
        member = '0000:2a:00.0'
        group = os.path.join(self.root, member, 'iommu_group')
        link = os.readlink(group)
        os.unlink(group)
        svc.discover_and_report()
        rp = self.providers()[test_pooled.POOL0]['uuid']
        (taint,), _ = health_taints_of(self, svc, rp)
        self.assertEqual((member, 'NoExecute', health_taints.SET_BY),
                         (taint[0], taint[1], taint[3]))
        # One unit reserved, as before: the taint adds no second one.
        self.assertEqual((4, 1, 4), self.inv(test_pooled.POOL0))
        self.assertEqual([], health_taints_of(
            self, svc, self.providers()[test_pooled.POOL1]['uuid'])[0])
        os.symlink(link, group)
        svc.discover_and_report()
        self.assertEqual([], health_taints_of(self, svc, rp)[0])
        self.assertEqual((4, 0, 4), self.inv(test_pooled.POOL0))
