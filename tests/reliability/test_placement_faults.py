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

"""Placement faults while reporting: conflicts, 5xx, lost responses and
timeouts are retried, and the next run reconciles.

A real Placement (openstack-placement's functional fixture, in this
process behind wsgi-intercept, one request at a time) sits behind
``FaultProxy`` (a loopback HTTP server in this process); an accel_backend
``Service`` in this process reports 16 GPUs of a generated sysfs tree to
the proxy with ``[placement] timeout = 1``.  ``discover_and_report()`` is
what the periodic loop calls: a run may fail, the next one must finish the
job.
"""

import os
import random
import re

import fixtures
import requests
from testtools import content

from accel_backend import conf as accel_conf
from accel_backend import service as service_mod
from tests import placement_fixture
from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability import test_crash
from tools.launch import accel_backend as launch_accel

GPUS = 16
HEADERS = {'x-auth-token': 'admin',
           'openstack-api-version': 'placement 1.36'}
_RP_WRITE = re.compile(
    r'^/resource_providers/([0-9a-f-]{36})/(inventories|traits)$')


@reliability.slow
class TestPlacementFaults(placement_fixture.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.upstream = self.placement.endpoint
        self.proxy = self.useFixture(rel_fixtures.FaultProxy(self.upstream))
        self.compute_rp = self.raw('POST', '/resource_providers',
                                   {'name': rel_fixtures.HOST})['uuid']
        tmp = self.useFixture(fixtures.TempDir()).path
        sysfs = os.path.join(tmp, 'sysfs')
        rel_fixtures.write_many_gpus(sysfs, GPUS)
        path = os.path.join(tmp, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(launch_accel.config(
                self.proxy.endpoint, 'http://127.0.0.1:9/v2.1', sysfs,
                [rel_fixtures.MANY_GPUS_SPEC],
                DEFAULT={'host': rel_fixtures.HOST, 'state_path': tmp},
                binding={'workers': 4},
                discovery={'report_interval': 60},
                placement={'timeout': 1},
                nova={'event_retry_interval': 0.5,
                      'event_retry_timeout': 600}))
        self.service = service_mod.Service(
            accel_conf.new_conf(config_files=[path]))
        self.addCleanup(self.service.stop)
        self.runs = []

    def raw(self, method, path, body=None):
        resp = requests.request(method, self.upstream + path, json=body,
                                headers=HEADERS)
        self.assertLess(resp.status_code, 300, resp.text)
        return resp.json() if resp.content else None

    def report_until_done(self, max_runs=40):
        """Run the periodic job until a run succeeds; returns the runs
        (the failed ones' errors, then 'ok')."""
        for _ in range(max_runs):
            try:
                self.service.discover_and_report()
            except Exception as e:
                self.runs.append(type(e).__name__)
                continue
            self.runs.append('ok')
            return self.runs
        self.fail('no successful report in %d runs: %s' % (max_runs,
                                                           self.runs))

    def assert_reconciled(self):
        # Requests the reporter timed out on may still be running.
        self.proxy.drain()
        rps = self.raw('GET', '/resource_providers?in_tree=%s' %
                       self.compute_rp)['resource_providers']
        children = [rp for rp in rps if rp['uuid'] != self.compute_rp]
        self.assertEqual(GPUS, len(children))
        for rp in children:
            inv = self.raw('GET', '/resource_providers/%s/inventories' %
                           rp['uuid'])['inventories']
            self.assertEqual(1, inv['PGPU']['total'])
            self.assertEqual(0, inv['PGPU']['reserved'])
            traits = set(self.raw('GET', '/resource_providers/%s/traits' %
                                  rp['uuid'])['traits'])
            self.assertLessEqual({'OWNER_CYBORG', 'CUSTOM_A100'}, traits)
            self.assertEqual([], [t for t in traits
                                  if t.startswith('CUSTOM_FOREIGN')])
        # The cache agrees with Placement: a faultless run writes nothing.
        self.proxy.rule = None
        before = len(self.proxy.log)
        self.service.discover_and_report()
        self.proxy.drain()
        writes = [e for e in self.proxy.log[before:] if e[0] != 'GET']
        self.assertEqual([], writes)

    def conflict_maker(self, times):
        """``before`` action: someone else writes the provider's traits
        first (so our write is a real generation conflict), ``times``
        times per provider and kind of write."""
        done = {}
        for n in range(times + 1):
            self.raw('PUT', '/traits/CUSTOM_FOREIGN_%d' % n)

        def rule(method, path):
            m = _RP_WRITE.match(path)
            if method != 'PUT' or not m or done.get(path, 0) >= times:
                return None
            n = done[path] = done.get(path, 0) + 1
            rp_uuid = m.group(1)

            def bump():
                cur = self.raw('GET', '/resource_providers/%s/traits' %
                               rp_uuid)
                # A different set each time (Placement does not bump
                # the generation for a no-op write).
                theirs = {t for t in cur['traits']
                          if not t.startswith('CUSTOM_FOREIGN_')}
                self.raw('PUT', '/resource_providers/%s/traits' % rp_uuid,
                         {'resource_provider_generation':
                          cur['resource_provider_generation'],
                          'traits': sorted(theirs | {
                              'CUSTOM_FOREIGN_%d' % n})})
            return ('before', bump)
        return rule

    def statuses(self):
        out = {}
        for _, _, status, _ in self.proxy.log:
            out[status] = out.get(status, 0) + 1
        return out

    def finish(self, name):
        figures = {'runs': self.runs, 'statuses': self.statuses(),
                   'requests': len(self.proxy.log)}
        self.addDetail('figures', content.json_content(figures))
        test_crash.record_result('placement_' + name, figures)

    def test_generation_conflicts_retried_in_the_run(self):
        # Three conflicts per write: within the reporter's 4 tries.
        self.proxy.rule = self.conflict_maker(3)
        self.assertEqual(['ok'], self.report_until_done())
        self.assertGreaterEqual(self.statuses().get(409, 0), GPUS * 3)
        self.assert_reconciled()
        self.finish('conflicts_3_per_write')

    def test_endless_conflicts_reconciled_next_run(self):
        self.proxy.rule = self.conflict_maker(10)
        runs = self.report_until_done()
        self.assertIn('PlacementError', runs)
        # Each run tries every provider 4 times (10 conflicts on the
        # inventory, then 10 on the traits: 3 + 3 runs at most); a busy
        # provider used to stop the run for all the others (16 times
        # more runs).
        self.assertLessEqual(len(runs), 6, runs)
        self.assert_reconciled()
        self.finish('conflicts_10_per_write')

    def test_5xx_retried_next_run(self):
        rnd = random.Random(1)
        self.proxy.rule = lambda m, p: (
            ('status', rnd.choice((500, 502, 503))) if m != 'GET' and
            rnd.random() < 0.15 else None)
        runs = self.report_until_done()
        self.assertIn('PlacementError', runs)
        self.assert_reconciled()
        self.finish('5xx_15pct_writes')

    def test_lost_responses_reconciled(self):
        # The write happens; the client is told it failed.
        rnd = random.Random(2)
        self.proxy.rule = lambda m, p: (
            ('lost', 500) if m != 'GET' and rnd.random() < 0.2 else None)
        runs = self.report_until_done()
        self.assertIn('PlacementError', runs)
        self.assert_reconciled()
        self.finish('lost_responses_20pct_writes')

    def test_timeouts_reconciled(self):
        # The client gives up after 1 s; the request still completes.
        rnd = random.Random(3)
        self.proxy.rule = lambda m, p: (
            ('sleep', 1.5) if rnd.random() < 0.04 else None)
        runs = self.report_until_done()
        self.assertTrue(any(r != 'ok' for r in runs), runs)
        self.assert_reconciled()
        self.finish('timeouts_4pct')

    def test_everything_at_once(self):
        rnd = random.Random(4)
        conflicts = self.conflict_maker(2)

        def rule(method, path):
            x = rnd.random()
            if x < 0.05:
                return ('status', 503)
            if x < 0.10 and method != 'GET':
                return ('lost', 502)
            if x < 0.12:
                return ('sleep', 1.5)
            return conflicts(method, path)
        self.proxy.rule = rule
        self.report_until_done(max_runs=60)
        self.assert_reconciled()
        self.finish('mixed_faults')
