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

"""A stand-in for Neutron's API that knows no network and no port.

The all-in-one cloud boots servers with ``--nic none``, so nothing is ever
plugged; Nova still asks the network service about ports when it deletes,
rebuilds, shelves or refreshes a server (``GET /v2.0/ports?device_id=``)
and fails the operation when no network endpoint answers.  This stub
answers every list with an empty list, every lookup of one object with 404
and the version documents Nova's client discovers first.  It is not
Neutron: networking is out of scope for this cloud.

Usage: ``python -m tools.aio.neutron_stub PORT``.
"""

import json
import re
import socketserver
import sys
from wsgiref import simple_server

_LIST = re.compile(r'^/v2\.0/([a-z_-]+)(\.json)?$')


def app(environ, start_response):
    method = environ['REQUEST_METHOD']
    path = environ.get('PATH_INFO', '/').rstrip('/') or '/'
    host = environ.get('HTTP_HOST', '127.0.0.1')
    version = {'id': 'v2.0', 'status': 'CURRENT',
               'links': [{'rel': 'self',
                          'href': 'http://%s/v2.0/' % host}]}
    status, body = '404 Not Found', {'NeutronError': {
        'type': 'NotFound', 'message': 'not found (neutron stub)',
        'detail': ''}}
    match = _LIST.match(path)
    if method == 'GET' and path == '/':
        status, body = '200 OK', {'versions': [version]}
    elif method == 'GET' and path == '/v2.0':
        status, body = '200 OK', {'resources': []}
    elif method == 'GET' and match:
        status, body = '200 OK', {match.group(1).replace('-', '_'): []}
    elif method == 'DELETE':
        status, body = '204 No Content', None
    data = b'' if body is None else json.dumps(body).encode()
    headers = [('Content-Length', str(len(data)))]
    if data:
        headers.append(('Content-Type', 'application/json'))
    start_response(status, headers)
    return [data]


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write('neutron-stub: %s\n' % (fmt % args))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    port = int(argv[0])
    server = simple_server.make_server('127.0.0.1', port, app,
                                       server_class=_Server,
                                       handler_class=_Quiet)
    server.serve_forever()


if __name__ == '__main__':
    main()
