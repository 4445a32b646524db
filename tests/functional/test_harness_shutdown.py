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

"""The functional harness leaves the test process able to start Nova
services again, however slowly a nova-compute shuts down.

Nova 34's ``Service.stop()`` runs the manager's graceful shutdown in a
thread and, with the test default ``manager_shutdown_timeout = 0``,
returns without waiting for it. nova-compute's ``cleanup_host`` ends
with ``thread_pool_factory.shutdown_all_executors()``, which Nova's
``ServiceFixture`` replaces with a no-op only until its clean-up. On a
loaded machine the thread got there after that clean-up: the process's
executor factory was shut down for good and every later test of the
stestr worker failed in ``setUp`` (CI of stop 58: 10 tests). Here the
driver's ``cleanup_host`` is made 1 s slower, as a loaded machine makes
it, around one whole harness test (``AccelServersTestBase``, which sets
``manager_shutdown_timeout`` so that ``stop()`` waits for the thread).
"""

import threading
import time
import unittest
from unittest import mock

import testtools

from nova import thread_pool_factory

from nova_accel.virt.libvirt import driver as accel_driver
from tests.functional import base

SLOW_S = 1.0


class OneServerTest(base.AccelServersTestBase):
    """A harness test that boots and deletes one accelerator server."""

    def runTest(self):
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])
        server = self._create_server(
            flavor_id=self.accel_flavor('gpu'), networks='none',
            expected_state='ACTIVE')
        self._delete_server(server)


class HarnessShutdownTest(testtools.TestCase):

    def test_slow_compute_shutdown_leaves_executors_usable(self):
        real = accel_driver.LibvirtDriver.cleanup_host
        finished = threading.Event()

        def slow_cleanup_host(driver, host):
            time.sleep(SLOW_S)
            try:
                return real(driver, host)
            finally:
                finished.set()

        with mock.patch.object(accel_driver.LibvirtDriver, 'cleanup_host',
                               slow_cleanup_host):
            result = unittest.TestResult()
            OneServerTest().run(result)
        self.assertEqual([], [tb for _, tb in result.errors +
                              result.failures])
        # The compute's shutdown thread has reached (or passed) its end.
        self.assertTrue(finished.wait(SLOW_S + 30))
        time.sleep(0.5)
        # What the next test's conductor does first.
        executor = thread_pool_factory.get_executor(
            thread_pool_factory.ExecutorType.SCATTER_GATHER)
        self.addCleanup(thread_pool_factory.reset_all_executors)
        self.assertEqual(7, executor.submit(lambda: 7).result(timeout=10))
