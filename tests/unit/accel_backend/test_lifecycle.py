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

"""Health, removed devices, Placement call counts and the mdev and fake
drivers: a ``Service`` over copies of recorded sysfs trees reporting to a
real Placement (openstack-placement's fixture).  The lifecycle between
tenants is ``test_lifecycle_cleaning``'s; the other modules of services
use ``ServiceTestBase`` from here."""

import json
import os
import shutil

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa
import webob

from accel_backend.agent.placement import client as pclient
from accel_backend.common import ids
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend import service as service_mod
from accel_common import arq_states
from tests import placement_fixture
from tests.unit.accel_backend import base
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend import test_report
from tests import waiting

COMPUTE = 'compute1'
GPU = '0000:17:00.0'
ADMIN = {'X-Auth-Token': 'admin'}
V23 = dict(ADMIN, **{'OpenStack-API-Version': 'accelerator 2.3'})
#: Nova's binds, unbinds and deletes: its token and a service token.
NOVA = dict(V23, **{'X-Service-Token': 'admin'})


def rp_uuid(address, subname=None):
    parts = (COMPUTE, address) + ((subname,) if subname else ())
    return ids.stable_uuid('rp', *parts)


def device_uuid(address):
    return ids.stable_uuid('device', COMPUTE, address)


class ServiceTestBase(placement_fixture.PlacementTestCase):
    """A Service with its own copy of a sysfs tree."""

    TREE = base.GPU_SERVER
    DRIVERS = 'nvidia_gpu'
    #: ``[nova]``: none (events are retried until the test ends).
    NOVA_OPTS = base.NO_NOVA
    #: ``[discovery] nvidia_gpu_pool``: these tests act on one GPU by its
    #: address, so one provider per GPU; None keeps the default (pooled).
    GPU_POOL = 'false'

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.root = os.path.join(self.tmp, 'sysfs')
        if self.TREE:
            shutil.copytree(self.TREE, self.root, symlinks=True)
        else:
            os.makedirs(self.root)
        self.placement_opts = base.placement_opts(self.placement.endpoint)
        self.raw = pclient.PlacementClient(pclient.adapter_from_conf(
            self.make_conf()))
        self.compute_uuid = uuidutils.generate_uuid()
        self.raw.post('/resource_providers',
                      {'uuid': self.compute_uuid, 'name': COMPUTE})

    def make_conf(self, cleaning=None, groups=None, **discovery):
        """The service's config: ``[discovery]`` options as keywords,
        ``cleaning`` the ``[cleaning]`` ones, ``groups`` any other
        ``{group: {option: value}}`` (e.g. ``mdev_<type>``, ``metrics``)."""
        discovery.setdefault('enabled_drivers', self.DRIVERS)
        discovery.setdefault('report_interval', '0')
        if self.GPU_POOL is not None:
            discovery.setdefault('nvidia_gpu_pool', self.GPU_POOL)
        return base.make_conf(
            self, self.root, (), DEFAULT={
                'host': COMPUTE, 'state_path': self.tmp},
            api={'auth_strategy': 'noauth'}, binding={'workers': '1'},
            placement=self.placement_opts,
            nova=self.NOVA_OPTS,
            discovery=discovery, cleaning=cleaning or {}, **(groups or {}))

    def make_service(self, conf=None, recording=True):
        svc = service_mod.Service(conf or self.make_conf())
        self.addCleanup(svc.stop)
        if recording:
            client = test_report.RecordingClient(svc.placement.adapter)
            svc.placement = svc.reporter.view.client = client
        return svc

    # -- helpers ---------------------------------------------------------

    def inventory(self, rp):
        return self.raw.get('/resource_providers/%s/inventories' % rp
                            ).json()['inventories']

    def reserved(self, address, rc='PGPU'):
        inv = self.inventory(rp_uuid(address))[rc]
        return inv['reserved'], inv['total']

    def rp_exists(self, rp):
        return self.raw.get('/resource_providers/%s' % rp,
                            ok=(200, 404)).status_code == 200

    def call(self, svc, path, headers=V23, method='GET', status=200,
             body=None):
        req = webob.Request.blank(path, method=method, headers=headers)
        if body is not None:
            req.content_type = 'application/json'
            req.body = json.dumps(body).encode()
        resp = req.get_response(svc.app)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp

    def device_view(self, svc, address):
        return self.call(svc, '/v2/devices/%s' % device_uuid(address)).json

    def bind(self, svc, address, rc='PGPU'):
        """Create and bind one ARQ on ``address``; returns (arq, state)."""
        with svc.db.transaction() as session:
            try:
                dp_obj.get_by_name(session, 'one')
            except Exception:
                dp_obj.create(session, 'one', [{'resources:%s' % rc: '1'}])
            (arq,) = arq_obj.create(session, 'one', project_id='p1')
            arq_obj.start_binding(session, arq, COMPUTE, rp_uuid(address),
                                  uuidutils.generate_uuid())
            arq_uuid = arq.uuid
        return arq_uuid, svc.binder.bind_one(arq_uuid)

    def unbind(self, svc, arq_uuid):
        with svc.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq_uuid, for_update=True))

    def api_bind(self, svc, address=None, rc='PGPU', rp=None,
                 instance=None):
        """As Nova binds: ``POST`` an ARQ of profile ``one`` and
        ``PATCH`` it to ``address``'s provider (or ``rp``), then wait
        for the binder to resolve it; returns (arq, state)."""
        with svc.db.transaction() as session:
            try:
                dp_obj.get_by_name(session, 'one')
            except Exception:
                dp_obj.create(session, 'one', [{'resources:%s' % rc: '1'}])
        (arq,) = self.call(svc, '/v2/accelerator_requests', NOVA, 'POST',
                           201, {'device_profile_name': 'one'}).json['arqs']
        path = '/v2/accelerator_requests/%s' % arq['uuid']
        self.call(svc, path, NOVA, 'PATCH', 202, {arq['uuid']: [
            {'op': 'add', 'path': '/hostname', 'value': COMPUTE},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': rp or rp_uuid(address)},
            {'op': 'add', 'path': '/instance_uuid',
             'value': instance or uuidutils.generate_uuid()}]})
        state = []
        self.wait_for(lambda: state.append(self.call(
            svc, path).json['state']) or
            state[-1] in arq_states.RESOLVED_STATES)
        return arq['uuid'], state[-1]

    def api_unbind(self, svc, arq_uuid):
        """As Nova unbinds: ``PATCH`` removing the binding."""
        self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid, NOVA,
                  'PATCH', 202, {arq_uuid: [
                      {'op': 'remove', 'path': p} for p in (
                          '/hostname', '/device_rp_uuid',
                          '/instance_uuid')]})

    def delete_arq(self, svc, arq_uuid):
        with svc.db.transaction() as session:
            arq_obj.delete(session, arq_obj.get(session, arq_uuid))

    def handle_states(self, svc, address):
        with svc.db.transaction() as session:
            return [(h.state, h.state_reason) for h in session.scalars(
                sa.select(models.AttachHandle).join(models.Deployable)
                .join(models.Device)
                .where(models.Device.address == address))]

    def reset_file(self, address):
        with open(os.path.join(self.root, address, 'reset')) as f:
            return f.read()

    def wait_for(self, predicate, timeout=15):
        waiting.wait_for('condition', predicate, timeout, interval=0.02)


class TestHealthAndRemoval(ServiceTestBase):

    def test_unhealthy_device_reserved_and_shown(self):
        svc = self.make_service(self.make_conf(aer_recovery_passes='2'))
        svc.discover_and_report()
        bad = '0000:ca:00.0'
        aer = os.path.join(self.root, bad, 'aer_dev_fatal')
        with open(aer, 'w') as f:
            f.write(sysfs_tree.aer_fatal_text(1))
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(bad))
        self.assertEqual((0, 1), self.reserved(GPU))
        view = self.device_view(svc, bad)
        self.assertEqual('unhealthy', view['status'])
        self.assertIn('1 new fatal PCIe AER', view['status_reason'])
        self.assertEqual('BindFailed', self.bind(svc, bad)[1])
        # The count stays (it only grows until a reboot): one quiet pass
        # is not enough, the second offers the device again.
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(bad))
        self.assertIn('recovering: 1 of 2', self.device_view(
            svc, bad)['status_reason'])
        # The counters survive a restart of the service.
        svc = self.make_service(self.make_conf(aer_recovery_passes='2'))
        svc.discover_and_report()
        self.assertEqual((0, 1), self.reserved(bad))
        self.assertEqual('enabled', self.device_view(svc, bad)['status'])

    def test_removed_device_in_use_missing_quarantined_and_back(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        saved = os.path.join(self.tmp, 'saved')
        shutil.copytree(os.path.join(self.root, GPU), saved, symlinks=True)
        shutil.rmtree(os.path.join(self.root, GPU))
        del svc.placement.log[:]
        for _ in range(3):
            svc.discover_and_report()
        self.assertEqual('missing', self.device_view(svc, GPU)['status'])
        self.assertEqual((1, 1), self.reserved(GPU))
        # No delete attempts while the device is still ours.
        self.assertEqual([], [c for c in svc.placement.log
                              if c[0] == 'DELETE'])
        # Released under the NoExecute taint of its absence: the handle
        # is quarantined, and the device is kept missing and reserved
        # (without it, the row went and the device came back as new,
        # offered uncleaned).
        self.delete_arq(svc, arq)
        svc.cleaner.clean_pending()
        for _ in range(3):
            svc.discover_and_report()
        self.assertEqual('missing', self.device_view(svc, GPU)['status'])
        self.assertEqual(['quarantined'],
                         [s for s, _ in self.handle_states(svc, GPU)])
        self.assertEqual((1, 1), self.reserved(GPU))
        self.assertEqual([], [c for c in svc.placement.log
                              if c[0] == 'DELETE'])
        # It comes back (a rescan): the fault's taint goes, the handle is
        # cleaned (a reset) before the device is offered again.
        shutil.copytree(saved, os.path.join(self.root, GPU), symlinks=True)
        svc.discover_and_report()
        self.assertEqual('dirty', self.device_view(svc, GPU)['status'])
        self.assertEqual(['dirty'],
                         [s for s, _ in self.handle_states(svc, GPU)])
        self.assertEqual((1, 1), self.reserved(GPU))
        svc.cleaner.clean_pending()
        self.assertEqual('1', self.reset_file(GPU).strip())
        svc.discover_and_report()
        self.assertEqual(['available'],
                         [s for s, _ in self.handle_states(svc, GPU)])
        self.assertEqual('enabled', self.device_view(svc, GPU)['status'])
        self.assertEqual((0, 1), self.reserved(GPU))


class TestPlacementCalls(ServiceTestBase):

    TREE = None

    def test_64_gpus_initial_report_and_no_change_resync(self):
        addresses = sysfs_tree.many_gpus(self.root, 64)
        svc = self.make_service()
        log = svc.placement.log

        svc.discover_and_report()
        initial = len(log)
        initial_reads = len([c for c in log if c[0] == 'GET'])
        self.assertEqual(64, len(self.raw.get(
            '/resource_providers?in_tree=%s' % self.compute_uuid
        ).json()['resource_providers']) - 1)
        del log[:]
        svc.discover_and_report()
        resync = list(log)
        del log[:]
        # One allocation changes one provider's generation: re-read only
        # that one.
        consumer = uuidutils.generate_uuid()
        self.raw.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid(addresses[5]): {
                'resources': {'PGPU': 1}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None})
        svc.discover_and_report()
        after_alloc = list(log)

        print('\nPlacement calls, 64 GPUs: initial report %d (%d GET, %d '
              'writes); no-change resync %d (%s); after one allocation %d '
              '(%s)' % (initial, initial_reads, initial - initial_reads,
                        len(resync), ', '.join('%s %s' % c for c in resync),
                        len(after_alloc),
                        ', '.join('%s %s' % c for c in after_alloc)))
        # Initial: root lookup + tree, then per GPU create + inventory +
        # traits, plus the custom traits once.
        self.assertEqual(2, initial_reads)
        self.assertEqual(2 + 3 * 64 + 5, initial)
        self.assertEqual([('GET', '/resource_providers?in_tree=%s' %
                           self.compute_uuid)], resync)
        self.assertEqual(3, len(after_alloc))
        self.assertEqual([], [c for c in after_alloc if c[0] != 'GET'])

    def test_stale_cache_repaired_after_409(self):
        sysfs_tree.many_gpus(self.root, 2)
        svc = self.make_service()
        svc.discover_and_report()
        rp = rp_uuid('0000:10:00.0')
        # Someone else writes the provider: the next resync re-reads it
        # (generation changed) and resets the stray trait.
        gen = self.raw.get('/resource_providers/%s' % rp).json()[
            'generation']
        traits = self.raw.get('/resource_providers/%s/traits' % rp).json()[
            'traits']
        self.raw.put('/traits/CUSTOM_STRAY')
        self.raw.put('/resource_providers/%s/traits' % rp, {
            'resource_provider_generation': gen,
            'traits': traits + ['CUSTOM_STRAY']})
        svc.discover_and_report()
        self.assertNotIn('CUSTOM_STRAY', self.raw.get(
            '/resource_providers/%s/traits' % rp).json()['traits'])


class TestMdevAndFake(ServiceTestBase):

    TREE = base.MDEV_GPU
    DRIVERS = 'mdev,fake'

    def test_reported_and_bound(self):
        # The T4 holds one nvidia-223 mdev already: that type is enabled.
        svc = self.make_service(self.make_conf(mdev_types='nvidia-223'))
        svc.discover_and_report()
        parent = '0000:41:00.0'
        kids = {rp['name']: rp for rp in self.raw.get(
            '/resource_providers?in_tree=%s' % self.compute_uuid
        ).json()['resource_providers']}
        name = '%s_%s_nvidia-223' % (COMPUTE, parent)
        self.assertEqual(rp_uuid(parent, 'nvidia-223'), kids[name]['uuid'])
        inv = self.inventory(kids[name]['uuid'])['VGPU']
        self.assertEqual((8, 0), (inv['total'], inv['reserved']))
        # The GPU offers no other type: it is sold once.
        self.assertEqual([name], [n for n in kids if parent in n])
        fake = kids['%s_0000:0c:00.0' % COMPUTE]['uuid']
        self.assertEqual(16, self.inventory(fake)['FPGA']['total'])
        self.assertIn('CUSTOM_FAKE_DEVICE', self.raw.get(
            '/resource_providers/%s/traits' % fake).json()['traits'])
        deps = self.call(svc, '/v2/deployables').json['deployables']
        self.assertIn('%s_FakeDevice' % COMPUTE, [d['name'] for d in deps])

        with svc.db.transaction() as session:
            dp_obj.create(session, 'vgpu', [{'resources:VGPU': '1'}])
            (arq,) = arq_obj.create(session, 'vgpu')
            arq_obj.start_binding(session, arq, COMPUTE,
                                  rp_uuid(parent, 'nvidia-223'),
                                  uuidutils.generate_uuid())
            arq_uuid = arq.uuid
        self.assertEqual('Bound', svc.binder.bind_one(arq_uuid))
        view = self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid).json
        self.assertEqual('MDEV', view['attach_handle_type'])
        self.assertEqual('nvidia-223',
                         view['attach_handle_info']['asked_type'])
        self.assertEqual(parent, view['attach_handle_info']['parent'])
        # The handle UUID is the mdev UUID: stable across rediscovery.
        svc.discover_and_report()
        self.assertEqual(view['attach_handle_uuid'], self.call(
            svc, '/v2/accelerator_requests/%s' % arq_uuid).json[
                'attach_handle_uuid'])
