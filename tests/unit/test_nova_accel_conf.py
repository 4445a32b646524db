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

"""nova_accel's [nova_accel] options: registration, list_opts and the
sample ``oslo-config-generator --namespace nova_accel`` writes."""

import os
import subprocess
import sys

import nova.conf
from oslo_config import cfg
import testtools

import nova_accel
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


class GeneratorTest(testtools.TestCase):
    """What ``tox -e genconfig`` runs, against this source tree (the
    ``oslo.config.opts`` entry point comes from the installed bundle)."""

    def test_sample_lists_every_option(self):
        program = os.path.join(os.path.dirname(sys.executable),
                               'oslo-config-generator')
        root = os.path.dirname(os.path.dirname(nova_accel.__file__))
        env = dict(os.environ, PYTHONPATH=root)
        proc = subprocess.run([program, '--namespace', 'nova_accel'],
                              env=env, capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        sample = proc.stdout
        self.assertIn('[nova_accel]\n', sample)
        _, listed = _listed()
        for name in listed:
            self.assertIn('\n#%s = ' % name, sample)
        self.assertIn(
            '\n#accelerator_host_reservation_weight_multiplier = 1.0\n',
            sample)
        self.assertIn('\n#ignored_attach_handle_types = TEST_PCI\n', sample)
