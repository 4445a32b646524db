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

"""Taints of pooled deployables (``objects.taint``, microversion 2.5)
through the API, against a real Placement (openstack-placement's
fixture) and the real binder: a tainted function of a pool reserves one
unit and is never bound, a taint of the whole pool reserves it all, and
the periodic report keeps what the database says.  The per-device case
is ``tests/functional/gabbits/taints.yaml``."""

import json

import fixtures
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend.agent.placement import client as pclient
from accel_backend.common import ids
from accel_backend.conductor import failure
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend import service as service_mod
from accel_common import arq_states
from tests import placement_fixture
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_numa_span
from tests.unit.accel_backend import test_pooled

V25 = dict(test_lifecycle.ADMIN, **{
    'OpenStack-API-Version': 'accelerator 2.5', 'X-User-Id': 'op-1'})
POOL0 = test_pooled.POOL0
#: The second function of POOL0 (lowest ids are claimed first, so an
#: unchanged claim would take it among the first three).
TAINTED = '0000:2a:00.0'


class _TaintTestBase(test_pooled.PooledTest):
    """Taints through the API of ``service()``'s pools."""

    def deployable_of(self, svc, name):
        rp = self.providers()[name]['uuid']
        (dep,) = [d for d in self.call(svc, '/v2/deployables', V25).json[
            'deployables'] if d['rp_uuid'] == rp]
        return dep

    def taint(self, svc, dep, status=201, **body):
        body.setdefault('key', 'maintenance')
        body.setdefault('effect', 'NoSchedule')
        return self.call(svc, '/v2/deployables/%s/taints' % dep['uuid'],
                         V25, 'POST', status, body).json

    def untaint(self, svc, dep, taint):
        self.call(svc, '/v2/deployables/%s/taints/%s' % (
            dep['uuid'], taint['uuid']), V25, 'DELETE', 204)

    def bind_group_state(self, svc, name, group=None):
        """Bind one ARQ of ``group`` (default: one PGPU) to ``name``;
        returns its resolved state (list)."""
        rp = self.providers()[name]['uuid']
        with svc.db.transaction() as session:
            profile = uuidutils.generate_uuid()
            dp_obj.create(session, profile,
                          [group or {'resources:PGPU': '1'}])
            (arq,) = arq_obj.create(session, profile, project_id='p1')
            arq_obj.start_binding(session, arq, test_pooled.COMPUTE, rp,
                                  uuidutils.generate_uuid())
            arq_uuid = arq.uuid
        return [svc.binder.bind_one(arq_uuid)]


class PoolTaintTest(_TaintTestBase):
    """Pools per NUMA node: POOL0 holds the four GPUs of node 0."""

    def test_tainted_function_reserves_one_unit_and_is_never_bound(self):
        svc = self.service()
        dep = self.deployable_of(svc, POOL0)
        taint = self.taint(svc, dep, function=TAINTED,
                           reason='ECC errors')
        self.assertEqual(TAINTED, taint['function'])
        self.assertEqual('op-1', taint['set_by'])
        self.assertEqual((4, 1, 4), self.inv(POOL0))
        self.assertEqual((4, 0, 4), self.inv(test_pooled.POOL1))
        # The periodic report derives the same from the database.
        svc.discover_and_report()
        self.assertEqual((4, 1, 4), self.inv(POOL0))
        arqs = self.bind_group(svc, POOL0, 3)
        self.assertNotIn('2a', [i['bus'] for i in self.handles_of(svc,
                                                                  arqs)])
        # Only the tainted function is left: a fourth ARQ gets nothing,
        # and the failure says why.
        (extra,) = self.bind_group_state(svc, POOL0)
        self.assertEqual(arq_states.BIND_FAILED, extra)
        key = (self.providers()[POOL0]['uuid'], test_pooled.COMPUTE)
        with svc.db.transaction() as session:
            self.assertEqual({key: failure.DEVICE_TAINTED},
                             failure.diagnose(session, [key]))
        shown = self.deployable_of(svc, POOL0)['taints']
        self.assertEqual([taint['uuid']], [t['uuid'] for t in shown])
        self.untaint(svc, dep, taint)
        self.assertEqual((4, 0, 4), self.inv(POOL0))
        self.assertEqual('bound', self.bind_one(svc, POOL0))

    def test_whole_pool_taint_reserves_it_all(self):
        svc = self.service()
        dep = self.deployable_of(svc, POOL0)
        taint = self.taint(svc, dep, effect='NoExecute')
        self.assertIsNone(taint['function'])
        self.assertEqual((4, 4, 4), self.inv(POOL0))
        self.assertEqual([arq_states.BIND_FAILED],
                         self.bind_group_state(svc, POOL0))
        self.untaint(svc, dep, taint)
        self.assertEqual((4, 0, 4), self.inv(POOL0))

    def test_unknown_function_is_400(self):
        svc = self.service()
        dep = self.deployable_of(svc, POOL0)
        error = self.taint(svc, dep, status=400, function='0000:99:00.0')
        self.assertEqual('accel.taint.invalid_function',
                         error['errors'][0]['code'])
        # A function of the other pool is not this pool's.
        self.taint(svc, dep, status=400, function='0000:9a:00.0')
        self.assertEqual((4, 0, 4), self.inv(POOL0))


class TolerationPoolTaintTest(_TaintTestBase):
    """``[taints] tolerable_keys = burn-in``: a ``burn-in`` taint of the
    whole pool is its provider's trait, not a reservation, and the claim
    gives its handles to tolerating groups only; a tainted function of a
    pool stays reserved, whatever its key (``accel_common.tolerations``).
    """

    TOLERATES = {'resources:PGPU': '1', 'accel:tolerations': 'burn-in'}
    TRAIT = 'CUSTOM_ACCEL_TAINT_BURN_IN'

    def service(self, **kw):
        return super().service(
            groups={'taints': {'tolerable_keys': 'burn-in'}}, **kw)

    def test_whole_pool_taint_is_a_trait_bound_only_when_tolerated(self):
        svc = self.service()
        dep = self.deployable_of(svc, POOL0)
        taint = self.taint(svc, dep, key='burn-in')
        self.assertEqual((4, 0, 4), self.inv(POOL0))
        self.assertIn(self.TRAIT, self.traits(POOL0))
        self.assertNotIn(self.TRAIT, self.traits(test_pooled.POOL1))
        # The periodic report derives the same from the database.
        svc.discover_and_report()
        self.assertEqual((4, 0, 4), self.inv(POOL0))
        self.assertIn(self.TRAIT, self.traits(POOL0))
        # An ARQ whose group does not tolerate it is never bound there
        # (a stale request group, a race), one that does is.
        self.assertEqual([arq_states.BIND_FAILED],
                         self.bind_group_state(svc, POOL0))
        self.assertEqual([arq_states.BOUND],
                         self.bind_group_state(svc, POOL0, self.TOLERATES))
        self.untaint(svc, dep, taint)
        self.assertNotIn(self.TRAIT, self.traits(POOL0))
        self.assertEqual((4, 0, 4), self.inv(POOL0))
        self.assertEqual([arq_states.BOUND],
                         self.bind_group_state(svc, POOL0))

    def test_a_tainted_function_is_reserved_even_when_tolerable(self):
        svc = self.service()
        dep = self.deployable_of(svc, POOL0)
        self.taint(svc, dep, key='burn-in', function=TAINTED)
        self.assertEqual((4, 1, 4), self.inv(POOL0))
        self.assertNotIn(self.TRAIT, self.traits(POOL0))
        for _ in range(3):
            self.assertEqual([arq_states.BOUND], self.bind_group_state(
                svc, POOL0, self.TOLERATES))
        self.assertEqual([arq_states.BIND_FAILED], self.bind_group_state(
            svc, POOL0, self.TOLERATES))


class SpanningPoolTaintTest(_TaintTestBase):
    """A pool spanning both NUMA nodes (``[discovery] pool_numa_span``):
    the binder's NUMA fit (``conductor.numa_fit``) and the free units per
    node (``objects.numa_free``, microversion 2.4) leave a tainted
    function out too."""

    NUMA_SPAN = 'true'
    bind_patch = test_numa_span.TestSpanningBinds.bind_patch

    def test_tainted_function_is_not_free_nor_fitted(self):
        svc = self.service()
        dep = self.deployable_of(svc, test_pooled.POOL)
        taint = self.taint(svc, dep, function='0000:9a:00.0')
        self.assertEqual((8, 1, 8), self.inv(test_pooled.POOL))
        (pool,) = self.call(svc, '/v2/deployables/free_by_numa_node',
                            V25).json['deployables']
        self.assertEqual({'0': 4, '1': 3}, pool['free_by_numa_node'])
        self.assertEqual((['Bound'], ['ab', 'ba', 'db']), self.bind_patch(
            svc, {'resources:PGPU': '3',
                  'trait:CUSTOM_NUMA_NODE_1': 'required'}))
        self.untaint(svc, dep, taint)
        self.assertEqual((8, 0, 8), self.inv(test_pooled.POOL))
        self.assertEqual((['Bound'], ['9a']), self.bind_patch(
            svc, {'resources:PGPU': '1',
                  'trait:CUSTOM_NUMA_NODE_1': 'required'}))


class OtherHostTaintTest(testtools.TestCase):
    """An embedded service's API taints a device of another host of the
    same database (whose agent reports it): Placement is written from
    the database, not through the API host's own store, which refuses
    another host's providers."""

    def setUp(self):
        super().setUp()
        placement = self.useFixture(placement_fixture.PlacementFixture())
        url = 'sqlite:///%s/accel.db' % self.useFixture(
            fixtures.TempDir()).path
        self.services = {}
        for host in ('compute1', 'compute2'):
            conf = base.make_conf(
                self, DEFAULT={'host': host},
                api={'auth_strategy': 'noauth'}, binding={'workers': '1'},
                database={'connection': url},
                placement=base.placement_opts(placement.endpoint),
                nova=base.NO_NOVA)
            self.raw = pclient.PlacementClient(
                pclient.adapter_from_conf(conf))
            self.raw.post('/resource_providers', {
                'uuid': uuidutils.generate_uuid(), 'name': host})
            svc = service_mod.Service(conf)
            self.addCleanup(svc.stop)
            svc.discover_and_report()
            self.services[host] = svc

    def test_taint_another_hosts_device(self):
        api = self.services['compute1']
        address = base.T4_ADDRESSES[0]
        dep = ids.stable_uuid('deployable', 'compute2', address)
        rp = ids.stable_uuid('rp', 'compute2', address)
        req = webob.Request.blank('/v2/deployables/%s/taints' % dep,
                                  method='POST', headers=V25)
        req.content_type = 'application/json'
        req.body = json.dumps({'key': 'k', 'effect': 'NoSchedule'}).encode()
        resp = req.get_response(api.app)
        self.assertEqual(201, resp.status_code, resp.text)
        inv = self.raw.get('/resource_providers/%s/inventories' % rp
                           ).json()['inventories']['PGPU']
        self.assertEqual((1, 1), (inv['reserved'], inv['total']))

    def test_enable_another_hosts_device(self):
        # The same path as a taint: enabling asks the database for the
        # reserved units (an embedded service's host store refused
        # another host's provider, 403 after the status was committed).
        api = self.services['compute1']
        address = base.T4_ADDRESSES[0]
        dev = ids.stable_uuid('device', 'compute2', address)
        rp = ids.stable_uuid('rp', 'compute2', address)
        reserved = []
        for action in ('disable', 'enable'):
            req = webob.Request.blank('/v2/devices/%s/%s' % (dev, action),
                                      method='POST', headers=V25)
            resp = req.get_response(api.app)
            self.assertEqual(200, resp.status_code, resp.text)
            reserved.append(self.raw.get(
                '/resource_providers/%s/inventories' % rp
            ).json()['inventories']['PGPU']['reserved'])
        self.assertEqual([1, 0], reserved)
