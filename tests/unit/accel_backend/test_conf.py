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

"""accel_backend's configuration: independent ConfigOpts, list_opts."""

import fixtures
import testtools

from accel_backend import conf
from tests.unit.accel_backend import base


class ConfTest(testtools.TestCase):

    def test_overrides_stay_in_their_conf(self):
        a = conf.new_conf()
        b = conf.new_conf()
        a.set_override('sysfs_root', '/recorded', group='discovery')
        a.set_override('auth_strategy', 'noauth', group='api')
        self.assertEqual('/recorded', a.discovery.sysfs_root)
        self.assertEqual('/sys/bus/pci/devices', b.discovery.sysfs_root)
        self.assertEqual('keystone', b.api.auth_strategy)

    def test_list_opts_names_every_group(self):
        groups = {g if isinstance(g, str) else g.name
                  for g, _ in conf.list_opts()}
        self.assertLessEqual({'DEFAULT', 'api', 'placement', 'nova',
                              'discovery', 'binding'}, groups)

    def test_deprecated_binding_modes_read_as_their_new_names(self):
        log = self.useFixture(fixtures.FakeLogger(name='accel_backend.conf'))
        for old, new in (('local', 'inline'), ('rpc', 'agents'),
                         ('inline', 'inline'), ('agents', 'agents')):
            c = base.make_conf(self, binding={'mode': old})
            self.assertEqual(new, conf.binding_mode(c))
        self.assertIn('mode = local is deprecated; use mode = inline',
                      log.output)
        self.assertIn('mode = rpc is deprecated; use mode = agents',
                      log.output)
        self.assertNotIn('mode = inline is deprecated', log.output)
