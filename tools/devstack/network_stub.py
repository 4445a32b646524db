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

"""An empty network service for a devstack without Neutron.

Nova asks Neutron even for servers booted with ``networks: none``: the
API's server show lists the server's ports for its security groups
(nova, ``nova/api/openstack/compute/views/servers.py``,
``_add_security_grps``; ``nova/network/security_group_api.py``,
``get_instances_security_groups_bindings``, master of 2026-08), and
deleting a server lists its ports to unbind them.  Without a ``network``
endpoint in the catalog that is a 500 (``EndpointNotFound``).  This stub
answers every list of Neutron's v2.0 API (``GET /v2.0/<resources>``) with
an empty list and everything else with 404, which is what a Neutron
without a single port would say to these calls.  It is for
``tools/devstack/stack-aio.sh`` alone, never for a real cloud.

    python3 network_stub.py HOST PORT
"""

import http.server
import json
import sys
from urllib import parse


class EmptyNeutron(http.server.BaseHTTPRequestHandler):
    """``GET /v2.0/<resources>[.json]`` -> ``{"<resources>": []}``
    (200); ``GET /`` -> the version document; anything else -> 404."""

    def _reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (BaseHTTPRequestHandler's name)
        parts = [p for p in parse.urlsplit(self.path).path.split('/') if p]
        if not parts:
            self._reply(200, {'versions': [
                {'id': 'v2.0', 'status': 'CURRENT', 'links': []}]})
        elif len(parts) == 2 and parts[0] == 'v2.0':
            name = parts[1].removesuffix('.json')
            self._reply(200, {name: []})
        else:
            self._reply(404, {'NeutronError': {
                'type': 'HTTPNotFound', 'message': self.path, 'detail': ''}})

    def _not_found(self):
        self._reply(404, {'NeutronError': {
            'type': 'HTTPNotFound', 'message': self.path, 'detail': ''}})

    do_POST = do_PUT = do_DELETE = _not_found  # noqa: N815


def main(argv):
    """Serve on ``argv[1]`` (address) ``argv[2]`` (port) until killed.

    :raises SystemExit: wrong arguments (usage on stderr).
    """
    if len(argv) != 3 or not argv[2].isdigit():
        sys.exit('usage: network_stub.py HOST PORT')
    server = http.server.ThreadingHTTPServer((argv[1], int(argv[2])),
                                             EmptyNeutron)
    server.serve_forever()


if __name__ == '__main__':
    main(sys.argv)
