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

"""The start-up anchor (``benchmarks.startup_anchor``), accel_backend's
side, as CI runs it: one round of a real ``accel-backend`` process with
the fake driver reporting through the counting proxy to a real
Placement, with 2-second periods.  Cyborg 17's side needs its venv and
runs in the benchmark only.  Invariants, no timing:

* the provider Placement lists is Cyborg's fake device (FPGA, 16 units);
* the start-up report's calls are counted and include those up to
  "reported";
* a periodic report with nothing changed makes one Placement call (the
  ``?in_tree=`` read that checks the generations);
* the round leaves no provider behind.
"""

import fixtures
import testtools

from benchmarks import startup_anchor as anchor
from tools import fixtures as tools_fixtures
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx


class TestStartupAnchor(testtools.TestCase):

    def test_accel_backend_round(self):
        for name, value in (('PERIOD', 2), ('PERIODS', 2), ('SETTLE', 1.0)):
            self.useFixture(fixtures.MonkeyPatch(
                'benchmarks.startup_anchor.' + name, value))
        workdir = self.useFixture(fixtures.TempDir()).path
        env = {'workdir': workdir}
        for name, fx in (('placement', placement_fx.PlacementServer(
                workdir)), ('stub', nova_stub.NovaStubProcess(workdir))):
            env[name] = tools_fixtures.start(fx)
            self.addCleanup(fx.cleanUp)
        got = anchor.one_round(env, 'accel_backend', 0)
        self.addDetail('round', testtools.content.json_content(got))
        self.assertEqual(16, got['inventory']['FPGA']['total'])
        self.assertGreater(got['startup_s'], 0)
        self.assertGreaterEqual(got['calls_to_reported'], 3)
        self.assertGreaterEqual(got['calls_startup'],
                                got['calls_to_reported'])
        self.assertEqual(got['calls_startup'],
                         sum(got['startup_by_call'].values()))
        self.assertEqual(1.0, got['calls_per_report'])
        self.assertIsNone(got['rabbitmq_cpu_s'])
        self.assertEqual([], env['placement'].request(
            'GET', '/resource_providers?name=anchor-0')[
                'resource_providers'])
