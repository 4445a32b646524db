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

"""MIG slices in Placement (``accel_backend.agent.mig.inventory``): the
workload of ``test_mig_planner`` played through openstack-placement in
this process.  A tenant takes a slice with ``PUT
/allocations/<consumer>`` on a candidate, the host marks the GI in use,
a release deletes the allocation; a request without a candidate has the
planner repartition idle GPUs (no GI in use on the host and no
allocation in Placement, both checked) and ``sync`` update Placement.
After every operation Placement's providers, inventories and usages are
checked against the simulated host.
"""

import collections
import logging
import time

import fixtures
from oslo_utils import uuidutils

from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import inventory
from accel_backend.agent.mig import planner
from accel_backend.agent.mig import profiles
from accel_backend.agent.mig import traits as mig_traits
from tests.unit.accel_backend import test_mig_placement as tmpl
from tests.unit.accel_backend import test_mig_planner as tmp

H200 = tmpl.H200
HOST = tmpl.HOST
PROJECT = tmpl.PROJECT
USER = tmpl.USER


class Cloud:
    """The randomized run's host, tenants and checks (see the module
    docstring); ``seen`` counts what happened and every violation."""

    def __init__(self, test):
        self.test = test
        self.client = test.client
        self.checker = test.checker
        self.cn = test.cn
        self.models = {g: H200 for g in range(tmp.GPUS)}
        self.host = mig_host.SimulatedMigHost(self.models)
        self.in_use = set()
        self.held = {}      # tenant -> (consumer, gpu, gi id, rp uuid)
        self.state = inventory.SyncState()
        self.seen = collections.Counter()
        self.cache = {}     # the checker's: uuid -> (generation, inv, traits)
        self.kinds = collections.Counter()   # mismatches by kind

    def sync(self):
        result = inventory.sync(self.client, HOST, self.cn, self.host,
                                self.in_use, self.state)
        allocated = {h[3] for h in self.held.values()}
        self.seen['deleted_allocated'] += len(
            set(result['deleted']) & allocated)
        self.seen['provider_writes'] += sum(
            len(result[k]) for k in ('created', 'updated', 'deleted'))

    def take(self, profile):
        resp = self.client.get(
            '/allocation_candidates?resources=%s:1&required=%s,%s' % (
                mig_traits.SLICE_RC, mig_traits.profile_trait(profile),
                mig_traits.model_trait(H200)), ok=(200, 400))
        # 400: a resource class or trait nobody created yet.
        cands = {rp for req in resp.json()['allocation_requests']
                 for rp in req['allocations']} if resp.ok else set()
        best = None   # test_mig_planner.take's choice, among candidates
        for gpu in self.host.gpus():
            gis = self.host.instances(gpu)
            busy = sum(1 for gi in gis if (gpu, gi.id) in self.in_use)
            for gi in gis:
                uuid = inventory.provider_uuid(HOST, gpu, gi.start)
                if gi.profile == profile and uuid in cands:
                    if best is None or busy > best[0]:
                        best = (busy, gpu, gi.id, uuid)
                    break
        return best and best[1:]

    def repartition(self, profile):
        idle = inventory.idle_gpus(self.client, HOST, self.cn, self.host,
                                   self.in_use)
        free = inventory.free_providers(self.client, self.cn)
        now = tmp.instances(self.host)
        # Busy for the planner: in use on the host, or without a free
        # unit in Placement.
        busy = self.in_use | {
            (gpu, gi.id) for gpu, gis in now.items() for gi in gis
            if inventory.provider_uuid(HOST, gpu, gi.start) not in free}
        the_plan = planner.plan(now, self.models, busy, tmp.ALLOWED,
                                {profile: 1})
        touched = {s.gpu for s in the_plan.steps}
        allocated = {h[1] for h in self.held.values()}
        in_use = {gpu for gpu, _ in self.in_use}
        self.seen['busy_gpu_touched'] += len(
            touched - set(idle) | touched & (allocated | in_use))
        if touched - set(idle):
            return
        self.seen['repartitions'] += len(touched)
        planner.execute(self.host, the_plan)
        self.sync()

    def request(self, tenant, profile):
        self.seen['requests'] += 1
        got = self.take(profile)
        if got is None:
            self.seen['misses'] += 1
            self.repartition(profile)
            got = self.take(profile)
        if got is None:
            return
        gpu, gi_id, uuid = got
        consumer = uuidutils.generate_uuid()
        self.client.put('/allocations/%s' % consumer, {
            'allocations': {uuid: {'resources': {mig_traits.SLICE_RC: 1}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None})
        self.in_use.add((gpu, gi_id))
        self.held[tenant] = (consumer, gpu, gi_id, uuid)
        self.seen['served'] += 1
        self.sync()

    def release(self, tenant):
        if tenant not in self.held:
            return
        consumer, gpu, gi_id, _ = self.held.pop(tenant)
        self.client.delete('/allocations/%s' % consumer)
        self.in_use.discard((gpu, gi_id))
        self.sync()

    def check(self, full=False, last=False):
        """Placement against the host: providers, inventories, traits
        (re-read where the generation moved) and usages (the free units
        are exactly the GIs not in use, and the project's usage is the
        number of GIs in use: each of those holds its one unit).  A
        ``full`` check (every 100 operations) reads every provider's
        usages and every live tenant's allocation; the ``last`` re-reads
        every provider too."""
        seen = self.seen
        want = inventory.provider_tree(HOST, self.cn, self.host, self.in_use)
        for gpu in self.host.gpus():
            if not profiles.valid_layout(H200, self.host.layout(gpu)):
                seen['invalid_layouts'] += 1
        tree = {rp['uuid']: rp for rp in self.checker.get(
            '/resource_providers?in_tree=%s' % self.cn).json()[
                'resource_providers'] if rp['uuid'] != self.cn}
        for gone in set(self.cache) - set(tree):
            # A provider created again starts at generation 0 again.
            del self.cache[gone]
        if set(tree) != set(want):
            self.mismatch('tree')
            return
        for uuid, prov in want.items():
            rp = tree[uuid]
            cached = self.cache.get(uuid)
            if last or cached is None or cached[0] != rp['generation']:
                url = '/resource_providers/%s/' % uuid
                inv = self.checker.get(url + 'inventories').json()
                traits = self.checker.get(url + 'traits').json()
                cached = self.cache[uuid] = (
                    inv['resource_provider_generation'], inv['inventories'],
                    frozenset(traits['traits']))
            if (rp['name'], rp['parent_provider_uuid'], cached[1],
                    cached[2]) != (prov.name, self.cn, prov.inventories,
                                   prov.traits):
                self.mismatch('provider')
        free = inventory.free_providers(self.checker, self.cn)
        if free != {u for u, p in want.items()
                    if (p.gpu, p.gi_id) not in self.in_use}:
            self.mismatch('free')
        usages = self.checker.get('/usages?project_id=%s' % PROJECT).json()[
            'usages']
        if usages.get(mig_traits.SLICE_RC, 0) != len(self.in_use):
            self.mismatch('project_usage')
        if full:
            for uuid, prov in want.items():
                used = self.checker.get('/resource_providers/%s/usages' % (
                    uuid)).json()['usages'].get(mig_traits.SLICE_RC, 0)
                if used != (1 if (prov.gpu, prov.gi_id) in self.in_use
                            else 0):
                    self.mismatch('provider_usage')
            for consumer, gpu, gi_id, uuid in self.held.values():
                allocs = self.checker.get('/allocations/%s' % consumer
                                          ).json()['allocations']
                if list(allocs) != [uuid]:
                    self.mismatch('consumer')

    def mismatch(self, kind):
        self.seen['mismatches'] += 1
        self.kinds[kind] += 1

    def play(self, sequence):
        self.sync()
        for i, op in enumerate(sequence):
            if op[0] == 'request':
                self.request(op[1], op[2])
            else:
                self.release(op[1])
            self.seen['ops'] += 1
            last = i == len(sequence) - 1
            self.check(full=(i % 100 == 99 or last), last=last)


class TestRandomized(tmpl.Base):

    def setUp(self):
        super().setUp()
        # Some 10,000 requests: Placement's request log left out.
        self.useFixture(fixtures.FakeLogger(level=logging.WARNING))

    def test_thousand_operations_through_placement(self):
        seed, ops = 1, 1000
        cloud = Cloud(self)
        started = time.monotonic()
        calls, checks = self.client.calls, self.checker.calls
        cloud.play(tmp.workload(seed, ops))
        seen = cloud.seen
        elapsed = time.monotonic() - started
        reference = tmp.compare(seed, ops)
        print('%d operations (%d requests) through Placement in %.1f s: '
              '%d served (planner alone: %d; best static layout %s: '
              '%.3f), %d GPUs repartitioned, %d provider writes, '
              '%.1f agent and tenant Placement calls per operation '
              '(%.1f more of the checks)' % (
                  seen['ops'], seen['requests'], elapsed, seen['served'],
                  reference['dynamic_served'],
                  reference['best_static_layout'],
                  reference['best_static_share'], seen['repartitions'],
                  seen['provider_writes'],
                  (self.client.calls - calls) / seen['ops'],
                  (self.checker.calls - checks) / seen['ops']))
        self.assertEqual(ops, seen['ops'])
        self.assertEqual(0, seen['mismatches'], cloud.kinds)
        self.assertEqual(0, seen['invalid_layouts'])
        self.assertEqual(0, seen['busy_gpu_touched'])
        self.assertEqual(0, seen['deleted_allocated'])
        # Placement's candidates are exactly the free GIs: the same
        # requests are served as by the planner alone.
        self.assertEqual(reference['requests'], seen['requests'])
        self.assertEqual(reference['dynamic_served'], seen['served'])
        self.assertGreater(seen['repartitions'], 0)
        self.assertGreaterEqual(seen['served'] / seen['requests'],
                                reference['best_static_share'])
