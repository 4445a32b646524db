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

"""Device lifecycle between tenants, health, removed devices and
Placement call counts: a ``Service`` over copies of recorded sysfs trees
reporting to a real Placement (openstack-placement's fixture)."""

import json
import os
import shutil

import fixtures
from oslo_utils import uuidutils
import sqlalchemy as sa
import testtools
import webob

from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend.placement import client as pclient
from accel_backend import service as service_mod
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
    return device_obj.stable_uuid('rp', *parts)


def device_uuid(address):
    return device_obj.stable_uuid('device', COMPUTE, address)


class ServiceTestBase(placement_fixture.PlacementTestCase):
    """A Service with its own copy of a sysfs tree."""

    TREE = base.GPU_SERVER
    DRIVERS = 'nvidia_gpu'
    #: ``[nova]``: none (events are retried until the test ends).
    NOVA_OPTS = base.NO_NOVA

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
            svc, path).json['state']) or state[-1] in arq_obj.RESOLVED_STATES)
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


class TestCleaning(ServiceTestBase):

    def test_release_dirty_reserved_flr_then_available(self):
        svc = self.make_service()
        svc.discover_and_report()
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))
        arq, state = self.bind(svc, GPU)
        self.assertEqual('Bound', state)
        self.assertEqual([('bound', None)], self.handle_states(svc, GPU))
        self.unbind(svc, arq)
        # Not offered again: dirty, reserved in Placement, status shown.
        self.assertEqual([('dirty', None)], self.handle_states(svc, GPU))
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(GPU))
        self.assertEqual('dirty', self.device_view(svc, GPU)['status'])
        _, state = self.bind(svc, GPU)
        self.assertEqual('BindFailed', state)
        self.assertEqual('', self.reset_file(GPU))

        results = svc.cleaner.clean_pending()
        self.assertEqual(['available'], list(results.values()))
        self.assertEqual('1', self.reset_file(GPU))
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))
        self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('enabled', self.device_view(svc, GPU)['status'])
        self.assertNotIn('status_reason', self.device_view(svc, GPU))
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_delete_of_arq_also_dirties(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.delete_arq(svc, arq)
        self.assertEqual([('dirty', None)], self.handle_states(svc, GPU))
        svc.cleaner.clean_pending()
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))

    def test_gpu_the_kernel_cannot_reset_is_offered_again(self):
        # No reset method (no FLR, bus reset quirked off): discovery makes
        # its cleaning none instead of a reset that would fail after
        # every tenant and lock it out.
        os.unlink(os.path.join(self.root, GPU, 'reset'))
        svc = self.make_service()
        svc.discover_and_report()
        for _ in range(2):
            arq, _ = self.bind(svc, GPU)
            self.unbind(svc, arq)
            # Released straight to available: nothing to clean.
            self.assertEqual({}, svc.cleaner.clean_pending())
            self.assertEqual([('available', None)],
                             self.handle_states(svc, GPU))
            self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('none', self.device_view(svc, GPU)[
            'std_board_info']['reset_method'])

    def test_reset_failure_keeps_the_device_out(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        os.unlink(os.path.join(self.root, GPU, 'reset'))  # no FLR support
        self.assertEqual(['clean_failed'],
                         list(svc.cleaner.clean_pending().values()))
        ((state, reason),) = self.handle_states(svc, GPU)
        self.assertEqual('clean_failed', state)
        self.assertIn('function level reset of %s failed' % GPU, reason)
        self.assertEqual((1, 1), self.reserved(GPU))
        view = self.device_view(svc, GPU)
        self.assertEqual('clean_failed', view['status'])
        self.assertEqual(reason, view['status_reason'])
        # Before 2.3 no status at all.
        self.assertNotIn('status', self.call(
            svc, '/v2/devices/%s' % device_uuid(GPU), headers=ADMIN).json)
        # The periodic report keeps it reserved; nothing binds it.
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(GPU))
        self.assertEqual('BindFailed', self.bind(svc, GPU)[1])
        # Fixed by the operator: enabling the device cleans it again.
        with open(os.path.join(self.root, GPU, 'reset'), 'w'):
            pass
        self.call(svc, '/v2/devices/%s/enable' % device_uuid(GPU),
                  method='POST')
        self.assertEqual([('dirty', None)], self.handle_states(svc, GPU))
        self.assertEqual((1, 1), self.reserved(GPU))
        svc.cleaner.clean_pending()
        self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('enabled', self.device_view(svc, GPU)['status'])

    def test_command_method(self):
        log = os.path.join(self.tmp, 'cleaned.log')
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'echo \"$0\" >> %s'" % log}))
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        with open(log) as f:
            self.assertEqual(GPU + '\n', f.read())
        self.assertEqual('', self.reset_file(GPU))

    def test_failing_command(self):
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'echo scrub failed on {address} >&2; "
                       "exit 3'"}))
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        svc.cleaner.clean_pending()
        view = self.device_view(svc, GPU)
        self.assertEqual('clean_failed', view['status'])
        self.assertEqual('sh exited with status 3: scrub failed on %s' %
                         GPU, view['status_reason'])
        self.assertEqual((1, 1), self.reserved(GPU))

    def test_none_method_offers_the_device_at_once(self):
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:none'}))
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))
        self.assertEqual({}, svc.cleaner.clean_pending())
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_release_wakes_the_running_cleaner(self):
        # poll_interval is long: only the commit hook can wake it.
        svc = self.make_service(self.make_conf(cleaning={
            'poll_interval': '600'}))
        svc.discover_and_report()
        svc.start()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        self.wait_for(lambda: self.handle_states(svc, GPU) ==
                      [('available', None)])
        self.assertEqual('1', self.reset_file(GPU))
        self.wait_for(lambda: self.reserved(GPU) == (0, 1))

    def test_devices_waiting_for_a_worker_are_reserved(self):
        # One worker, a cleaning step that runs until the test lets it
        # finish: the second device waits dirty, and Placement must not
        # offer it meanwhile.
        go = os.path.join(self.tmp, 'go')
        svc = self.make_service(self.make_conf(cleaning={
            'workers': '1', 'poll_interval': '600',
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'while [ ! -e %s ]; do sleep 0.02; done'"
                       % go}))
        # Runs before svc.stop (which waits for the step), also on failure.
        self.addCleanup(lambda: open(go, 'w').close())
        svc.discover_and_report()
        second = '0000:ca:00.0'
        arqs = [self.bind(svc, address)[0] for address in (GPU, second)]
        # Only the cleaner: no report that would derive ``reserved``.
        svc.cleaner.start()
        for arq in arqs:
            self.unbind(svc, arq)
        self.wait_for(lambda: sorted(
            self.handle_states(svc, a)[0][0] for a in (GPU, second)) ==
            ['cleaning', 'dirty'])
        # The cleaner reserves right after the release's commit (a
        # Placement call that may take a moment on a loaded machine).
        self.wait_for(lambda: [self.reserved(a) for a in (GPU, second)] ==
                      [(1, 1), (1, 1)])
        self.assertEqual(['cleaning', 'dirty'], sorted(
            self.handle_states(svc, a)[0][0] for a in (GPU, second)))
        open(go, 'w').close()
        for address in (GPU, second):
            self.wait_for(lambda a=address: self.handle_states(svc, a) ==
                          [('available', None)])
            self.wait_for(lambda a=address: self.reserved(a) == (0, 1))

    def test_placement_down_while_cleaning_then_report_repairs(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(GPU))
        # Placement is down while the device is cleaned: the cleaner
        # cannot offer it again (logged, not raised).
        self.placement.outage = 503
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        self.assertIn('Could not update reserved units', self.logger.output)
        self.placement.outage = None
        self.assertEqual((1, 1), self.reserved(GPU))
        # The next periodic report derives reserved from the database.
        svc.discover_and_report()
        self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_restart_resumes_dirty_and_cleaning(self):
        svc = self.make_service()
        svc.discover_and_report()
        second = '0000:ca:00.0'
        for address in (GPU, second):
            arq, _ = self.bind(svc, address)
            self.unbind(svc, arq)
        # A crash in the middle of cleaning the second one.
        with svc.db.transaction() as session:
            (h,) = session.scalars(
                sa.select(models.AttachHandle).join(models.Deployable)
                .join(models.Device).where(models.Device.address == second))
            h.state = device_obj.CLEANING
        svc.stop()

        svc2 = self.make_service(self.make_conf(cleaning={
            'poll_interval': '600'}))
        svc2.start()
        for address in (GPU, second):
            self.wait_for(lambda a=address: self.handle_states(svc2, a) ==
                          [('available', None)])
            self.assertEqual('1', self.reset_file(address))


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

    def test_removed_device_in_use_missing_then_removed(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        consumer = uuidutils.generate_uuid()
        self.raw.put('/allocations/%s' % consumer, {
            'allocations': {rp_uuid(GPU): {'resources': {'PGPU': 1}}},
            'project_id': 'p1', 'user_id': 'u1',
            'consumer_generation': None})
        shutil.rmtree(os.path.join(self.root, GPU))
        del svc.placement.log[:]
        for _ in range(3):
            svc.discover_and_report()
        self.assertEqual('missing', self.device_view(svc, GPU)['status'])
        self.assertEqual((1, 1), self.reserved(GPU))
        # No delete attempts while the device is still ours.
        self.assertEqual([], [c for c in svc.placement.log
                              if c[0] == 'DELETE'])
        # Released: the row goes; the provider still has the allocation.
        self.delete_arq(svc, arq)
        svc.cleaner.clean_pending()  # reset of a vanished device fails
        del svc.placement.log[:]
        for _ in range(3):
            svc.discover_and_report()
        self.call(svc, '/v2/devices/%s' % device_uuid(GPU), status=404)
        self.assertTrue(self.rp_exists(rp_uuid(GPU)))
        self.assertEqual((1, 1), self.reserved(GPU))
        deletes = [c for c in svc.placement.log if c[0] == 'DELETE']
        self.assertEqual(1, len(deletes))  # one 409, no loop
        self.assertEqual(1, self.logger.output.count(
            'of a removed device still has allocations'))
        self.raw.delete('/allocations/%s' % consumer)
        svc.discover_and_report()
        self.assertFalse(self.rp_exists(rp_uuid(GPU)))


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


class TestMigration(testtools.TestCase):

    def test_0003_marks_handles_in_use_bound(self):
        from accel_backend.db import api as db_api
        import alembic.command
        import alembic.config
        tmp = self.useFixture(fixtures.TempDir()).path
        db = db_api.Database('sqlite:///%s/a.sqlite' % tmp)
        self.addCleanup(db.dispose)
        cfg = alembic.config.Config()
        cfg.set_main_option('script_location', db_api.MIGRATIONS_DIR)
        with db.engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.upgrade(cfg, '0002')
            conn.execute(sa.text(
                "INSERT INTO devices (id, uuid, type, vendor, model, "
                "hostname, address, status, created_at) VALUES (1, 'd', "
                "'GPU', '10de', 'm', 'h', '0000:af:00.0', 'enabled', "
                "'2026-01-01')"))
            conn.execute(sa.text(
                "INSERT INTO deployables (id, uuid, device_id, name, "
                "num_accelerators, resource_class, traits, created_at) "
                "VALUES (1, 'p', 1, 'n', 2, 'PGPU', '[]', '2026-01-01')"))
            for i, in_use in ((1, 1), (2, 0)):
                conn.execute(sa.text(
                    "INSERT INTO attach_handles (id, uuid, deployable_id, "
                    "attach_type, attach_info, in_use, created_at) VALUES "
                    "(%d, 'h%d', 1, 'PCI', '{}', %d, '2026-01-01')" %
                    (i, i, in_use)))
        db.sync()
        with db.transaction() as session:
            states = {h.uuid: h.state for h in session.scalars(
                sa.select(models.AttachHandle))}
            dev = session.scalar(sa.select(models.Device))
            self.assertEqual({'h1': 'bound', 'h2': 'available'}, states)
            self.assertEqual('healthy', dev.health)
        with db.engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.downgrade(cfg, '0002')
