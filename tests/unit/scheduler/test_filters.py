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

"""``AcceleratorNumaFitFilter``: which groups want locality (request
spec and profile), which candidates and hosts it keeps, and that it calls
accel_backend at most once per request and never without locality.
Through Nova's scheduler and a real Placement:
``tests/functional/test_numa_fit_filter.py``."""

import types

from nova import objects
from nova.scheduler import filters as nova_filters
import testtools

from nova_accel.cyborg_client import exception as accel_exc
from nova_accel.scheduler import filters

objects.register_all()

A, B, OTHER = 'rp-a', 'rp-b', 'rp-other'


def _group(index, count, *traits, requester=None):
    return objects.RequestGroup(
        requester_id=requester or 'device_profile_%d' % index,
        resources={'PGPU': count}, required_traits=set(traits),
        use_same_provider=True)


def _spec(*groups, profile='p'):
    return objects.RequestSpec(
        requested_resources=list(groups), scheduler_hints={},
        flavor=objects.Flavor(extra_specs={filters.PROFILE_SPEC: profile}))


def _host(name, *rps):
    """A host state whose candidates map group 0 to each of ``rps``."""
    return types.SimpleNamespace(host=name, allocation_candidates=[
        {'mappings': {'device_profile_0': [rp]}, 'allocations': {}}
        for rp in rps])


class _AccelBackend(object):
    """accel_backend as the filter sees it (the system boundary): fixed
    answers, and the calls counted."""

    def __init__(self, pools=None, local=(), error=None):
        self.pools, self.local, self.error = pools or {}, set(local), error
        self.calls = []

    def local_groups(self, name):
        self.calls.append(('profile', name))
        return self.local

    def free_by_numa_node(self):
        self.calls.append(('free',))
        if self.error:
            raise self.error
        return self.pools


class WishesTest(testtools.TestCase):

    def test_node_trait_and_local_groups(self):
        got = filters.wishes([
            _group(0, 4, 'CUSTOM_NUMA_NODE_1', 'CUSTOM_NVIDIA_H100'),
            _group(1, 2), _group(2, 3),
            _group(3, 1, 'CUSTOM_NUMA_NODE_0',
                   requester='device_profile_3' + 'a' * 36)], {2})
        self.assertEqual({'device_profile_0': filters.Wish(1, False, 4),
                          'device_profile_2': filters.Wish(None, True, 3)},
                         got)

    def test_profile_locals(self):
        self.assertEqual({1, 2}, filters.profile_locals([
            {'resources:PGPU': '1'},
            {'resources:PGPU': '4', 'accel:numa_local': 'true'},
            {'accel:numa_local': 'True'}, {'accel:numa_local': 'false'}]))
        self.assertEqual(set(), filters.profile_locals(None))

    def test_fits(self):
        free = {'0': 1, '1': 4}
        self.assertTrue(filters.fits(free, filters.Wish(1, False, 4)))
        self.assertFalse(filters.fits(free, filters.Wish(0, False, 2)))
        self.assertFalse(filters.fits(free, filters.Wish(2, False, 1)))
        self.assertTrue(filters.fits(free, filters.Wish(None, True, 4)))
        self.assertFalse(filters.fits(free, filters.Wish(None, True, 5)))


class FilterAllTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.filter = filters.AcceleratorNumaFitFilter()

    def run_filter(self, backend, spec, hosts):
        self.filter.service = backend
        return [h.host for h in self.filter.filter_all(iter(hosts), spec)]

    def test_node_trait_keeps_hosts_and_candidates_with_room(self):
        backend = _AccelBackend({A: {'0': 4, '1': 0}, B: {'0': 2, '1': 4}})
        two = _host('two', B, OTHER)
        got = self.run_filter(backend, _spec(_group(
            0, 4, 'CUSTOM_NUMA_NODE_0')), [_host('one', A), two])
        self.assertEqual(['one', 'two'], got)
        # host two keeps its provider not spanning nodes only
        self.assertEqual([[OTHER]], [c['mappings']['device_profile_0']
                                     for c in two.allocation_candidates])
        self.assertEqual([('profile', 'p'), ('free',)], backend.calls)

    def test_a_host_without_room_on_the_node_is_dropped(self):
        backend = _AccelBackend({A: {'0': 3, '1': 4}})
        self.assertEqual([], self.run_filter(backend, _spec(_group(
            0, 4, 'CUSTOM_NUMA_NODE_0')), [_host('one', A)]))

    def test_numa_local_from_the_profile(self):
        backend = _AccelBackend({A: {'0': 2, '1': 2}, B: {'0': 1, '1': 3}},
                                local={0})
        self.assertEqual(['b'], self.run_filter(
            backend, _spec(_group(0, 3)), [_host('a', A), _host('b', B)]))

    def test_no_locality_no_free_count_call(self):
        backend = _AccelBackend({A: {'0': 0, '1': 0}})
        hosts = [_host('h%d' % i, A) for i in range(5)]
        self.assertEqual(5, len(self.run_filter(
            backend, _spec(_group(0, 8)), hosts)))
        self.assertEqual([('profile', 'p')], backend.calls)

    def test_no_device_profile_no_call_at_all(self):
        backend = _AccelBackend()
        spec = objects.RequestSpec(
            requested_resources=[], scheduler_hints={},
            flavor=objects.Flavor(extra_specs={}))
        self.assertEqual(['a'], self.run_filter(backend, spec,
                                                [_host('a', A)]))
        self.assertEqual([], backend.calls)

    def test_one_call_for_many_hosts(self):
        backend = _AccelBackend({A: {'0': 4, '1': 4}})
        hosts = [_host('h%d' % i, A) for i in range(50)]
        self.assertEqual(50, len(self.run_filter(backend, _spec(_group(
            0, 4, 'CUSTOM_NUMA_NODE_1')), hosts)))
        self.assertEqual(1, backend.calls.count(('free',)))

    def test_service_down_passes_every_host(self):
        backend = _AccelBackend(
            {A: {'0': 0, '1': 0}},
            error=accel_exc.AcceleratorServiceUnavailable(reason='down'))
        self.assertEqual(['a'], self.run_filter(backend, _spec(_group(
            0, 4, 'CUSTOM_NUMA_NODE_0')), [_host('a', A)]))

    def test_rebuild_is_not_filtered(self):
        backend = _AccelBackend({A: {'0': 0, '1': 0}})
        spec = _spec(_group(0, 4, 'CUSTOM_NUMA_NODE_0'))
        spec.scheduler_hints = {'_nova_check_type': ['rebuild']}
        self.assertEqual(['a'], self.run_filter(backend, spec,
                                                [_host('a', A)]))
        self.assertEqual([], backend.calls)


class AllFiltersTest(testtools.TestCase):

    def test_nova_filters_and_ours_load_by_name(self):
        # What [filter_scheduler] available_filters names, loaded as Nova's
        # HostManager loads it.
        found = nova_filters.HostFilterHandler().get_matching_classes(
            ['nova_accel.scheduler.filters.all_filters'])
        names = {c.__name__ for c in found}
        self.assertIn('AcceleratorNumaFitFilter', names)
        self.assertIn('ComputeFilter', names)


class ProfileCacheTest(testtools.TestCase):

    class Service(filters._Service):
        """The filter's reader with the profile read counted."""

        def __init__(self):
            super().__init__()
            self.reads = 0

        def read_profile(self, name):
            self.reads += 1
            return {'groups': [{'resources:PGPU': '1'},
                               {'accel:numa_local': 'true'}]}

    def test_a_profile_is_read_once_per_ttl(self):
        service = self.Service()
        for now in (100.0, 100.0 + filters.PROFILE_TTL - 1):
            self.assertEqual({1}, service.local_groups('p', now=now))
        self.assertEqual(1, service.reads)
        service.local_groups('p', now=100.0 + filters.PROFILE_TTL)
        service.local_groups('q', now=100.0)
        self.assertEqual(3, service.reads)
