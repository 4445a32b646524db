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

"""The shipped Prometheus alerting rules
(``etc/prometheus/accel-backend-alerts.yaml``) and Grafana dashboard
(``etc/grafana/accel-backend-dashboard.json``) against Prometheus' own
``promtool`` (Debian package ``prometheus``, bindep profile ``test``) and
against the metrics ``accel_backend.metrics`` registers:

* ``promtool check rules`` accepts the rules and ``promtool test rules``
  passes ``etc/prometheus/accel-backend-alerts.test.yaml``, which makes
  every alert fire;
* every metric an alert, a dashboard panel or a promtool input series
  names is one the code exports (names collected from the
  prometheus_client registry and the database collector, with the
  exposition suffixes of counters and histograms), and the input series
  carry the labels the code gives them.
"""

import json
import os
import re
import shutil
import subprocess

import fixtures
from oslo_utils import uuidutils
import testtools
import yaml

from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import metrics
from accel_common import arq_states

ETC = os.path.join(os.path.dirname(__file__), '..', '..', 'etc')
PROMETHEUS = os.path.join(ETC, 'prometheus')
RULES = 'accel-backend-alerts.yaml'
RULE_TESTS = 'accel-backend-alerts.test.yaml'
DASHBOARD = os.path.join(ETC, 'grafana', 'accel-backend-dashboard.json')

#: Labels Prometheus adds to what it scrapes (target labels).
SCRAPE_LABELS = {'instance', 'job'}
#: PromQL words that are not metric names (binary and modifier keywords).
KEYWORDS = {'and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on',
            'ignoring', 'group_left', 'group_right', 'atan2', 'inf', 'nan'}
#: Exposition suffixes per metric type (prometheus_client, OpenMetrics
#: text format: a counter ``x`` is exposed as ``x_total``).
SUFFIXES = {'counter': ('_total', '_created'),
            'histogram': ('_bucket', '_sum', '_count', '_created'),
            'summary': ('', '_sum', '_count', '_created')}


def seed_gauge_rows(db, host='compute1', state=arq_states.INITIAL):
    """Store one enabled, healthy device of ``host`` (resource class
    ``PGPU``) with a ``NoExecute`` taint and one ARQ of it in ``state``
    (default ``Initial``, which no binder resumes): rows that make
    ``accel_devices``, ``accel_device_taints`` and ``accel_arqs`` have
    one sample each.

    :param db: ``accel_backend.db.api.Database`` at the current schema.
    """
    with db.transaction() as session:
        device = models.Device(
            uuid=uuidutils.generate_uuid(), type='GPU', vendor='10de',
            model='T4', hostname=host, address='0000:af:00.0')
        session.add(device)
        session.flush()
        dep = models.Deployable(
            uuid=uuidutils.generate_uuid(), device_id=device.id,
            name='%s_gpu' % host, resource_class='PGPU')
        session.add(dep)
        session.flush()
        session.add(models.DeployableTaint(
            uuid=uuidutils.generate_uuid(), deployable_id=dep.id,
            function='', key='failed', effect='NoExecute'))
        session.add(models.ARQ(
            uuid=uuidutils.generate_uuid(), state=state,
            device_profile_name='gpu', device_profile_group_id=0,
            device_profile_group={'resources:PGPU': '1'}, hostname=host))


def exported_metrics(db):
    """``{exposed sample name: (family name, label names)}`` of what
    ``accel_backend.metrics`` registers, the database gauges included.

    :param db: a seeded ``Database`` (``seed_gauge_rows``).
    """
    labels = {}
    for obj in vars(metrics).values():
        # prometheus_client keeps a wrapper's label names there; the
        # database collector's families show theirs on their samples.
        if hasattr(obj, '_labelnames') and hasattr(obj, 'describe'):
            for family in obj.describe():
                labels[family.name] = set(obj._labelnames)
    out = {}
    for collector in (metrics.REGISTRY, metrics.DatabaseCollector(db)):
        for family in collector.collect():
            names = labels.get(family.name)
            if names is None:
                names = set()
                for sample in family.samples:
                    names.update(sample.labels)
            for suffix in SUFFIXES.get(family.type, ('',)):
                out[family.name + suffix] = (family.name, names)
    return out


def metric_names(expr):
    """The metric names a PromQL expression selects (str set): string
    literals, label matchers, ranges, grouping clauses and Grafana
    variables removed; identifiers called as functions or aggregations,
    keywords and numbers are not names.

    :param expr: PromQL (str).
    """
    expr = re.sub(r'\$\{[^}]*\}|\$\w+', '', expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    expr = re.sub(r'\{[^}]*\}', ' ', expr)
    expr = re.sub(r'\[[^\]]*\]', ' ', expr)
    expr = re.sub(r'\b(?:by|without|on|ignoring|group_left|group_right)'
                  r'\s*\([^)]*\)', ' ', expr)
    names = set()
    for match in re.finditer(
            r'(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?', expr):
        name, call = match.groups()
        if call or name.lower() in KEYWORDS:
            continue
        names.add(name)
    return names


def series_selector(text):
    """``(name, {label: value})`` of a promtool input series.

    :param text: ``name{label="value", ...}``.
    """
    match = re.fullmatch(r'\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*'
                         r'(?:\{(.*)\})?\s*', text)
    labels = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', match.group(2) or ''))
    return match.group(1), labels


def promtool():
    """Path of ``promtool``.

    :raises AssertionError: not installed (bindep's ``test`` profile
        installs Debian's ``prometheus``; the check must fail, not skip).
    """
    path = shutil.which('promtool')
    if path is None:
        raise AssertionError(
            'promtool is not installed: install the Debian package '
            '"prometheus" (bindep -b test lists it)')
    return path


class PromtoolTest(testtools.TestCase):

    def run_promtool(self, *args):
        proc = subprocess.run([promtool()] + list(args), cwd=PROMETHEUS,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode,
                         '%s\n%s' % (proc.stdout, proc.stderr))
        return proc.stdout

    def test_check_rules(self):
        out = self.run_promtool('check', 'rules', RULES)
        self.assertIn('SUCCESS: 9 rules found', out)

    def test_rule_tests_pass(self):
        self.assertIn('SUCCESS', self.run_promtool('test', 'rules',
                                                   RULE_TESTS))

    def test_every_alert_is_made_to_fire(self):
        with open(os.path.join(PROMETHEUS, RULES)) as f:
            alerts = {r['alert'] for g in yaml.safe_load(f)['groups']
                      for r in g['rules']}
        with open(os.path.join(PROMETHEUS, RULE_TESTS)) as f:
            tests = yaml.safe_load(f)
        self.assertEqual([RULES], tests['rule_files'])
        fired = {t['alertname'] for test in tests['tests']
                 for t in test.get('alert_rule_test', ())
                 if t['exp_alerts']}
        self.assertEqual(alerts, fired)


class MetricNamesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        db = db_api.Database('sqlite:///%s/a.sqlite' % tmp)
        self.addCleanup(db.dispose)
        db.sync()
        seed_gauge_rows(db)
        self.exported = exported_metrics(db)

    def test_the_database_gauges_and_suffixes_are_collected(self):
        self.assertEqual(('accel_arqs', {'state'}),
                         self.exported['accel_arqs'])
        self.assertEqual(
            ('accel_devices', {'host', 'resource_class', 'status',
                               'health'}), self.exported['accel_devices'])
        self.assertEqual('accel_bind_seconds',
                         self.exported['accel_bind_seconds_bucket'][0])
        self.assertEqual('accel_bind_failures',
                         self.exported['accel_bind_failures_total'][0])
        self.assertNotIn('accel_bind_failures', self.exported)

    def test_parser(self):
        self.assertEqual({'accel_bind_seconds_bucket'}, metric_names(
            'histogram_quantile(0.95, sum by (le, host) '
            '(rate(accel_bind_seconds_bucket{host=~"$host"}'
            '[$__rate_interval])))'))
        self.assertEqual({'a_b', 'c'}, metric_names(
            'max without (instance) (a_b offset 5m) > on (x) '
            'group_left (y) c and bool 1e3'))

    def assertExported(self, what, exprs):
        self.assertGreater(len(exprs), 5, what)
        unknown = {}
        for expr in exprs:
            names = metric_names(expr)
            self.assertTrue(names, 'no metric in %s: %r' % (what, expr))
            for name in names - set(self.exported):
                unknown[name] = expr
        self.assertEqual({}, unknown, '%s name metrics that '
                         'accel_backend.metrics does not export' % what)

    def test_alert_rules(self):
        with open(os.path.join(PROMETHEUS, RULES)) as f:
            groups = yaml.safe_load(f)['groups']
        self.assertExported('alerts', [r['expr'] for g in groups
                                       for r in g['rules']])

    def test_dashboard(self):
        with open(DASHBOARD) as f:
            panels = json.load(f)['panels']
        self.assertExported('dashboard panels', [
            t['expr'] for p in panels for t in p.get('targets', ())])

    def test_rule_test_series_as_exported(self):
        with open(os.path.join(PROMETHEUS, RULE_TESTS)) as f:
            tests = yaml.safe_load(f)['tests']
        series = [s['series'] for t in tests for s in t['input_series']]
        self.assertGreater(len(series), 5)
        for text in series:
            name, labels = series_selector(text)
            self.assertIn(name, self.exported, text)
            family, label_names = self.exported[name]
            self.assertEqual(label_names, set(labels) - SCRAPE_LABELS,
                             text)
