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

"""A private PostgreSQL server (Debian ``postgresql``, bindep.txt).

``initdb`` makes a data directory with ``trust`` authentication for the
``postgres`` role; ``postgres`` then runs in the foreground on a loopback
port, its Unix socket in a directory of ours, durability off unless asked
for (fsync, synchronous_commit, full_page_writes: throwaway data).
PostgreSQL refuses to run as root: then it runs as the package's
``postgres`` user, who must own the directories.
"""

import glob
import os
import pwd

from tools.launch import ComponentMissing

SYSTEM_USER = 'postgres'


def bindir():
    """Directory of ``initdb``/``postgres``/``psql`` (the newest version
    under ``/usr/lib/postgresql``).

    :raises ComponentMissing: PostgreSQL is not installed.
    """
    found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'))
    if not found:
        raise ComponentMissing('PostgreSQL not found (/usr/lib/postgresql/'
                               '*/bin/initdb); install the Debian package '
                               'postgresql (bindep.txt)')
    return os.path.dirname(found[-1])


def system_user():
    """The user the server must run as: ``postgres`` when we are root,
    else None (ourselves).

    :raises ComponentMissing: root, and no ``postgres`` user.
    """
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise ComponentMissing('user %s not found: PostgreSQL refuses to run '
                               'as root; install the Debian package '
                               'postgresql (bindep.txt)' % SYSTEM_USER)
    return SYSTEM_USER


def initdb_argv(bin_dir, datadir):
    """``initdb`` of a UTF-8, C-locale cluster whose ``postgres`` role
    needs no password."""
    return [os.path.join(bin_dir, 'initdb'), '-D', datadir, '-U', 'postgres',
            '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C']


def server_argv(bin_dir, datadir, port, socket_dir, max_connections=None,
                durable=False):
    """``postgres`` in the foreground on ``127.0.0.1:port``.

    :param socket_dir: directory of its Unix socket (ours, not
        ``/var/run/postgresql``).
    :param max_connections: int, or None for PostgreSQL's default (100).
    :param durable: keep PostgreSQL's durability defaults (a commit
        waits for its WAL flush: what a benchmark of commits measures);
        default off (throwaway data, faster tests).
    """
    argv = [os.path.join(bin_dir, 'postgres'), '-D', datadir,
            '-p', str(port), '-k', socket_dir,
            '-c', 'listen_addresses=127.0.0.1']
    if not durable:
        argv += ['-c', 'fsync=off', '-c', 'synchronous_commit=off',
                 '-c', 'full_page_writes=off']
    if max_connections:
        argv += ['-c', 'max_connections=%d' % max_connections]
    return argv


def url(port, database='postgres'):
    """SQLAlchemy URL of ``database`` on the server at ``port``."""
    return 'postgresql+psycopg2://postgres@127.0.0.1:%d/%s' % (port,
                                                               database)
