"""``[metrics]``: a real scrape of ``/metrics`` (prometheus_client's own
HTTP server on a free port) after real work: discovery against a real
Placement, a bind, a cleaning, event deliveries to an unreachable Nova."""

import urllib.request

from prometheus_client import parser

from accel_backend.objects import arq as arq_obj
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

    def make_conf(self, cleaning=None, groups=None, **discovery):
        groups = dict({'metrics': self.METRICS}, **(groups or {}))
        return super().make_conf(cleaning=cleaning, groups=groups,
                                 **discovery)

    def test_off_by_default(self):
        svc = self.make_service(self.make_conf(groups={'metrics': {}}))
        svc.metrics.start()
        self.assertIsNone(svc.metrics.port)

    def test_counters_move_after_real_work(self):
        svc = self.make_service(recording=False)
        svc.metrics.start()
        self.addCleanup(svc.metrics.stop)
        before = scrape(svc.metrics.port)
        svc.report_pass()
        arq_uuid, state = self.bind(svc, GPU)
        self.assertEqual(arq_obj.BOUND, state)
        # Nova is unreachable in this test: the Bound event is retried.
        svc.notifier.send([('instance-1', arq_uuid, 'completed')])
        self.unbind(svc, arq_uuid)
        svc.cleaner.clean_pending()
        after = scrape(svc.metrics.port)

        def moved(name, **labels):
            return value(after, name, **labels) - value(before, name,
                                                        **labels)
        self.assertEqual(1, moved('accel_bind_seconds_count', host=HOST,
                                  resource_class='PGPU'))
        self.assertEqual(1, moved('accel_discovery_seconds_count',
                                  host=HOST, outcome='ok'))
        # Reads and writes of the report, by method and status.
        self.assertGreater(moved('accel_placement_request_seconds_count',
                                 host=HOST, method='GET', status='200'), 0)
        self.assertGreater(moved('accel_placement_request_seconds_count',
                                 host=HOST, method='PUT', status='200'), 0)
        self.assertEqual(1, moved('accel_cleaning_seconds_count',
                                  host=HOST, method='flr', outcome='ok'))
        self.assertGreater(moved('accel_event_delivery_seconds_count',
                                 host=HOST, outcome='retry'), 0)
        self.assertGreater(moved('accel_event_retries_total', host=HOST),
                           0)
        # Gauges from the database.
        self.assertEqual(1, value(after, 'accel_arqs', state='Unbound'))
        self.assertEqual(4, value(after, 'accel_devices', host=HOST,
                                  resource_class='PGPU', status='enabled',
                                  health='healthy'))
        # Never an instance or a project in a label.
        for name, labels in after:
            self.assertFalse({'instance', 'project', 'instance_uuid',
                              'project_id'} & {k for k, _ in labels}, name)

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
