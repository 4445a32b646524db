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

"""The ``[database]`` options of oslo.db take effect
(``accel_backend.db.api``): each test sets options in a config file and
observes what they change."""

import socket

import fixtures
from oslo_db import exception as db_exc
import sqlalchemy as sa
import testtools

from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import exception
from tests.unit.accel_backend import base


def _closed_port():
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class TestDatabaseOptions(testtools.TestCase):

    def _db(self, **database):
        conf = base.make_conf(self, database=database)
        db = db_api.Database.from_conf(conf)
        self.addCleanup(db.dispose)
        return db

    @staticmethod
    def _synchronous(db):
        with db.engine.connect() as conn:
            return conn.exec_driver_sql('PRAGMA synchronous').scalar()

    def test_sqlite_synchronous(self):
        # SQLite's default is FULL (2); the option turns it OFF (0).
        self.assertNotEqual(0, self._synchronous(self._db()))
        self.assertEqual(0, self._synchronous(
            self._db(sqlite_synchronous='false')))

    def test_connection_checkin_does_not_sleep(self):
        # oslo.db's eventlet yield (time.sleep(0) at every check-in) is
        # off: on native threads it gave the GIL away after every
        # transaction (146 vs 265 us per SELECT transaction here).
        db = self._db()
        db.sync()
        sleep = self.useFixture(fixtures.MockPatch(
            'oslo_db.sqlalchemy.engines.time.sleep')).mock
        with db.transaction() as session:
            session.execute(sa.select(models.ARQ.id)).all()
        self.assertEqual([], sleep.call_args_list)

    def test_sqlite_file_connections_are_pooled(self):
        # oslo.db gives SQLite files a NullPool (a connection, its pragmas
        # and a WAL checkpoint per transaction); ours is pooled and sized
        # by max_pool_size / max_overflow.
        db = self._db(max_pool_size=3, max_overflow=2, pool_timeout=1)
        pool = db.engine.pool
        self.assertIsInstance(pool, sa.pool.QueuePool)
        self.assertEqual(3, pool.size())
        with db.transaction() as session:
            first = session.connection().connection.dbapi_connection
        with db.transaction() as session:
            again = session.connection().connection.dbapi_connection
            # Still foreign keys and WAL: pragmas are per connection.
            self.assertEqual(1, session.execute(
                sa.text('PRAGMA foreign_keys')).scalar())
        self.assertIs(first, again)
        # max_overflow, seen through the pool's public API: 3 + 2
        # connections at once, and the next one waits pool_timeout for
        # one of them in vain.
        held = [pool.connect() for _ in range(5)]
        self.assertEqual((5, 2), (pool.checkedout(), pool.overflow()))
        self.assertRaises(sa.exc.TimeoutError, pool.connect)
        for conn in held:
            conn.close()

    def test_max_retries_and_retry_interval(self):
        # oslo.db tries to reach the database max_retries times,
        # retry_interval seconds apart, and then refuses to start.
        logger = self.useFixture(fixtures.FakeLogger(
            name='oslo_db.sqlalchemy.engines'))
        # MySQL: oslo.db 18 recognises PyMySQL's refused connection as
        # DBConnectionError (not libpq 14's wording for PostgreSQL).
        url = 'mysql+pymysql://accel:accel@127.0.0.1:%d/accel' % (
            _closed_port())
        self.assertRaises(db_exc.DBConnectionError, self._db,
                          connection=url, max_retries=3, retry_interval=0)
        self.assertEqual(3, logger.output.count('SQL connection failed'))

    def test_db_max_retries_on_deadlock(self):
        # A writer that meets a deadlock runs again in a fresh transaction,
        # db_max_retries times, and what a failed attempt wrote is gone.
        db = self._db(db_max_retries=2, db_retry_interval=0,
                      db_inc_retry_interval='false')
        db.sync()
        attempts = []

        def writer(session):
            attempts.append(1)
            session.add(models.DeviceProfile(
                uuid='8c1a1e3e-0b4a-4d4e-9d55-%012d' % len(attempts),
                name='dp%d' % len(attempts), groups=[]))
            session.flush()
            raise db_exc.DBDeadlock()

        self.assertRaises(db_exc.DBDeadlock, db.write, writer)
        self.assertEqual(3, len(attempts))
        with db.transaction() as session:
            self.assertEqual(0, session.scalar(
                sa.select(sa.func.count(models.DeviceProfile.id))))

    def test_write_returns_after_a_retried_deadlock(self):
        db = self._db(db_max_retries=1, db_retry_interval=0)
        calls = []

        def writer(session, value):
            calls.append(value)
            if len(calls) == 1:
                raise db_exc.DBDeadlock()
            return value * 2

        self.assertEqual(42, db.write(writer, 21))
        self.assertEqual([21, 21], calls)

    def test_second_engine_options_refused(self):
        for option in db_api.UNSUPPORTED_OPTIONS:
            err = self.assertRaises(
                exception.DatabaseOptionUnsupported, self._db,
                **{option: 'sqlite:////nonexistent/replica.sqlite'})
            self.assertIn('[database] %s is not supported' % option,
                          str(err))

    def test_postgresql_down_is_a_connection_error(self):
        # libpq 14's refusal, which oslo.db 18 does not translate, still
        # reaches the caller as DBConnectionError (the services refuse to
        # start with one line), not as a raw driver error.
        url = 'postgresql+psycopg2://accel:accel@127.0.0.1:%d/accel' % (
            _closed_port())
        self.assertRaises(db_exc.DBConnectionError, self._db,
                          connection=url, max_retries=1, retry_interval=0)
