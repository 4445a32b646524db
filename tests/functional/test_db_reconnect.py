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

"""``accel_backend.db.api.Database`` on a real PostgreSQL server: a pooled
connection the server closed is replaced by oslo.db's own check (the
``pool_pre_ping`` its ``engines.create_engine`` sets, oslo.db 18) before a
transaction gets it."""

import sqlalchemy as sa
import testtools

from accel_backend.db import api as db_api
from tests.functional.fixtures import database_server
from tests import waiting
from tools.fixtures import databases


class PostgreSQLReconnectTest(database_server.ServerPerClass,
                              testtools.TestCase):

    SERVER = databases.PostgreSQLServer

    def setUp(self):
        super().setUp()
        url = self.new_database('reconnect')
        self.db = db_api.Database(url, {'max_retries': 0})
        self.addCleanup(self.db.dispose)

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

    def test_pooled_connection_is_reused(self):
        pids = {self._backend_pid() for _ in range(3)}
        self.assertEqual(1, len(pids))

    def test_connection_the_server_closed_is_replaced(self):
        pid = self._backend_pid()
        self._terminate(pid)
        # No error: the checkout's ping found the connection dead, the
        # pool opened a new one for the transaction.
        self.assertNotEqual(pid, self._backend_pid())

    def test_every_pooled_connection_the_server_closed_is_replaced(self):
        # Two connections in the pool, both terminated.
        with self.db.transaction() as one, self.db.transaction() as two:
            pids = {s.execute(sa.text('SELECT pg_backend_pid()')).scalar()
                    for s in (one, two)}
        self.assertEqual(2, len(pids))
        for pid in pids:
            self._terminate(pid)
        with self.db.transaction() as one, self.db.transaction() as two:
            again = {s.execute(sa.text('SELECT pg_backend_pid()')).scalar()
                     for s in (one, two)}
        self.assertEqual(2, len(again))
        self.assertFalse(pids & again)
