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
answers and records, served in this process.  The stub in a child process
and a stop reaching a child's whole process group are
``tests/functional/test_tools_fixtures.py``'s; the servers themselves are
exercised by the functional, reliability and cyborg-import tests that run
them.
"""

import http.client
import json
import socket
import time

import requests
import testtools

from tools.fixtures import nova_stub


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
