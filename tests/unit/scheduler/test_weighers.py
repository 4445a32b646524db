"""Unit tests of nova_accel.scheduler.weighers (Placement faked)."""

import types
from urllib import parse

from keystoneauth1 import exceptions as ks_exc
import fixtures
import nova.conf
from nova.scheduler import weights as nova_weights
import testtools

from nova_accel.scheduler import weighers

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

    def get(self, url, version=None, global_request_id=None):
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


class WeigherTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = FakePlacement(_providers())
        self.weigher = weighers.AcceleratorHostReservationWeigher(
            client=self.placement)
        self.hosts = [_host('a', HOST_A), _host('b', HOST_B),
                      _host('c', HOST_C)]

    def _raw(self, spec=None, hosts=None):
        objs = [nova_weights.WeighedHost(h, 0.0)
                for h in (hosts or self.hosts)]
        return self.weigher.weigh_objects(objs, spec or _spec())

    def _sorted(self, spec=None):
        handler = nova_weights.HostWeightHandler()
        return [w.obj.host for w in handler.get_weighed_objects(
            [self.weigher], self.hosts, spec or _spec())]

    def test_plain_request_weighs_down_free_accelerators(self):
        # A: two free GPUs; B: none; C: its only FPGA is in use.
        self.assertEqual([-2.0, 0.0, 0.0], self._raw())

    def test_hosts_with_free_accelerators_sort_last(self):
        self.assertEqual('a', self._sorted()[-1])

    def test_fewer_free_accelerators_weigh_more(self):
        self.placement.providers[GPU_2]['free'] = {}
        self.placement.providers[FPGA]['free'] = {'FPGA': 1}
        self.placement.providers[FPGA]['generation'] = 4
        # A: one free GPU, C: one free FPGA, B: none.
        self.assertEqual([-1.0, 0.0, -1.0], self._raw())

    def test_reserved_or_used_devices_are_not_free(self):
        # Placement answers "free" for what can give a unit: held back
        # (reserved = total) and allocated devices are not in the answer.
        for rp in (GPU_1, GPU_2):
            self.placement.providers[rp]['free'] = {}
        self.assertEqual([0.0, 0.0, 0.0], self._raw())

    def test_accelerator_request_is_neutral_and_asks_nothing(self):
        spec = _spec({'accel:device_profile': 'gpu'})
        self.assertEqual([0.0, 0.0, 0.0], self._raw(spec))
        self.assertEqual([], self.placement.calls)

    def test_placement_queries(self):
        self._raw()
        paths = self.placement.paths()
        self.assertEqual('/resource_providers?required=OWNER_CYBORG',
                         paths[0])
        # Inventories of the candidates' providers only (not OTHER's) ...
        self.assertEqual(sorted(
            '/resource_providers/%s/inventories' % rp
            for rp in (GPU_1, GPU_2, FPGA)), sorted(paths[1:4]))
        # ... then one query per accelerator resource class.
        self.assertEqual([
            '/resource_providers?required=OWNER_CYBORG&resources=FPGA:1',
            '/resource_providers?required=OWNER_CYBORG&resources=PGPU:1',
        ], paths[4:])
        self.assertEqual({'1.18'}, {c[1] for c in self.placement.calls})
        self.assertEqual({'req-global'},
                         {c[2] for c in self.placement.calls})

    def test_inventories_cached_per_generation(self):
        self._raw()
        self.placement.calls = []
        self._raw()
        # Next scheduling request: the list and one query per class.
        self.assertEqual(3, len(self.placement.calls))
        self.assertFalse(any('inventories' in p
                             for p in self.placement.paths()))
        # An inventory change bumps the generation: read again.
        self.placement.providers[GPU_1]['generation'] = 2
        self.placement.calls = []
        self._raw()
        self.assertEqual(['/resource_providers/%s/inventories' % GPU_1],
                         [p for p in self.placement.paths()
                          if 'inventories' in p])

    def test_usage_is_read_every_request(self):
        # Freeing a device (deleting an allocation) does not bump the
        # provider generation: free capacity is never cached.
        self.placement.providers[GPU_1]['free'] = {}
        self.placement.providers[GPU_2]['free'] = {}
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        self.placement.providers[GPU_1]['free'] = {'PGPU': 1}
        self.assertEqual([-1.0, 0.0, 0.0], self._raw())

    def test_no_accelerator_provider_among_candidates(self):
        hosts = [_host('b', HOST_B), _host('other-b', 'eeee')]
        self.assertEqual([0.0, 0.0], self._raw(hosts=hosts))
        self.assertEqual(['/resource_providers?required=OWNER_CYBORG'],
                         self.placement.paths())

    def test_placement_error_is_neutral(self):
        self.placement.fail = 503
        log = self.useFixture(fixtures.FakeLogger())
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        self.assertIn('weighing all hosts the same', log.output)

    def test_placement_unreachable_is_neutral(self):
        self.placement.fail = ks_exc.ConnectFailure('down')
        log = self.useFixture(fixtures.FakeLogger())
        self.assertEqual([0.0, 0.0, 0.0], self._raw())
        self.assertIn('down', log.output)


class MultiplierTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.weigher = weighers.AcceleratorHostReservationWeigher(
            client=FakePlacement(_providers()))

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
