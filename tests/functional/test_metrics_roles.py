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

"""``accel-backend-api`` and ``accel-backend-conductor`` on one host, as
real processes reading ONE configuration file with ``[metrics] enabled =
true`` and no ``[metrics] port``: each role serves ``/metrics`` on its own
default port (API 9732, conductor 9733), and the conductor serves the
database gauges ``accel_arqs`` and ``accel_devices``, which the shipped
alerts need also where the API runs under a WSGI server (and serves no
metrics).

The endpoints listen on a loopback address of their own (127.x.y.z, a
random one; Linux routes all of 127.0.0.0/8 to ``lo``), so the default
ports cannot clash with anything else running on the machine.  The
broker is oslo.messaging's ``fake://`` (each process its own: nothing
here is cast), the database a SQLite file.
"""

import os
import random
import urllib.request

import fixtures
from prometheus_client import parser
import testtools

from accel_backend import conf as accel_conf
from accel_backend.conf import metrics as metrics_conf
from accel_backend.db import api as db_api
from accel_backend import metrics
from tests.functional import test_prometheus_rules
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import process
from tools.launch import accel_backend as launch_accel

HOST = 'controller1'
WAIT = 45


def scrape(address, port):
    """``{(name, frozenset(labels.items())): value}`` of one scrape of
    ``http://address:port/metrics``."""
    with urllib.request.urlopen('http://%s:%d/metrics' % (address, port),
                                timeout=10) as resp:
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples}


class _Conductor(process.Process):
    """``accel-backend-conductor --config-file <config_file>``."""

    MUST_STOP_ON_SIGTERM = True
    STOP_TIMEOUT = 15

    def __init__(self, config_file, logdir):
        super().__init__()
        self.config_file, self.logdir = config_file, logdir

    def _setUp(self):
        self.start_process(
            'accel-backend-conductor',
            [process.venv_program('accel-backend-conductor'),
             '--config-file', self.config_file],
            process.code_env(), None, self.logdir)
        marker = 'accel-backend-conductor of host %s started' % HOST
        self.wait_until('the conductor started',
                        lambda: marker in self.log_text(), WAIT)


class OneHostOneConfigTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.address = '127.%d.%d.%d' % tuple(
            random.randint(1, 254) for _ in range(3))
        connection = 'sqlite:///%s/accel.sqlite' % self.tmp
        self.api_port = process.free_port()
        nowhere = 'http://127.0.0.1:9'
        self.config_file = os.path.join(self.tmp, 'accel-backend.conf')
        with open(self.config_file, 'w') as f:
            f.write(launch_accel.config(
                nowhere + '/placement', nowhere + '/v2.1', self.tmp, [],
                DEFAULT={'host': HOST, 'state_path': self.tmp,
                         'transport_url': 'fake://'},
                api={'host_ip': '127.0.0.1', 'port': self.api_port},
                database={'connection': connection},
                audit={'interval': 0},
                metrics={'enabled': 'true', 'host': self.address}))
        process.run(launch_accel.db_sync_argv(
            [process.venv_program('accel-backend-manage')],
            self.config_file), env=process.code_env())
        db = db_api.Database(connection)
        self.addCleanup(db.dispose)
        test_prometheus_rules.seed_gauge_rows(db, host='compute1')

    def test_api_and_conductor_serve_metrics_on_their_own_ports(self):
        api = self.useFixture(accel_fx.AccelBackendServer(
            config_file=self.config_file, port=self.api_port,
            program='accel-backend-api', workdir=self.tmp, host=HOST))
        conductor = self.useFixture(_Conductor(self.config_file, self.tmp))
        api_port = metrics_conf.PORTS['api']
        conductor_port = metrics_conf.PORTS['conductor']
        # Existing deployments keep the API's port; the conductor's is
        # another one.
        self.assertEqual((9732, 9733), (api_port, conductor_port))
        self.assertIn('Metrics at http://%s:%d/metrics' % (
            self.address, conductor_port), conductor.log_text())
        self.assertIn('Metrics at http://%s:%d/metrics' % (
            self.address, api_port), api.all_logs())

        from_api = scrape(self.address, api_port)
        from_conductor = scrape(self.address, conductor_port)
        for samples in (from_api, from_conductor):
            self.assertIn('process_start_time_seconds',
                          {name for name, _ in samples})
        device = frozenset({'host': 'compute1', 'resource_class': 'PGPU',
                            'status': 'enabled',
                            'health': 'healthy'}.items())
        arq = frozenset({'state': 'Initial'}.items())
        self.assertEqual(1, from_conductor.get(('accel_devices', device)))
        self.assertEqual(1, from_conductor.get(('accel_arqs', arq)))


class PortOptionTest(testtools.TestCase):
    """``[metrics] port``: unset, the role's port; set, every role's."""

    def conf(self, text):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(text)
        return accel_conf.new_conf(config_files=[path])

    def ports(self, conf):
        return {role: metrics.Endpoint(conf, default_port=port)
                .configured_port
                for role, port in metrics_conf.PORTS.items()}

    def test_unset_each_role_its_own(self):
        ports = self.ports(self.conf('[metrics]\nenabled = true\n'))
        self.assertEqual({'embedded': 9732, 'api': 9732, 'conductor': 9733,
                          'agent': 9734}, ports)

    def test_set_applies_to_every_role(self):
        ports = self.ports(self.conf('[metrics]\nport = 9800\n'))
        self.assertEqual({9800}, set(ports.values()))
        self.assertEqual({0}, set(self.ports(self.conf(
            '[metrics]\nport = 0\n')).values()))
