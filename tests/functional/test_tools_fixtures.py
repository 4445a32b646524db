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

"""The shared fixtures' own rules (``tools.fixtures``) that need child
processes: the benchmarks' Nova stub served by a child, and a stop
reaching a child's whole process group (the in-process stub:
``tests/unit/test_tools_fixtures.py``).
"""

import os
import socket
import time

import fixtures
import requests
import testtools

from tests.unit import test_tools_fixtures
from tools.fixtures import nova_stub
from tools.fixtures import process
from tools.fixtures import rabbitmq

_event = test_tools_fixtures._event
_two_on_one_connection = (
    test_tools_fixtures.TestNovaStubKeepAlive._two_on_one_connection)


class TestNovaStubProcess(testtools.TestCase):
    """The benchmarks' stub: ``NovaStub`` served by a child process, the
    events it takes brought back with the child's arrival times."""

    def test_events_come_back_with_the_childs_arrival_time(self):
        stub = nova_stub.NovaStubProcess()
        stub.setUp()
        try:
            self._check(stub)
        finally:
            stub.cleanUp()
        # SIGTERM ended it cleanly (exit 0), not the SIGKILL that follows.
        self.assertEqual(0, stub.proc.returncode)

    def _check(self, stub):
        self.assertNotEqual(os.getpid(), stub.proc.pid)
        # keep-alive, as the in-process stub of the benchmarks was
        self.assertEqual([(200, False), (200, False)],
                         _two_on_one_connection(stub))
        mark = stub.mark()
        before = time.perf_counter()
        got = requests.post(stub.endpoint + '/os-server-external-events',
                            json={'events': [_event('c'), _event('d')]},
                            timeout=10)
        after = time.perf_counter()
        self.assertEqual(200, got.status_code)
        seen = stub.wait_tags(['c', 'd'], since=mark, timeout=10)
        # Stamped in the child between our send and its answer: the
        # clock (CLOCK_MONOTONIC) is the same across processes.
        for tag in ('c', 'd'):
            self.assertTrue(before <= seen[tag][0] <= after,
                            (before, seen[tag][0], after))
        self.assertEqual(['a', 'b', 'c', 'd'],
                         [e['tag'] for e in stub.received()])
        self.assertRaises(AssertionError, stub.wait_tags, ['a'],
                          since=mark, timeout=0.2)


class _SlowPipe(nova_stub.NovaStubProcess):
    """The child's event pipe read half a second late."""

    def _read(self, reader):
        time.sleep(0.5)
        super()._read(reader)


class TestNovaStubMark(testtools.TestCase):

    def test_mark_counts_what_was_answered_before_it(self):
        # The event was answered before mark(); the pipe brings it back
        # later: it must still fall before the mark, not after it.
        stub = self.useFixture(_SlowPipe())
        got = requests.post(stub.endpoint + '/os-server-external-events',
                            json={'events': [_event('a')]}, timeout=10)
        self.assertEqual(200, got.status_code)
        mark = stub.mark()
        self.assertEqual(1, mark)
        self.assertEqual({}, stub.wait_tags(['a'], since=mark, timeout=0.2,
                                            partial=True))


class TestTerminate(testtools.TestCase):

    def test_stop_leaves_nothing_of_the_group(self):
        # The shell's child is in its group, not its own session: a stop
        # of the shell alone would leave it running.
        with open(os.devnull, 'wb') as log:
            proc = process.spawn(['sh', '-c', 'sleep 60 & wait'], log)
        time.sleep(0.2)
        self.assertTrue(process.terminate(proc, 5, group=True))
        deadline = time.monotonic() + 5
        while True:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            self.assertLess(time.monotonic(), deadline, 'group left')
            time.sleep(0.05)


class TestRabbitMQPortTaken(testtools.TestCase):
    """The broker's fixture starts again on new ports when the port it
    picked was taken before the broker bound it (another test worker)."""

    def test_taken_port_is_replaced(self):
        taken = socket.socket()
        taken.bind(('127.0.0.1', 0))
        taken.listen(1)
        self.addCleanup(taken.close)
        port = taken.getsockname()[1]
        calls = []
        real_free_port = process.free_port

        def free_port():
            # The second pick of the first start is its AMQP port (the
            # first is epmd's).
            calls.append(None)
            return port if len(calls) == 2 else real_free_port()

        self.useFixture(fixtures.MonkeyPatch(
            'tools.fixtures.process.free_port', free_port))
        broker = self.useFixture(rabbitmq.RabbitMQServer())
        self.assertNotEqual(port, broker.port)
        self.assertIn(':%d/' % broker.port, broker.url)
