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

"""The sample generators of accel_backend's policy,
``oslopolicy-sample-generator`` and ``oslopolicy-policy-generator``, run as
the programs operators run (the rules themselves are
``tests/unit/accel_backend/test_policy.py``'s)."""

import importlib.metadata
import os
import subprocess
import sys

import testtools

from tests.unit.accel_backend.test_policy import EXPECTED_DEFAULTS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


class SampleGeneratorTest(testtools.TestCase):
    """``oslopolicy-sample-generator --namespace accel_backend`` (needs the
    package installed for its entry points: ``pip install --no-deps .``;
    the code itself comes from this tree through PYTHONPATH)."""

    def run_tool(self, tool, *args):
        eps = importlib.metadata.entry_points(group='oslo.policy.policies')
        if 'accel_backend' not in [ep.name for ep in eps]:
            self.fail('entry point oslo.policy.policies:accel_backend is '
                      'not registered: pip install --no-deps %s' % REPO)
        exe = os.path.join(os.path.dirname(sys.executable), tool)
        env = dict(os.environ, PYTHONPATH=REPO)
        proc = subprocess.run([exe] + list(args), capture_output=True,
                              text=True, env=env, timeout=120, cwd=REPO)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return proc.stdout

    def test_sample_lists_every_rule(self):
        out = self.run_tool('oslopolicy-sample-generator', '--namespace',
                            'accel_backend')
        for name, check in EXPECTED_DEFAULTS.items():
            self.assertIn('#"%s": "%s"' % (name, check), out)
        self.assertIn('# PATCH  /v2/accelerator_requests', out)

    def test_policy_generator_uses_the_enforcer_entry_point(self):
        out = self.run_tool('oslopolicy-policy-generator', '--namespace',
                            'accel_backend')
        self.assertIn('"accelerator:arq:update": "rule:service_token_api"',
                      out)
