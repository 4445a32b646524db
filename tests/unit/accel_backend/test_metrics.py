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

"""``[metrics]``: a real scrape of ``/metrics`` (prometheus_client's own
HTTP server on a free port) after real work: discovery against a real
Placement, a bind, a cleaning, event deliveries to an unreachable Nova."""

import os
import shutil
import urllib.request

from oslo_utils import uuidutils
from prometheus_client import parser

from accel_backend.conductor import failure
from accel_backend.db import api as db_api
from accel_backend.objects import arq as arq_obj
from accel_backend import service as service_mod
from accel_common import arq_states
from tests.unit.accel_backend import audit_fixtures
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend import test_dispatch
from tests.unit.accel_backend import test_lifecycle

GPU = test_lifecycle.GPU
HOST = test_lifecycle.COMPUTE


def scrape(port):
    """``{(name, frozenset(labels.items())): value}`` of one scrape."""
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=10) as resp:
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples}


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0)


class MetricsTest(test_lifecycle.ServiceTestBase):

    METRICS = {'enabled': 'true', 'port': '0'}

    def setUp(self):
        super().setUp()
        # Nova's external events API (wsgi-intercept): the binder's
        # deliveries end, so its one worker is free for the next bind.
        self.nova = audit_fixtures.NovaServers()
        self.NOVA_OPTS = audit_fixtures.intercept_nova(self, self.nova)

    def make_conf(self, cleaning=None, groups=None, **discovery):
        groups = dict({'metrics': self.METRICS}, **(groups or {}))
        return super().make_conf(cleaning=cleaning, groups=groups,
                                 **discovery)

    def test_off_by_default(self):
        svc = self.make_service(self.make_conf(groups={'metrics': {}}))
        svc.metrics.start()
        self.assertIsNone(svc.metrics.port)

    def moved(self, before, after):
        return lambda name, **labels: (value(after, name, **labels) -
                                       value(before, name, **labels))

    def assert_one_bind_and_discovery(self, moved):
        """One bind timed and one discovery pass counted (``moved``: the
        ``self.moved`` of the scrapes around the work)."""
        self.assertEqual(1, moved('accel_bind_seconds_count', host=HOST,
                                  resource_class='PGPU'))
        self.assertEqual(1, moved('accel_discovery_seconds_count',
                                  host=HOST, outcome='ok'))

    def test_counters_move_after_real_work(self):
        svc = self.make_service(recording=False)
        svc.metrics.start()
        self.addCleanup(svc.metrics.stop)
        before = scrape(svc.metrics.port)
        svc.report_pass()
        # Bound through the API's PATCH, as Nova binds; Nova refuses the
        # first delivery of the Bound event (503), takes the retry.
        self.nova.refuse = 1
        arq_uuid, state = self.api_bind(svc, GPU)
        self.assertEqual(arq_states.BOUND, state)
        self.wait_for(lambda: self.nova.events)
        self.api_unbind(svc, arq_uuid)
        svc.cleaner.clean_pending()
        after = scrape(svc.metrics.port)
        moved = self.moved(before, after)
        self.assert_one_bind_and_discovery(moved)
        # Reads and writes of the report, by method and status.
        self.assertGreater(moved('accel_placement_request_seconds_count',
                                 host=HOST, method='GET', status='200'), 0)
        self.assertGreater(moved('accel_placement_request_seconds_count',
                                 host=HOST, method='PUT', status='200'), 0)
        self.assertEqual(1, moved('accel_cleaning_seconds_count',
                                  host=HOST, method='flr', outcome='ok'))
        self.assertEqual(1, moved('accel_event_delivery_seconds_count',
                                  host=HOST, outcome='retry'))
        self.assertEqual(1, moved('accel_event_retries_total', host=HOST))
        self.assertEqual(1, moved('accel_event_delivery_seconds_count',
                                  host=HOST, outcome='accepted'))
        # Gauges from the database.
        self.assertEqual(1, value(after, 'accel_arqs', state='Unbound'))
        self.assertEqual(4, value(after, 'accel_devices', host=HOST,
                                  resource_class='PGPU', status='enabled',
                                  health='healthy'))
        # Never an instance or a project in a label.
        for name, labels in after:
            self.assertFalse({'instance', 'project', 'instance_uuid',
                              'project_id'} & {k for k, _ in labels}, name)

    def test_failures_by_reason(self):
        """Each way a bind fails, through the API's PATCH, counted under
        its reason; the audit's too; a failed cleaning under
        ``outcome=failed``."""
        svc = self.make_service(recording=False)
        svc.metrics.start()
        self.addCleanup(svc.metrics.stop)
        svc.report_pass()
        other, sick, spare = '0000:65:00.0', '0000:ca:00.0', '0000:e3:00.0'
        before = scrape(svc.metrics.port)

        def fails(reason, **kw):
            self.assertEqual(arq_states.BIND_FAILED,
                             self.api_bind(svc, **kw)[1], reason)
        # A provider no device of this host stands behind.
        fails('no_device', rp=uuidutils.generate_uuid())
        # The only handle is held by another ARQ.
        held, _ = self.api_bind(svc, GPU)
        fails('no_free_handle', address=GPU)
        # That ARQ lost its handle (a row changed by hand): the audit
        # fails it and releases the handle, which waits for its cleaning;
        # then the cleaning fails.
        with svc.db.transaction() as session:
            arq_obj.get(session, held).attach_handle_id = None
        self.assertEqual([held], svc.auditor.run().failed_arqs)
        fails('device_not_clean', address=GPU)
        # The kernel refuses the reset: a directory stands in for a
        # ``reset`` whose write returns an error.
        os.unlink(os.path.join(self.root, GPU, 'reset'))
        os.mkdir(os.path.join(self.root, GPU, 'reset'))
        svc.cleaner.clean_pending()
        fails('device_not_clean', address=GPU)
        # Fatal AER errors.
        with open(os.path.join(self.root, sick, 'aer_dev_fatal'), 'w') as f:
            f.write(sysfs_tree.aer_fatal_text(1))
        svc.discover_and_report()
        fails('device_unhealthy', address=sick)
        # Disabled by an operator.
        self.call(svc, '/v2/devices/%s/disable' %
                  test_lifecycle.device_uuid(spare), method='POST')
        fails('device_maintaining', address=spare)
        # Gone from the host while bound: kept as missing.
        self.assertEqual(arq_states.BOUND, self.api_bind(svc, other)[1])
        shutil.rmtree(os.path.join(self.root, other))
        svc.discover_and_report()
        fails('device_missing', address=other)

        after = scrape(svc.metrics.port)
        moved = self.moved(before, after)
        self.assertEqual(
            {'no_device': 1, 'no_free_handle': 1, 'bound_without_handle': 1,
             'device_not_clean': 2, 'device_unhealthy': 1,
             'device_maintaining': 1, 'device_missing': 1,
             'device_tainted': 0, 'numa_unfit': 0},
            {r: moved('accel_bind_failures_total', host=HOST,
                      resource_class='PGPU', reason=r)
             for r in failure.REASONS})
        self.assertEqual(1, moved('accel_cleaning_seconds_count', host=HOST,
                                  method='flr', outcome='failed'))
        self.assertEqual(2, moved('accel_bind_seconds_count', host=HOST,
                                  resource_class='PGPU'))

    def test_agent_serves_its_own_work(self):
        """An ``accel-backend-agent`` (agent role) serves ``/metrics``:
        its discovery pass (stored through the conductor) against
        Placement and the bind the API cast to the conductor move the
        counters (one registry per process); the database gauges are the
        API's."""
        conf = self.make_conf()
        db = db_api.Database.from_conf(conf)
        db.sync()
        db.dispose()
        transport = test_dispatch.fake_transport(self)
        api = service_mod.Service(self.make_conf(groups={'metrics': {}}),
                                  role=service_mod.API, transport=transport)
        self.addCleanup(api.stop)
        conductor = service_mod.Service(
            self.make_conf(groups={'metrics': {}}),
            role=service_mod.CONDUCTOR, transport=transport)
        self.addCleanup(conductor.stop)
        conductor.start()
        agent = service_mod.Service(conf, role=service_mod.AGENT,
                                    transport=transport)
        self.addCleanup(agent.stop)
        agent.metrics.start()
        before = scrape(agent.metrics.port)
        agent.start()  # metrics (again: no-op), RPC, one report pass
        self.wait_for(lambda: value(
            scrape(agent.metrics.port), 'accel_discovery_seconds_count',
            host=HOST, outcome='ok') > value(
            before, 'accel_discovery_seconds_count', host=HOST,
            outcome='ok'))
        arq_uuid, state = self.api_bind(api, GPU)
        self.assertEqual(arq_states.BOUND, state)
        self.wait_for(lambda: self.nova.events)
        after = scrape(agent.metrics.port)
        moved = self.moved(before, after)
        self.assert_one_bind_and_discovery(moved)
        self.assertGreater(moved('accel_placement_request_seconds_count',
                                 host=HOST, method='PUT', status='200'), 0)
        self.assertEqual(1, moved('accel_event_delivery_seconds_count',
                                  host=HOST, outcome='accepted'))
        self.assertFalse({n for n, _ in after} &
                         {'accel_arqs', 'accel_devices'})

    def test_stop_releases_the_gauges(self):
        # A second service of the process can serve its own gauges: the
        # first one's were unregistered (else: duplicated timeseries).
        for _ in range(2):
            svc = self.make_service(recording=False)
            svc.report_pass()
            svc.metrics.start()
            self.assertEqual(4, value(
                scrape(svc.metrics.port), 'accel_devices', host=HOST,
                resource_class='PGPU', status='enabled', health='healthy'))
            svc.metrics.stop()
            self.assertIsNone(svc.metrics.port)
