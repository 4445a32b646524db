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
them from etc/oslo-config-generator/), an operator's copy of the
configuration sample with only the lines the operator must set starts
the API's configuration, the systemd units start console scripts that
exist and reload with SIGHUP (which ``accel_backend.cmd.runner``
handles), and the Prometheus alerting rules and the Grafana dashboard
name only metrics that exist."""

import configparser
import json
import os
import re
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_policy import generator as policy_generator
import testtools
import yaml

from accel_backend.agent.discovery.drivers import mdev
from accel_backend.api import deploy
from accel_backend import conf as conf_mod
from accel_backend.db import api as db_api
from accel_backend import metrics
from accel_backend import notifications
from accel_backend import service_auth
from accel_backend import transports

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
ETC = os.path.join(ROOT, 'etc')
GENERATOR = os.path.join(ETC, 'oslo-config-generator')

#: The namespaces of etc/oslo-config-generator/accel-backend.conf: ours
#: and those of every library whose options an accel_backend service
#: registers and reads (see the comments of that file).
SERVICE_NAMESPACES = [
    'accel_backend', 'keystonemiddleware.auth_token', 'oslo.db', 'oslo.log',
    'oslo.messaging', 'oslo.middleware.cors', 'oslo.middleware.healthcheck',
    'oslo.middleware.http_proxy_to_wsgi', 'oslo.middleware.sizelimit',
    'oslo.policy', 'oslo.service.service']

#: Groups a service registers that the sample leaves out: nothing reads
#: them.  keystonemiddleware 13.0.1 registers oslo.cache's ``[cache]``
#: (auth_token/__init__.py, ``oslo_cache.configure``) but never builds
#: the region (``_create_oslo_cache`` is not called); oslo.messaging
#: 18.3.1's ``[oslo_messaging_metrics]`` and ``[oslo_messaging_tracing]``
#: (``accel_backend.transports``) are absent from its own ``list_opts``
#: and default to off.
UNLISTED_GROUPS = {'cache', 'oslo_messaging_metrics',
                   'oslo_messaging_tracing'}

#: oslo.config's own options: the command line's, and ``config_source``
#: (oslo.config's namespace, which Nova's and Placement's samples leave
#: out too).
UNLISTED_DEFAULTS = {('DEFAULT', name) for name in (
    'config_dir', 'config_file', 'config_source', 'shell_completion')}

#: What an operator sets in a copy of etc/accel-backend.conf.sample for
#: an API with Keystone, RabbitMQ and MySQL: (group, option) -> value;
#: every option has a commented line in the sample.
OPERATOR_LINES = {
    ('DEFAULT', 'host'): 'compute-1',
    ('DEFAULT', 'transport_url'):
        'rabbit://accel:secret@rabbit.example.org:5672/',
    ('database', 'connection'):
        'mysql+pymysql://accel:secret@db.example.org/accel_backend',
    ('discovery', 'mdev_types'): 'nvidia-222',
    ('mdev_<type>', 'device_addresses'): '0000:41:*',
}
for _group in ('keystone_authtoken', 'placement', 'nova'):
    OPERATOR_LINES.update({
        (_group, 'auth_type'): 'password',
        (_group, 'auth_url'): 'http://keystone.example.org/identity',
        (_group, 'username'): 'accel-' + _group,
        (_group, 'password'): 'secret',
        (_group, 'project_name'): 'service',
        (_group, 'user_domain_name'): 'Default',
        (_group, 'project_domain_name'): 'Default'})
OPERATOR_LINES[('keystone_authtoken', 'www_authenticate_uri')] = (
    'http://keystone.example.org/identity')


def generator_files():
    """``{path: parser}`` of the oslo-config-generator files in etc/."""
    files = {}
    for name in sorted(os.listdir(GENERATOR)):
        parser = configparser.ConfigParser(strict=False)
        # Several ``namespace`` lines: keep them all.
        with open(os.path.join(GENERATOR, name)) as f:
            parser.read_string(re.sub(
                r'^namespace = (.*)$', lambda m: 'namespace_%s = %s' % (
                    m.group(1), m.group(1)), f.read(), flags=re.M))
        files[os.path.join(GENERATOR, name)] = parser
    return files


def namespaces(parser):
    """The ``namespace`` values of a parsed generator file, in order."""
    return [v for k, v in parser['DEFAULT'].items()
            if k.startswith('namespace_')]


def generate(config_file, output):
    """Run oslo-config-generator on ``config_file`` writing ``output``.

    In a child process: the generator runs the ``oslo.config.opts.
    defaults`` hooks (``accel_backend.conf.library_defaults``), which
    change library defaults for the whole process.  The working tree is
    imported (the child's working directory comes first on its path).
    """
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator',
         '--config-file', config_file, '--output-file', output],
        cwd=ROOT, check=True, capture_output=True)


def uncomment(text, group, name, value):
    """``text`` (a sample) with the commented line of ``[group] name``
    replaced by ``name = value``; AssertionError when the sample has no
    such line."""
    start = re.search(r'^\[%s\]$' % re.escape(group), text, re.M)
    assert start, 'no [%s] in the sample' % group
    end = text.find('\n[', start.end())
    end = len(text) if end < 0 else end
    body, count = re.subn(r'^#%s = .*$|^#%s =$' % (
        re.escape(name), re.escape(name)), '%s = %s' % (name, value),
        text[start.start():end], count=1, flags=re.M)
    assert count == 1, 'no [%s] %s in the sample' % (group, name)
    return text[:start.start()] + body + text[end:]


def sample_options(text):
    """``{(group, option)}`` of the lines of a sample, set or not."""
    found, group = set(), None
    for line in text.splitlines():
        header = re.match(r'^\[(.+)\]$', line)
        if header:
            group = header.group(1)
            continue
        option = re.match(r'^#?([A-Za-z0-9_]+) =', line)
        if option:
            found.add((group, option.group(1)))
    return found


def registered_options(conf):
    """``{(group, option)}`` of every option registered on ``conf``
    (``'DEFAULT'`` for the default group)."""
    found = set()
    for key in conf:
        value = conf[key]
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            found.update((key, name) for name in value)
        else:
            found.add(('DEFAULT', key))
    return found


class _Service:
    """What ``deploy.make_app`` keeps of a service until a request comes:
    its configuration."""

    def __init__(self, conf):
        self.conf = conf


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
        files = generator_files()
        self.assertEqual(['accel-backend.conf', 'nova-accel.conf'],
                         sorted(os.path.basename(f) for f in files))
        for path, parser in files.items():
            name = os.path.basename(parser['DEFAULT']['output_file'])
            out = os.path.join(self.tmp, name)
            generate(path, out)
            self.assertCurrent(name, out)

    def test_generator_namespaces(self):
        files = {os.path.basename(k): namespaces(v)
                 for k, v in generator_files().items()}
        self.assertEqual(SERVICE_NAMESPACES, files['accel-backend.conf'])
        # nova.conf's other options are Nova's own sample's.
        self.assertEqual(['nova_accel'], files['nova-accel.conf'])

    def test_mdev_example_group_listed(self):
        groups = {getattr(g, 'name', g): opts
                  for g, opts in conf_mod.list_opts()}
        self.assertEqual(['device_addresses', 'max_instances'],
                         [o.name for o in groups['mdev_<type>']])

    def test_operator_copy_of_sample_starts(self):
        with open(os.path.join(ETC, 'accel-backend.conf.sample')) as f:
            text = f.read()
        for (group, name), value in OPERATOR_LINES.items():
            text = uncomment(text, group, name, value)
        text = text.replace('[mdev_<type>]', '[mdev_nvidia-222]')
        path = os.path.join(self.tmp, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = conf_mod.new_conf(config_files=[path])
        # What the API registers and reads when it starts: the pipeline
        # (keystonemiddleware loads the password plugin from
        # [keystone_authtoken] here and fails on a missing option),
        # oslo.messaging's transport (no connection until a cast) and
        # notifier, the mdev driver's per-type groups, the keystoneauth
        # clients of Placement and Nova (no request yet).
        deploy.make_app(conf, _Service(conf))
        transport = transports.get_rpc_transport(conf)
        self.addCleanup(transport.cleanup)
        notifications.Notifications(conf)
        mdev.register_type_opts(conf, conf.discovery.mdev_types)
        for group, service_type in (('placement', 'placement'),
                                    ('nova', 'compute')):
            service_auth.adapter_from_conf(conf, group, service_type)
        for (group, name), value in OPERATOR_LINES.items():
            group = group.replace('<type>', 'nvidia-222')
            got = (conf[name] if group == 'DEFAULT' else
                   conf[group][name])
            self.assertEqual(value, ','.join(got) if isinstance(
                got, list) else got, (group, name))
        # Every option the service registered is in the sample.
        registered = {(g, n) for g, n in registered_options(conf)
                      if g not in UNLISTED_GROUPS and g != 'mdev_nvidia-222'}
        self.assertEqual(set(), registered - UNLISTED_DEFAULTS -
                         sample_options(text))
        # The groups left out are registered indeed (none is stale).
        self.assertEqual(set(), UNLISTED_GROUPS - {
            g for g, _ in registered_options(conf)})

    def test_policy_sample(self):
        out = os.path.join(self.tmp, 'policy.yaml')
        # A conf of its own: the generator parses the command line into
        # the conf it is given (cfg.CONF by default), and a parsed global
        # CONF breaks every later Nova test of this worker.
        policy_generator.generate_sample(args=[
            '--namespace', 'accel_backend', '--output-file', out],
            conf=cfg.ConfigOpts())
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
