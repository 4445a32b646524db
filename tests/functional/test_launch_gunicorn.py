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

"""gunicorn as ``tools.launch.gunicorn`` starts it keeps a client's idle
connection open across the polling interval of OpenStack's clients.

A real gunicorn (the one the tests' environment holds) serves a one-line
WSGI application; a real ``http.client`` connection idles as long as
``openstack server delete --wait`` does between its GETs, plus 2 s
(gunicorn's worker may close an expired connection up to 1 s late).
"""

import http.client
import inspect
import os
import select
import socket
import time

from openstack import resource
import testtools

from tools.fixtures import process
from tools.launch import gunicorn

APP = '''def application(environ, start_response):
    start_response('200 OK', [('Content-Length', '2')])
    return [b'ok']
'''


class _Gunicorn(process.Process):
    STOP_GROUP = True

    def _setUp(self):
        self.dir = process.files_dir(self, None, 'gunicorn')
        with open(os.path.join(self.dir, 'ka_app.py'), 'w') as f:
            f.write(APP)
        self.port = process.free_port()
        self.start_process(
            'gunicorn', gunicorn.argv(
                process.venv_program('gunicorn'), 'ka_app:application',
                self.port, options=['--chdir', self.dir,
                                    '--no-control-socket']),
            dict(os.environ), 'http://127.0.0.1:%d/' % self.port, self.dir)


def _closed_by_peer(sock):
    """True when the peer has closed ``sock`` (EOF waiting to be read)."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b''


class TestKeepAlive(testtools.TestCase):

    def test_idle_connection_outlives_the_sdks_polling_interval(self):
        # openstacksdk's wait_for_delete: one GET every `interval` seconds.
        interval = inspect.signature(
            resource.wait_for_delete).parameters['interval'].default
        self.assertLess(interval + 1, gunicorn.KEEPALIVE)
        server = self.useFixture(_Gunicorn())
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=10)
        self.addCleanup(conn.close)
        conn.request('GET', '/')
        self.assertEqual(b'ok', conn.getresponse().read())
        sock = conn.sock
        time.sleep(interval + 2)
        self.assertFalse(_closed_by_peer(sock),
                         'gunicorn closed the idle connection')
        conn.request('GET', '/')
        self.assertEqual(b'ok', conn.getresponse().read())
        self.assertIs(sock, conn.sock)
