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

"""``accel_backend.db.liveness`` on a real PostgreSQL server: pooled
connections are checked at checkout without a ``SELECT 1`` while in use,
and a connection the server closed or lost is replaced, never handed to a
transaction."""

import fixtures
import sqlalchemy as sa
import testtools

from accel_backend.db import api as db_api
from tests.functional.fixtures import database_server
from tests import waiting
from tools.fixtures import databases


class PostgreSQLLivenessTest(database_server.ServerPerClass,
                             testtools.TestCase):

    SERVER = databases.PostgreSQLServer

    def setUp(self):
        super().setUp()
        url = self.new_database('liveness')
        self.db = db_api.Database(url, {'max_retries': 0})
        self.addCleanup(self.db.dispose)
        # Counts the pings and still sends them.
        self.pings = []
        dialect = self.db.engine.dialect
        real = dialect.do_ping

        def do_ping(dbapi_conn):
            self.pings.append(dbapi_conn)
            return real(dbapi_conn)
        dialect.do_ping = do_ping
        self.addCleanup(delattr, dialect, 'do_ping')

    def _backend_pid(self):
        """One transaction; the server process that served it."""
        with self.db.transaction() as session:
            return session.execute(sa.text('SELECT pg_backend_pid()')).scalar()

    def _terminate(self, pid):
        with self.server.admin.connect() as conn:
            conn.execute(sa.text('SELECT pg_terminate_backend(:pid)'),
                         {'pid': pid})
            conn.commit()

        def gone():
            with self.server.admin.connect() as conn:
                return not conn.execute(sa.text(
                    'SELECT 1 FROM pg_stat_activity WHERE pid = :pid'),
                    {'pid': pid}).first()
        waiting.wait_for('backend %d gone' % pid, gone, 10)

    def test_connection_in_use_is_not_pinged(self):
        pids = {self._backend_pid() for _ in range(5)}
        self.assertEqual(1, len(pids))
        self.assertEqual([], self.pings)

    def test_connection_idle_for_longer_is_pinged(self):
        pid = self._backend_pid()
        self.useFixture(fixtures.MonkeyPatch(
            'accel_backend.db.liveness.PING_IDLE_AFTER', 0.0))
        self.assertEqual(pid, self._backend_pid())
        self.assertEqual(1, len(self.pings))

    def test_connection_the_server_closed_is_replaced_without_a_ping(self):
        pid = self._backend_pid()
        self._terminate(pid)
        # No error: the pool saw the server's goodbye on the socket.
        self.assertNotEqual(pid, self._backend_pid())
        self.assertEqual([], self.pings)

    def test_lost_connection_idle_for_longer_is_found_by_the_ping(self):
        pid = self._backend_pid()
        self._terminate(pid)
        # As if the server's host had gone without a word: the socket
        # shows nothing, the ping fails, a new connection serves.
        self.useFixture(fixtures.MonkeyPatch(
            'accel_backend.db.liveness.closed_by_server', lambda _c: False))
        self.useFixture(fixtures.MonkeyPatch(
            'accel_backend.db.liveness.PING_IDLE_AFTER', 0.0))
        self.assertNotEqual(pid, self._backend_pid())
        # The failed one, then the new connection's (idle for 0 s too).
        self.assertEqual(2, len(self.pings))
