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

"""The sample of nova_accel's [nova_accel] options that
``oslo-config-generator --namespace nova_accel`` writes, run as the
program ``tox -e genconfig`` runs (registration and ``list_opts``:
``tests/unit/test_nova_accel_conf.py``)."""

import os
import subprocess
import sys

import testtools

import nova_accel
from tests.unit.test_nova_accel_conf import _listed


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
