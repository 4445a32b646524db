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

"""The sample files shipped in ``etc/`` are what the generators write
from the registered options and policy rules today (``tox -e
genconfig`` regenerates them)."""

import os

import fixtures
from oslo_config import generator as config_generator
from oslo_policy import generator as policy_generator
import testtools

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
