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

"""``accel_backend.agent.discovery.sysfs.scan`` of a root it may not read:
refused, never "a host without devices".  As root the scan runs in a
forked child that has become nobody (``tests/unit/accel_backend/
test_sysfs.py`` has the other odd trees)."""

import os

import fixtures
import testtools

from accel_backend.agent.discovery import sysfs
from accel_backend import exception


class TestScanUnreadableRoot(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_root_without_read_permission_is_refused(self):
        # EACCES for real: a chmod 000 directory does not stop root
        # (CAP_DAC_OVERRIDE), so as root the scan runs in a child that
        # has become nobody.
        os.chmod(self.root, 0)
        self.addCleanup(os.chmod, self.root, 0o700)
        self.assertEqual('refused: Permission denied', self._scan_as_user())

    def _scan_as_user(self):
        """``sysfs.scan(self.root)`` as a user other than root: ``refused:
        <reason>`` or ``found <n>``."""
        if os.geteuid() != 0:
            return self._scan_outcome()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            code = 1
            try:
                os.close(read)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                os.write(write, self._scan_outcome().encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as f:
            outcome = f.read()
        self.assertEqual(0, os.waitpid(pid, 0)[1])
        return outcome

    def _scan_outcome(self):
        try:
            return 'found %d' % len(sysfs.scan(self.root))
        except exception.SysfsRootUnavailable as e:
            return 'refused: %s' % e.kwargs['reason']
