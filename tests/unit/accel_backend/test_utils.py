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

"""``accel_backend.utils.readable_while_idle``: what tells the HTTP pool
and the database pool that a kept-open connection was closed by its peer."""

import os
import socket

import testtools

from accel_backend import utils
from tests.unit.accel_backend import base


class TestReadableWhileIdle(testtools.TestCase):

    def _pair(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        return a, b

    def test_idle_open_connection_is_not_readable(self):
        a, _ = self._pair()
        self.assertFalse(utils.readable_while_idle(a))
        self.assertFalse(utils.readable_while_idle(a.fileno()))

    def test_peer_closed_or_sent_something(self):
        a, b = self._pair()
        b.sendall(b'FATAL: terminating connection')
        self.assertTrue(utils.readable_while_idle(a))
        c, d = self._pair()
        d.close()
        self.assertTrue(utils.readable_while_idle(c.fileno()))

    def test_invalid_descriptor_counts_as_closed(self):
        a, _ = self._pair()
        fd = os.dup(a.fileno())
        os.close(fd)
        self.assertTrue(utils.readable_while_idle(fd))
        self.assertTrue(utils.readable_while_idle(-1))

    def test_descriptor_above_select_limit(self):
        # select() refuses descriptors from FD_SETSIZE (1,024) on; an
        # idle connection there must not look closed.
        self.useFixture(base.FileLimit(1200))
        a, b = self._pair()
        high = os.dup2(a.fileno(), 1100)
        self.addCleanup(os.close, high)
        self.assertFalse(utils.readable_while_idle(high))
        b.sendall(b'x')
        self.assertTrue(utils.readable_while_idle(high))
