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

"""The one retry policy of the Placement calls (``agent.placement.retry``), the
tries of the reporter and of the tree view made with it, and
``agent.placement.reserved.ReservedUnits`` working from the callables it is
given alone."""

import threading

import testtools

from accel_backend.agent.placement import reserved
from accel_backend.agent.placement import retry
from accel_backend.common import provider_records
from accel_backend import exception
from tests.unit.accel_backend.test_report import COMPUTE
from tests.unit.accel_backend.test_report import ReporterTestBase


def _conflict():
    return exception.PlacementError(method='PUT', url='/x', status=409,
                                    body='generation conflicts')


class TestRetryPolicy(testtools.TestCase):

    def _run(self, call, **kw):
        for attempt in retry.retrying(**kw):
            with attempt:
                return call()

    def test_conflicts_tried_retries_times_then_the_last_raised(self):
        raised, rereads = [], []

        def call():
            raised.append(_conflict())
            raise raised[-1]
        e = self.assertRaises(exception.PlacementError, self._run, call,
                              reread=lambda: rereads.append(len(raised)))
        self.assertEqual(retry.RETRIES, len(raised))
        self.assertIs(raised[-1], e)
        # Between two tries, never before the first nor after the last.
        self.assertEqual(list(range(1, retry.RETRIES)), rereads)

    def test_other_errors_are_not_retried(self):
        calls = []

        def call():
            calls.append(1)
            raise exception.PlacementError(method='PUT', url='/x',
                                           status=503, body='down')
        self.assertRaises(exception.PlacementError, self._run, call)
        self.assertEqual([1], calls)

    def test_a_try_that_succeeds_ends_the_tries(self):
        left = [2]

        def call():
            if left[0]:
                left[0] -= 1
                raise _conflict()
            return 'done'
        self.assertEqual('done', self._run(call))
        self.assertEqual([0], left)


class TestReporterTries(ReporterTestBase):

    def test_inventory_in_use_then_conflicts_take_retries_puts(self):
        # inventory.inuse switches the body and is one of the tries;
        # every later PUT meets a concurrent writer.
        rec = self.record('0000:af:00.0')
        self.reporter.report([rec])
        self.allocate(rec.rp_uuid)
        url = '/resource_providers/%s/inventories' % rec.rp_uuid
        puts = []

        def hook(method, path):
            if method != 'PUT' or path != url:
                return
            puts.append(path)
            if len(puts) > 1:
                self.set_traits(rec.rp_uuid, self.traits(rec.rp_uuid) |
                                {'CUSTOM_CONCURRENT_%d' % len(puts)})
        self.client.before = hook
        e = self.assertRaises(
            exception.PlacementError, self.reporter.report,
            [self.record('0000:af:00.0', rc='CUSTOM_OTHER')])
        self.assertEqual(409, e.kwargs['status'])
        self.assertEqual(retry.RETRIES, len(puts))

    def test_compute_node_changing_at_each_read_is_looked_up_twice(self):
        # nova-compute renames its provider right after each lookup: the
        # view looks it up once more, then gives up.
        trees = []

        def rename(name):
            self.raw.put('/resource_providers/%s' % self.compute_uuid,
                         {'name': name})

        def hook(method, path):
            if path == '/resource_providers?name=%s' % COMPUTE:
                rename(COMPUTE)
            elif path.startswith('/resource_providers?in_tree='):
                trees.append(path)
                rename(COMPUTE + '-renamed')
        self.client.before = hook
        e = self.assertRaises(exception.ComputeNodeProviderNotFound,
                              self.reporter.report, [])
        self.assertIn(COMPUTE, str(e))
        self.assertEqual(2, len(trees))
        self.assertEqual([], self.client.writes())


class TestReservedUnitsAlone(testtools.TestCase):

    def test_works_from_the_callables_it_is_given(self):
        cached = provider_records.Cached(
            3, {'PGPU': provider_records.inventory(2, 0)}, set())
        refreshed, writes = [], []

        def put_inventories(rp_uuid, make_body):
            writes.append((rp_uuid, make_body(cached)))
            return True
        units = reserved.ReservedUnits(
            threading.RLock(), lambda rp: refreshed.append(rp) or cached,
            put_inventories, reserved_for={'rp1': 1}.get)
        self.assertTrue(units.set_reserved('rp1', False))
        self.assertTrue(units.sync_reserved('rp1'))
        self.assertFalse(units.sync_reserved('not-ours'))
        self.assertEqual(['rp1'], refreshed)
        want = {'inventories': {'PGPU': provider_records.inventory(2, 1)}}
        self.assertEqual([('rp1', want), ('rp1', want)], writes)
