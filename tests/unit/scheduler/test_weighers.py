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

"""Unit tests of nova_accel.scheduler.weighers (Placement faked)."""

import threading
import types
from urllib import parse

import fixtures
from keystoneauth1 import exceptions as ks_exc
import nova.conf
from nova.scheduler import weights as nova_weights
import testtools

from nova_accel.scheduler import weighers
from tests import waiting

CONF = nova.conf.CONF

HOST_A = 'aaaaaaaa-0000-4000-8000-000000000001'   # two GPUs
HOST_B = 'bbbbbbbb-0000-4000-8000-000000000002'   # no accelerators
HOST_C = 'cccccccc-0000-4000-8000-000000000003'   # one FPGA, in use
OTHER = 'dddddddd-0000-4000-8000-000000000004'    # not a candidate
GPU_1 = 'aaaaaaaa-1111-4000-8000-000000000011'
GPU_2 = 'aaaaaaaa-1111-4000-8000-000000000012'
FPGA = 'cccccccc-1111-4000-8000-000000000031'
OTHER_GPU = 'dddddddd-1111-4000-8000-000000000041'


class Resp:
    def __init__(self, status_code, body=None):
        self.status_code = status_code
        self._body = body
        self.text = str(body)

    def json(self):
        return self._body


class FakePlacement:
    """Accelerator providers: ``{uuid: {'root', 'generation', 'inv':
    {rc: total}, 'free': {rc: free units}}}``; answers the three queries
    the weigher makes and records them."""

    def __init__(self, providers):
        self.providers = providers
        self.calls = []
        self.fail = None
        #: Cleared, it holds every read until set (a test's gate).
        self.gate = threading.Event()
        self.gate.set()

    def get(self, url, version=None, global_request_id=None):
        self.gate.wait(30)
        self.calls.append((url, version, global_request_id))
        if self.fail is not None:
            if isinstance(self.fail, Exception):
                raise self.fail
            return Resp(self.fail, {'errors': []})
        path, _, query = url.partition('?')
        q = dict(parse.parse_qsl(query))
        if path == '/resource_providers':
            assert q.pop('required') == 'OWNER_CYBORG', url
            rps = self.providers.items()
            if 'resources' in q:
                rc, amount = q.pop('resources').split(':')
                rps = [(u, p) for u, p in rps
                       if p['free'].get(rc, 0) >= int(amount)]
            assert not q, url
            return Resp(200, {'resource_providers': [
                {'uuid': u, 'root_provider_uuid': p['root'],
                 'parent_provider_uuid': p['root'],
                 'generation': p['generation']} for u, p in rps]})
        parts = path.strip('/').split('/')
        if parts[0] == 'resource_providers' and parts[2:] == ['inventories']:
            p = self.providers[parts[1]]
            return Resp(200, {'inventories': {
                rc: {'total': t} for rc, t in p['inv'].items()},
                'resource_provider_generation': p['generation']})
        raise AssertionError('unexpected GET %s' % url)

    def paths(self):
        return [c[0] for c in self.calls]


def _providers():
    return {
        GPU_1: {'root': HOST_A, 'generation': 1, 'inv': {'PGPU': 1},
                'free': {'PGPU': 1}},
        GPU_2: {'root': HOST_A, 'generation': 1, 'inv': {'PGPU': 1},
                'free': {'PGPU': 1}},
        FPGA: {'root': HOST_C, 'generation': 3, 'inv': {'FPGA': 1},
               'free': {}},
        OTHER_GPU: {'root': OTHER, 'generation': 1, 'inv': {'PGPU': 1},
                    'free': {'PGPU': 1}},
    }


def _host(name, uuid, aggregates=()):
    return types.SimpleNamespace(
        host=name, nodename=name, uuid=uuid,
        aggregates=[types.SimpleNamespace(metadata=m) for m in aggregates])


def _spec(extra_specs=None, global_id='req-global'):
    return types.SimpleNamespace(
        flavor=types.SimpleNamespace(extra_specs=extra_specs or {}),
        _context=types.SimpleNamespace(global_id=global_id))


def _wait(predicate, timeout=10.0):
    waiting.wait_for('condition', predicate, timeout, interval=0.01)


class WeigherTestBase(testtools.TestCase):

    INTERVAL = 1000.0   # the view's thread reads once, then on request

    def setUp(self):
        super().setUp()
        for name, value in (('accelerator_weigher_refresh_interval',
                             self.INTERVAL),
                            ('accelerator_weigher_max_age', 60.0)):
            CONF.set_override(name, value, group='nova_accel')
            self.addCleanup(CONF.clear_override, name, group='nova_accel')
        self.placement = FakePlacement(_providers())
        self.weigher = weighers.AcceleratorHostReservationWeigher(
            client=self.placement)
        self.addCleanup(lambda: self.weigher.view.stop())
        self.hosts = [_host('a', HOST_A), _host('b', HOST_B),
                      _host('c', HOST_C)]

    def _raw(self, spec=None, hosts=None):
        objs = [nova_weights.WeighedHost(h, 0.0)
                for h in (hosts or self.hosts)]
        return self.weigher.weigh_objects(objs, spec or _spec())

    def _read(self):
        """Start the view's thread, wait for its first read, forget the
        calls it made."""
        self._raw()
        _wait(lambda: self.weigher.view.reads >= 1)
        self.placement.calls = []


class WeigherTest(WeigherTestBase):

    def setUp(self):
        super().setUp()
        self._read()

    def _sorted(self, spec=None):
        handler = nova_weights.HostWeightHandler()
        return [w.obj.host for w in handler.get_weighed_objects(
            [self.weigher], self.hosts, spec or _spec())]

    def test_plain_request_weighs_down_free_accelerators(self):
        # A: two free GPUs; B: none; C: its only FPGA is in use.
        self.assertEqual([-2.0, 0.0, 0.0], self._raw())

    def test_hosts_with_free_accelerators_sort_last(self):
        self.assertEqual('a', self._sorted()[-1])

    def test_requests_ask_placement_nothing(self):
        # The cost of a scheduling request does not depend on the cloud:
        # every request (and every instance of a multi-create) is answered
        # from the view.
        for _ in range(5):
            self.assertEqual([-2.0, 0.0, 0.0], self._raw())
        self.assertEqual([], self.placement.calls)

    def test_fewer_free_accelerators_weigh_more(self):
        self.placement.providers[GPU_2]['free'] = {}
        self.placement.providers[FPGA]['free'] = {'FPGA': 1}
        self.placement.providers[FPGA]['generation'] = 4
        self.assertTrue(self.weigher.view.refresh())
        # A: one free GPU, C: one free FPGA, B: none.
        self.assertEqual([-1.0, 0.0, -1.0], self._raw())

    def test_reserved_or_used_devices_are_not_free(self):
        # Placement answers "free" for what can give a unit: held back
        # (reserved = total) and allocated devices are not in the answer.
        for rp in (GPU_1, GPU_2):
            self.placement.providers[rp]['free'] = {}
        self.weigher.view.refresh()
        self.assertEqual([0.0, 0.0, 0.0], self._raw())

    def test_view_is_as_old_as_its_last_read(self):
        for rp in (GPU_1, GPU_2):
            self.placement.providers[rp]['free'] = {}
        # Not read yet: the request still sees the old view.
        self.assertEqual([-2.0, 0.0, 0.0], self._raw())
        self.weigher.view.refresh()
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        self.placement.providers[GPU_1]['free'] = {'PGPU': 1}
        self.weigher.view.refresh()
        self.assertEqual([-1.0, 0.0, 0.0], self._raw())

    def test_accelerator_request_is_neutral_and_asks_for_a_read(self):
        spec = _spec({'accel:device_profile': 'gpu'})
        reads = self.weigher.view.reads
        self.assertEqual([0.0, 0.0, 0.0], self._raw(spec))
        # Its devices are about to be allocated: the thread reads again
        # now rather than after the interval.
        _wait(lambda: self.weigher.view.reads > reads)

    def test_one_read(self):
        self.weigher.view.refresh()
        paths = self.placement.paths()
        self.assertEqual('/resource_providers?required=OWNER_CYBORG',
                         paths[0])
        # Inventories were read by the first read; the next reads ask
        # only the list and one query per accelerator resource class.
        self.assertEqual([
            '/resource_providers?required=OWNER_CYBORG&resources=FPGA:1',
            '/resource_providers?required=OWNER_CYBORG&resources=PGPU:1',
        ], paths[1:])
        self.assertEqual({'1.18'}, {c[1] for c in self.placement.calls})

    def test_inventories_read_once_per_provider(self):
        # An allocation bumps the provider generation; its resource
        # classes are still the same: no inventory read.
        self.placement.providers[GPU_1]['generation'] = 7
        self.weigher.view.refresh()
        self.assertFalse(any('inventories' in p
                             for p in self.placement.paths()))
        # A new provider is read once; a gone one is forgotten.
        new = 'bbbbbbbb-1111-4000-8000-000000000021'
        self.placement.providers[new] = {
            'root': HOST_B, 'generation': 1, 'inv': {'CUSTOM_QAT': 1},
            'free': {'CUSTOM_QAT': 1}}
        del self.placement.providers[FPGA]
        self.placement.calls = []
        self.weigher.view.refresh()
        self.assertEqual(['/resource_providers/%s/inventories' % new],
                         [p for p in self.placement.paths()
                          if 'inventories' in p])
        self.assertEqual([-2.0, -1.0, 0.0], self._raw())
        self.assertNotIn(FPGA, self.weigher.view.counter._classes)

    def test_placement_error_keeps_the_last_view(self):
        self.placement.fail = 503
        log = self.useFixture(fixtures.FakeLogger())
        self.assertFalse(self.weigher.view.refresh())
        self.assertIn('the last view is kept', log.output)
        self.assertEqual([-2.0, 0.0, 0.0], self._raw())

    def test_view_too_old_is_neutral(self):
        self.placement.fail = ks_exc.ConnectFailure('down')
        self.weigher.view.refresh()
        self.weigher.view.max_age = 0.0
        self.assertEqual([0.0, 0.0, 0.0], self._raw())


class NoViewYetTest(WeigherTestBase):

    def test_first_request_is_neutral_and_starts_the_reads(self):
        # The thread's first read may not finish before the first request
        # is answered: held until then (else a race decides the answer).
        self.placement.gate.clear()
        self.addCleanup(self.placement.gate.set)
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        self.placement.gate.set()
        _wait(lambda: self.weigher.view.reads >= 1)
        self.assertEqual([-2.0, 0.0, 0.0], self._raw())

    def test_placement_unreachable_from_the_start_is_neutral(self):
        self.placement.fail = ks_exc.ConnectFailure('down')
        log = self.useFixture(fixtures.FakeLogger())
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        _wait(lambda: 'down' in log.output)
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        self.assertEqual(0, self.weigher.view.reads)

    def test_thread_ends_with_stop(self):
        self._raw()
        thread = self.weigher.view._thread
        self.weigher.view.stop()
        thread.join(5)
        self.assertFalse(thread.is_alive())


class MultiplierTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.weigher = weighers.AcceleratorHostReservationWeigher(
            client=FakePlacement(_providers()))
        self.addCleanup(lambda: self.weigher.view.stop())

    def _flags(self, value):
        CONF.set_override(weighers.MULTIPLIER, value, group='nova_accel')
        self.addCleanup(CONF.clear_override, weighers.MULTIPLIER,
                        group='nova_accel')

    def test_default(self):
        self.assertEqual(1.0, self.weigher.weight_multiplier(
            _host('a', HOST_A)))

    def test_config(self):
        self._flags(2.5)
        self.assertEqual(2.5, self.weigher.weight_multiplier(
            _host('a', HOST_A)))

    def test_aggregate_overrides_config(self):
        self._flags(2.5)
        host = _host('a', HOST_A, [{weighers.MULTIPLIER: '-1.0'}])
        self.assertEqual(-1.0, self.weigher.weight_multiplier(host))

    def test_negative_multiplier_packs_onto_accelerator_hosts(self):
        self._flags(-1.0)
        self.weigher.view.refresh()
        hosts = [_host('b', HOST_B), _host('a', HOST_A)]
        handler = nova_weights.HostWeightHandler()
        weighed = handler.get_weighed_objects([self.weigher], hosts, _spec())
        self.assertEqual(['a', 'b'], [w.obj.host for w in weighed])


class LoadingTest(testtools.TestCase):

    def test_loadable_by_dotted_path(self):
        handler = nova_weights.HostWeightHandler()
        classes = handler.get_matching_classes([
            'nova_accel.scheduler.weighers.'
            'AcceleratorHostReservationWeigher'])
        self.assertEqual([weighers.AcceleratorHostReservationWeigher],
                         classes)
        # Nova instantiates weighers without arguments.
        self.assertIsInstance(classes[0](), nova_weights.BaseHostWeigher)
