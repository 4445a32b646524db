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

"""The shared fixtures' own rules (``tools.fixtures``): the Nova stub's
answers and records, and a stop reaching a child's whole process group.
The servers themselves are exercised by the functional, reliability and
cyborg-import tests that run them.
"""

import http.client
import json
import os
import socket
import time

import requests
import testtools

from tools.fixtures import nova_stub
from tools.fixtures import process


def _event(tag, server='s1'):
    return {'name': 'accelerator-request-bound', 'server_uuid': server,
            'tag': tag, 'status': 'completed'}


class TestNovaStub(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(nova_stub.NovaStub())

    def post(self, *events):
        return requests.post(
            self.nova.endpoint + '/os-server-external-events',
            json={'events': list(events)},
            headers={'X-Auth-Token': 'admin'}, timeout=10)

    def test_steered_answers_and_records(self):
        self.nova.fail_next(503)
        self.nova.refuse = 1
        self.nova.codes = {'gone': 404}
        self.assertEqual(503, self.post(_event('a')).status_code)
        refused = self.post(_event('a'))
        self.assertEqual((207, [422]), (refused.status_code, [
            e['code'] for e in refused.json()['events']]))
        taken = self.post(_event('a'), _event('b', server='gone'))
        self.assertEqual((207, [200, 404]), (taken.status_code, [
            e['code'] for e in taken.json()['events']]))
        self.assertEqual([503, 207, 207],
                         [status for _, status, _ in self.nova.attempts()])
        # Taken: only the accepted event, as it was sent (no code).
        self.assertEqual([_event('a')], self.nova.received())
        self.assertEqual(['a', 'a', 'a', 'b'],
                         [e['tag'] for e in self.nova.sent()])
        self.assertEqual({'a': ['completed']}, self.nova.events_by_tag())
        self.assertEqual('admin',
                         self.nova.posts[0]['headers']['x-auth-token'])

    def test_wait_tags_since_mark(self):
        self.post(_event('old'))
        mark = self.nova.mark()
        before = time.perf_counter()
        self.post(_event('new'))
        seen = self.nova.wait_tags(['new'], since=mark, timeout=5)
        self.assertLessEqual(before, seen['new'][0])
        self.assertEqual({}, self.nova.wait_tags(
            ['old'], since=mark, timeout=0.2, partial=True))
        self.assertRaises(AssertionError, self.nova.wait_tags, ['old'],
                          since=mark, timeout=0.2)

    def test_stop_leaves_the_port_closed_until_start(self):
        self.nova.stop()
        with socket.socket() as s:
            self.assertNotEqual(0, s.connect_ex(('127.0.0.1',
                                                 self.nova.port)))
        self.nova.start()
        self.assertEqual(200, self.post(_event('x')).status_code)

    def test_servers_and_versions(self):
        self.nova.servers = {'s1': 'vm1'}
        got = requests.get(self.nova.endpoint + '/servers/s1', timeout=10)
        self.assertEqual('vm1', got.json()['server']['name'])
        self.assertEqual(404, requests.get(
            self.nova.endpoint + '/servers/s2', timeout=10).status_code)
        self.nova.every_server_exists = True
        self.nova.gone.add('s3')
        self.assertEqual((200, 404), tuple(requests.get(
            self.nova.endpoint + '/servers/' + s, timeout=10).status_code
            for s in ('s2', 's3')))
        version = requests.get(self.nova.endpoint, timeout=10).json()
        self.assertEqual(self.nova.endpoint + '/',
                         version['version']['links'][0]['href'])


class TestNovaStubKeepAlive(testtools.TestCase):
    """``keep_alive=True`` (the benchmarks'): several requests on one
    connection, as a production API server answers; the default closes
    each connection after its request."""

    @staticmethod
    def _two_on_one_connection(stub):
        conn = http.client.HTTPConnection('127.0.0.1', stub.port,
                                          timeout=10)
        try:
            statuses = []
            for tag in ('a', 'b'):
                conn.request('POST', nova_stub.EVENTS_PATH,
                             body=json.dumps({'events': [_event(tag)]}),
                             headers={'Content-Type': 'application/json'})
                resp = conn.getresponse()
                resp.read()
                # will_close: the server ends the connection after this
                # answer (http.client then opens a new one).
                statuses.append((resp.status, resp.will_close))
            return statuses
        finally:
            conn.close()

    def test_keep_alive_serves_a_second_request_on_the_connection(self):
        stub = self.useFixture(nova_stub.NovaStub(keep_alive=True))
        self.assertEqual([(200, False), (200, False)],
                         self._two_on_one_connection(stub))
        self.assertEqual(['a', 'b'], [e['tag'] for e in stub.received()])
        stub.stop()
        with socket.socket() as s:
            self.assertNotEqual(0, s.connect_ex(('127.0.0.1', stub.port)))

    def test_default_closes_the_connection_after_a_request(self):
        stub = self.useFixture(nova_stub.NovaStub())
        self.assertEqual([(200, True), (200, True)],
                         self._two_on_one_connection(stub))


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
                         TestNovaStubKeepAlive._two_on_one_connection(stub))
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
