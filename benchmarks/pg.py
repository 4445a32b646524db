"""A throw-away PostgreSQL server from the Debian packages, run as the
unprivileged ``postgres`` user in a temporary directory."""

import glob
import os
import shutil
import time

from benchmarks import common

USER = 'postgres'


def _bindir():
    for d in sorted(glob.glob('/usr/lib/postgresql/*/bin'), reverse=True):
        if os.path.exists(os.path.join(d, 'initdb')):
            return d
    return None


def unavailable_reason():
    """None when a server can be started here, else why not (str)."""
    if _bindir() is None:
        return ('no PostgreSQL server binaries (apt-get install postgresql '
                'provides /usr/lib/postgresql/<v>/bin/initdb)')
    if shutil.which('runuser') is None:
        return 'runuser not found'
    try:
        import pwd
        pwd.getpwnam(USER)
    except KeyError:
        return 'no unprivileged "%s" user' % USER
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return 'psycopg2 (psycopg2-binary) is not installed'
    if os.geteuid() != 0:
        return 'runuser needs root to switch to the postgres user'
    return None


class PostgresServer:

    def __init__(self, workdir):
        self.bindir = _bindir()
        self.dir = os.path.join(workdir, 'pg')
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(workdir, 0o755)
        shutil.chown(self.dir, USER, USER)
        self.data = os.path.join(self.dir, 'data')
        self.port = common.free_port()
        self.log = os.path.join(self.dir, 'pg.log')
        self.cmdlog = os.path.join(self.dir, 'cmd.log')
        self.version = None

    def _bin(self, name):
        return os.path.join(self.bindir, name)

    def start(self):
        common.run([self._bin('initdb'), '-D', self.data, '-A', 'trust',
                    '-U', 'bench', '-E', 'UTF8'], self.cmdlog, user=USER,
                   cwd=self.dir)
        common.run([self._bin('pg_ctl'), '-D', self.data, '-l', self.log,
                    '-w', '-o', '-p %d -k %s -c listen_addresses=127.0.0.1'
                    % (self.port, self.dir), 'start'], self.cmdlog,
                   user=USER, cwd=self.dir)
        import psycopg2
        end = time.monotonic() + 30
        while True:
            try:
                conn = psycopg2.connect(host='127.0.0.1', port=self.port,
                                        user='bench', dbname='postgres')
                break
            except psycopg2.OperationalError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute('SHOW server_version')
        self.version = cur.fetchone()[0]
        conn.close()
        return self

    def create_db(self, name):
        import psycopg2
        conn = psycopg2.connect(host='127.0.0.1', port=self.port,
                                user='bench', dbname='postgres')
        conn.autocommit = True
        conn.cursor().execute('CREATE DATABASE %s' % name)
        conn.close()
        return 'postgresql+psycopg2://bench@127.0.0.1:%d/%s' % (self.port,
                                                                name)

    def stop(self):
        try:
            common.run([self._bin('pg_ctl'), '-D', self.data, '-m', 'fast',
                        '-w', 'stop'], self.cmdlog, user=USER, cwd=self.dir)
        except Exception:
            pass


class CommitFloor:
    """One INSERT + COMMIT on the PostgreSQL server."""

    def __init__(self, server, dbname):
        import psycopg2
        self.conn = psycopg2.connect(host='127.0.0.1', port=server.port,
                                     user='bench', dbname=dbname)
        cur = self.conn.cursor()
        cur.execute('CREATE TABLE IF NOT EXISTS floor_t (id SERIAL PRIMARY '
                    'KEY, v TEXT)')
        self.conn.commit()

    def once(self):
        import uuid
        t0 = time.perf_counter()
        cur = self.conn.cursor()
        cur.execute('INSERT INTO floor_t (v) VALUES (%s)',
                    (str(uuid.uuid4()),))
        self.conn.commit()
        return time.perf_counter() - t0

    def close(self):
        self.conn.close()
