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

"""``accel_backend.periodic.AuditLoop``: when the audit runs.

The auditor here only counts its runs: the schedule is under test (the
audit itself is ``test_audit``'s).
"""

import threading
import time

import fixtures
import testtools

from accel_backend import periodic


class _Auditor:
    """Raises on its first run, returns its run number afterwards;
    records when its scope was checked."""

    def __init__(self):
        self.runs = []
        self.scope_checks = []
        self.second = threading.Event()

    def check_scope(self):
        self.scope_checks.append(time.monotonic())

    def run(self):
        self.runs.append(time.monotonic())
        if len(self.runs) == 1:
            raise RuntimeError('first run fails')
        self.second.set()
        return len(self.runs)


class AuditLoopTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())

    def test_first_run_after_one_interval_and_goes_on_after_error(self):
        auditor = _Auditor()
        loop = periodic.AuditLoop(auditor, 0.2)
        started = time.monotonic()
        loop.start()
        self.addCleanup(loop.stop)
        self.assertTrue(auditor.second.wait(10))
        self.assertGreaterEqual(auditor.runs[0] - started, 0.2)
        self.assertGreaterEqual(loop.last_report, 2)
        self.assertIn('first run fails', self.logger.output)
        # The [nova] credentials are checked once, at start.
        self.assertEqual(1, len(auditor.scope_checks))
        self.assertLess(auditor.scope_checks[0] - started, 0.2)

    def test_stop_is_prompt(self):
        auditor = _Auditor()
        loop = periodic.AuditLoop(auditor, 3600)
        loop.start()
        before = time.monotonic()
        loop.stop()
        self.assertLess(time.monotonic() - before, 2)
        self.assertFalse(loop._thread.is_alive())
        self.assertEqual([], auditor.runs)

    def test_interval_zero_starts_nothing(self):
        loop = periodic.AuditLoop(_Auditor(), 0)
        loop.start()
        self.assertIsNone(loop._thread)
        loop.stop()
