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

"""A failed run's logs survive ``down`` (``tools.aio.run_logs``), and their
last errors are printed: CI keeps only what the run printed."""

import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from tools.aio import cloud
from tools.aio import config
from tools.aio import run_logs

OSLO_ERROR = [
    '2026-11-26 10:00:00.000 1 INFO nova.api [-] GET /v2.1/servers\n',
    '2026-11-26 10:00:01.000 1 ERROR nova.api [-] Unexpected error\n',
    '2026-11-26 10:00:01.000 1 ERROR nova.api Traceback (most recent call '
    'last):\n',
    '2026-11-26 10:00:01.000 1 ERROR nova.api   File "x.py", line 1\n',
    '2026-11-26 10:00:01.000 1 ERROR nova.api ValueError: boom\n',
    '2026-11-26 10:00:02.000 1 INFO nova.api [-] GET /v2.1/flavors\n',
]
PLAIN_TRACEBACK = [
    '[2026-11-26 10:00:00] [INFO] Booting worker with pid: 7\n',
    'Traceback (most recent call last):\n',
    '  File "/venv/gunicorn/workers/gthread.py", line 1, in run\n',
    '    self.handle()\n',
    'OSError: [Errno 24] Too many open files\n',
    '[2026-11-26 10:00:05] [INFO] Worker exiting (pid: 7)\n',
]


class TestLastError(unittest.TestCase):

    def log(self, lines):
        fd, path = tempfile.mkstemp(suffix='.log')
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as f:
            f.writelines(lines)
        return path

    def test_last_oslo_error_block(self):
        first = OSLO_ERROR[:3]
        self.assertEqual(OSLO_ERROR[1:5],
                         run_logs.last_error(self.log(first + OSLO_ERROR)))

    def test_plain_traceback_with_its_frames_and_exception(self):
        self.assertEqual(PLAIN_TRACEBACK[1:5],
                         run_logs.last_error(self.log(PLAIN_TRACEBACK)))

    def test_no_error(self):
        self.assertEqual([], run_logs.last_error(
            self.log([OSLO_ERROR[0], OSLO_ERROR[5]])))

    def test_long_error_keeps_its_start_and_end(self):
        lines = ['x ERROR y %d\n' % i for i in range(100)]
        got = run_logs.last_error(self.log(lines))
        self.assertEqual(run_logs.ERROR_LINES + 1, len(got))
        self.assertEqual(lines[:run_logs.ERROR_HEAD],
                         got[:run_logs.ERROR_HEAD])
        self.assertEqual('[... 60 lines ...]\n', got[run_logs.ERROR_HEAD])
        self.assertEqual(lines[-30:], got[run_logs.ERROR_HEAD + 1:])


class TestDownAfterFailure(unittest.TestCase):
    """``cloud.down(failed=True)`` on a run with no process left: the run
    directory goes, its logs (its own and L1's) stay in the cache."""

    def setUp(self):
        self.cache = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.cache, True)
        patcher = mock.patch.dict(os.environ,
                                  {'NOVA_ACCEL_AIO_CACHE': self.cache})
        patcher.start()
        self.addCleanup(patcher.stop)
        self.run_dir = tempfile.mkdtemp(dir=self.cache)
        layout = config.Layout(
            run_dir=self.run_dir, venv=os.path.join(self.cache, 'venv'),
            repo=cloud.REPO, ports={}, passwords={})
        for rel, name, lines in (('logs', 'nova-api.log', OSLO_ERROR),
                                 ('logs', 'keystone.log', OSLO_ERROR[:1]),
                                 ('nested/logs', 'nova-compute.log',
                                  PLAIN_TRACEBACK)):
            os.makedirs(os.path.join(self.run_dir, rel), exist_ok=True)
            with open(os.path.join(self.run_dir, rel, name), 'w') as f:
                f.writelines(lines)
        cloud.Cloud({'layout': vars(layout), 'processes': []}).save()
        with open(os.path.join(self.cache, 'current.json'), 'w') as f:
            json.dump({'run_dir': self.run_dir}, f)

    def down(self, failed):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cloud.down(failed=failed)
        return out.getvalue()

    def test_logs_kept_and_errors_printed(self):
        out = self.down(failed=True)
        self.assertFalse(os.path.exists(self.run_dir))
        kept = os.path.join(self.cache, 'failed-run')
        with open(os.path.join(kept, 'logs', 'nova-api.log')) as f:
            self.assertEqual(OSLO_ERROR, f.readlines())
        self.assertTrue(os.path.exists(os.path.join(
            kept, 'nested', 'logs', 'nova-compute.log')))
        self.assertIn('its logs are kept in %s' % kept, out)
        self.assertIn('--- the last error in logs/nova-api.log ---\n' +
                      ''.join(OSLO_ERROR[1:5]), out)
        self.assertIn('--- the last error in nested/logs/nova-compute.log '
                      '---\n' + ''.join(PLAIN_TRACEBACK[1:5]), out)
        self.assertNotIn('keystone.log', out)

    def test_a_later_failure_replaces_the_kept_logs(self):
        stale = os.path.join(self.cache, 'failed-run', 'logs', 'old.log')
        os.makedirs(os.path.dirname(stale))
        open(stale, 'w').close()
        self.down(failed=True)
        self.assertFalse(os.path.exists(stale))

    def test_success_keeps_nothing(self):
        out = self.down(failed=False)
        self.assertFalse(os.path.exists(self.run_dir))
        self.assertFalse(os.path.exists(os.path.join(self.cache,
                                                     'failed-run')))
        self.assertNotIn('kept', out)

    def test_an_unreadable_log_does_not_stop_down(self):
        unreadable = os.path.join(self.run_dir, 'logs', 'postgresql.log')
        os.symlink('/nonexistent/postgresql.log', unreadable)
        out = self.down(failed=True)
        self.assertFalse(os.path.exists(self.run_dir))
        self.assertIn('could not copy all of', out)
        self.assertIn('--- the last error in logs/nova-api.log ---', out)
