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

"""The files shipped in ``etc/`` agree with the code: the sample
configuration and policy files are what the generators write from the
registered options and rules today (``tox -e genconfig`` regenerates
them), the systemd units start console scripts that exist and reload with
SIGHUP (which ``accel_backend.cmd.runner`` handles), and the Prometheus
alerting rules and the Grafana dashboard name only metrics that
exist."""

import configparser
import json
import os
import re

import fixtures
from oslo_config import generator as config_generator
from oslo_policy import generator as policy_generator
import testtools
import yaml

from accel_backend.db import api as db_api
from accel_backend import metrics

ETC = os.path.join(os.path.dirname(__file__), '..', '..', 'etc')


class SamplesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def assertCurrent(self, name, generated):
        with open(os.path.join(ETC, name)) as f:
            shipped = f.read()
        with open(generated) as f:
            self.assertEqual(f.read(), shipped,
                             'etc/%s is out of date: run tox -e genconfig'
                             % name)

    def test_configuration_samples(self):
        for name, namespace in (('accel-backend.conf.sample',
                                 'accel_backend'),
                                ('nova-accel.conf.sample', 'nova_accel')):
            out = os.path.join(self.tmp, name)
            config_generator.main(args=['--namespace', namespace,
                                        '--output-file', out])
            self.assertCurrent(name, out)

    def test_policy_sample(self):
        out = os.path.join(self.tmp, 'policy.yaml')
        policy_generator.generate_sample(args=[
            '--namespace', 'accel_backend', '--output-file', out])
        self.assertCurrent('accel-backend.policy.yaml.sample', out)


class UnitsAndRulesTest(testtools.TestCase):

    def test_systemd_units(self):
        scripts = configparser.ConfigParser()
        scripts.read(os.path.join(ETC, '..', 'setup.cfg'))
        known = {line.split('=')[0].strip() for line in scripts.get(
            'options.entry_points', 'console_scripts').splitlines()
            if line.strip()}
        units = sorted(os.listdir(os.path.join(ETC, 'systemd')))
        self.assertEqual(['accel-backend-agent.service',
                          'accel-backend-api.service',
                          'accel-backend-conductor.service',
                          'accel-backend.service'], units)
        for unit in units:
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(os.path.join(ETC, 'systemd', unit))
            service = parser['Service']
            program = os.path.basename(service['ExecStart'].split()[0])
            self.assertEqual(unit[:-len('.service')], program)
            self.assertIn(program, known)
            self.assertEqual('/bin/kill -HUP $MAINPID',
                             service['ExecReload'])
            self.assertEqual('on-failure', service['Restart'])
            self.assertIn('--config-file /etc/accel-backend/'
                          'accel-backend.conf', service['ExecStart'])

    def test_alert_rules_and_dashboard_name_existing_metrics(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        db = db_api.Database('sqlite:///%s/a.sqlite' % tmp)
        self.addCleanup(db.dispose)
        db.sync()
        names = set()
        for collector in (metrics.REGISTRY,
                          metrics.DatabaseCollector(db)):
            for family in collector.collect():
                names.update(s.name for s in family.samples)
                names.add(family.name)
        # Counters and histograms appear once they have a sample.
        for family in metrics.REGISTRY.collect():
            if family.type == 'counter':
                names.add(family.name + '_total')
            elif family.type == 'histogram':
                names.update(family.name + suffix
                             for suffix in ('_count', '_sum', '_bucket'))
        with open(os.path.join(ETC, 'prometheus',
                               'accel-backend-alerts.yaml')) as f:
            rules = yaml.safe_load(f)['groups'][0]['rules']
        with open(os.path.join(ETC, 'grafana',
                               'accel-backend-dashboard.json')) as f:
            panels = json.load(f)['panels']
        for name, exprs in (
                ('alerts', [r['expr'] for r in rules]),
                ('dashboard', [t['expr'] for p in panels
                               for t in p['targets']])):
            used = set()
            for expr in exprs:
                used.update(re.findall(r'\b(accel_[a-z_]+)', expr))
            self.assertGreater(len(used), 5, name)
            self.assertEqual(set(), used - names, name)
