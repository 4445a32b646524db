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

"""HAProxy (Debian ``haproxy``, 2.6 in bookworm) in front of the
accelerator API, configured from the shipped sample
``etc/haproxy/accel-backend.cfg.sample``: the sample's ``frontend`` and
``backend`` sections as they are, with this deployment's listening
address, certificate and API nodes put in place of the sample's, after a
``global`` section of ours (the admin socket that reports and changes the
servers' states, logs on stdout).  A self-signed CA and a server
certificate for ``127.0.0.1`` come from the ``openssl`` program.

Standard library only, like the rest of :mod:`tools.launch`.
"""

import csv
import io
import os
import re
import shutil
import socket

from tools.launch import ComponentMissing

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'etc', 'haproxy',
    'accel-backend.cfg.sample')
#: The sample's backend: ``<BACKEND>/<server name>`` on the admin socket.
BACKEND = 'accel_backend_api'

_BIND = re.compile(r'^(\s*bind\s+)\S+(\s+ssl\s+crt\s+)\S+(.*)$')
_SERVER = re.compile(r'^(\s*server\s+)(\S+)\s+\S+(.*)$')

_GLOBAL = '''global
    log stdout format raw local0 info
    stats socket {socket} mode 600 level admin
    pidfile {pidfile}

defaults
    log global
    option httplog
    option dontlognull

'''


def program():
    """Path of ``haproxy``.

    :raises ComponentMissing: not installed (Debian package ``haproxy``).
    """
    found = shutil.which('haproxy') or (
        '/usr/sbin/haproxy' if os.path.exists('/usr/sbin/haproxy')
        else None)
    if found is None:
        raise ComponentMissing('haproxy is not installed (Debian package '
                               'haproxy, bindep.txt)')
    return found


def config(sample_text, port, pem, servers, admin_socket, pidfile):
    """The configuration of a loopback HAProxy made from the sample.

    :param sample_text: the text of ``accel-backend.cfg.sample``.
    :param port: the TLS port it listens on at ``127.0.0.1`` (int).
    :param pem: the server certificate chain and key, one PEM file (str).
    :param servers: ``{server name: port}`` of the API nodes on
        ``127.0.0.1``; every ``server`` line of the sample must be named
        here, and no other.
    :param admin_socket: path of the admin (stats) socket.
    :param pidfile: where it writes its pid.
    :returns: str.
    :raises ValueError: the sample has no TLS ``bind`` line, or its
        servers are not those of ``servers``.
    """
    out, binds, seen = [], 0, []
    for line in sample_text.splitlines():
        match = _BIND.match(line)
        if match:
            binds += 1
            line = '%s127.0.0.1:%d%s%s%s' % (match.group(1), port,
                                             match.group(2), pem,
                                             match.group(3))
        match = _SERVER.match(line)
        if match:
            seen.append(match.group(2))
            line = '%s%s 127.0.0.1:%d%s' % (
                match.group(1), match.group(2), servers[match.group(2)]
                if match.group(2) in servers else 0, match.group(3))
        out.append(line)
    if binds != 1:
        raise ValueError('the sample has %d "bind ... ssl crt" lines, not '
                         'one' % binds)
    if sorted(seen) != sorted(servers):
        raise ValueError('the sample serves %s, not %s' % (
            sorted(seen), sorted(servers)))
    return _GLOBAL.format(socket=admin_socket, pidfile=pidfile) + \
        '\n'.join(out) + '\n'


def check_argv(haproxy, config_file):
    """``haproxy -c``: parse ``config_file`` and exit (0 when valid)."""
    return [haproxy, '-c', '-f', config_file]


def argv(haproxy, config_file):
    """HAProxy in the foreground (``-db``: no daemon, stops on SIGTERM
    and SIGINT) on ``config_file``."""
    return [haproxy, '-db', '-f', config_file]


def admin(admin_socket, command, timeout=5):
    """Send one command to the admin socket; returns the answer (str)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(admin_socket)
        sock.sendall(command.encode() + b'\n')
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b''.join(chunks).decode()


def server_states(admin_socket, backend=BACKEND):
    """``{server name: status}`` of ``backend`` from ``show stat``
    (``UP``, ``DOWN``, ``MAINT``, ``UP 1/2`` while rising...)."""
    text = admin(admin_socket, 'show stat').lstrip('# ')
    return {row['svname']: row['status']
            for row in csv.DictReader(io.StringIO(text))
            if row['pxname'] == backend and
            row['svname'] not in ('FRONTEND', 'BACKEND')}


def set_state(admin_socket, server, state, backend=BACKEND):
    """``set server <backend>/<server> state <state>`` (``ready``,
    ``drain``, ``maint``): how an operator takes a node out for a
    restart and puts it back; returns HAProxy's answer (empty: done)."""
    return admin(admin_socket, 'set server %s/%s state %s' % (
        backend, server, state)).strip()


def ca_argvs(openssl, directory):
    """``openssl`` commands (list of argv lists, run in order) writing
    into ``directory``: ``ca.pem``/``ca.key`` (a self-signed CA, P-256)
    and ``server.crt``/``server.key`` (for IP ``127.0.0.1`` and
    ``localhost``, signed by it); then :func:`server_pem`."""
    def p(name):
        return os.path.join(directory, name)
    ext = p('server.ext')
    with open(ext, 'w') as f:
        f.write('subjectAltName = IP:127.0.0.1, DNS:localhost\n'
                'extendedKeyUsage = serverAuth\n')
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
          '-nodes']
    return [
        [openssl, 'req', '-x509'] + ec + [
            '-keyout', p('ca.key'), '-out', p('ca.pem'), '-days', '2',
            '-subj', '/CN=accel-backend test CA'],
        [openssl, 'req'] + ec + [
            '-keyout', p('server.key'), '-out', p('server.csr'),
            '-subj', '/CN=127.0.0.1'],
        [openssl, 'x509', '-req', '-in', p('server.csr'), '-CA',
         p('ca.pem'), '-CAkey', p('ca.key'), '-CAcreateserial', '-days',
         '2', '-extfile', ext, '-out', p('server.crt')],
    ]


def server_pem(directory):
    """Write ``server.pem`` (``server.crt`` then ``server.key`` of
    :func:`ca_argvs`: what ``bind ... ssl crt`` takes) and return its
    path."""
    path = os.path.join(directory, 'server.pem')
    with open(path, 'w') as out:
        for name in ('server.crt', 'server.key'):
            with open(os.path.join(directory, name)) as f:
                out.write(f.read())
    os.chmod(path, 0o600)
    return path
