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


"""Expand/contract migrations on a PostgreSQL server
(``tools.fixtures.databases``, one per class): each branch's discipline
checked on the server's own DDL (``migration_checks.DisciplineScenarios``)
and the processes of two releases on one database during an upgrade
(``migration_checks.SharingScenarios``); the SQLite twins are in
``tests/unit/accel_backend/test_migration_branches.py``.
"""

import fixtures
import sqlalchemy as sa
import testtools

from tests.functional.fixtures import database_server
from tests.unit.accel_backend import migration_checks as checks
from tools.fixtures import databases


class TestPostgreSQL(checks.SharingScenarios, checks.DisciplineScenarios,
                     database_server.ServerPerClass, testtools.TestCase):
    SERVER = databases.PostgreSQLServer

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def new_url(self):
        return self.new_database('share')

    def engine(self):
        engine = sa.create_engine(self.new_url())
        self.addCleanup(engine.dispose)
        return engine
