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

"""nova_accel's [nova_accel] options: registration and list_opts (the
sample ``oslo-config-generator --namespace nova_accel`` writes:
``tests/functional/test_nova_accel_conf.py``)."""

import nova.conf
from oslo_config import cfg
import testtools

from nova_accel import conf


def _listed():
    [(group, opts)] = conf.list_opts()
    return group, {o.dest: o for o in opts}


class ListOptsTest(testtools.TestCase):

    def test_every_registered_option_is_listed(self):
        group, listed = _listed()
        self.assertEqual('nova_accel', group.name)
        registered = set(nova.conf.CONF['nova_accel'].keys())
        self.assertEqual(registered, set(listed))
        self.assertIn('accelerator_host_reservation_weight_multiplier',
                      listed)

    def test_weigher_multiplier(self):
        _, listed = _listed()
        opt = listed['accelerator_host_reservation_weight_multiplier']
        self.assertIsInstance(opt, cfg.FloatOpt)
        self.assertEqual(1.0, opt.default)

    def test_registered_on_import_on_novas_conf(self):
        self.assertIs(nova.conf.CONF, conf.CONF)
        self.assertEqual(
            ['TEST_PCI'], conf.CONF.nova_accel.ignored_attach_handle_types)

    def test_register_is_idempotent(self):
        c = cfg.ConfigOpts()
        conf.register_opts(c)
        conf.register_opts(c)
        c([])
        self.assertEqual(
            1.0, c.nova_accel.accelerator_host_reservation_weight_multiplier)
