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

"""The database backends of ``/healthcheck`` (``accel_database``,
``accel_discovery``) when a real PostgreSQL server goes away under a
running service (the other backends: ``tests/unit/accel_backend/
test_status.py``)."""

import fixtures

from tests.unit.accel_backend import test_status
from tools.fixtures import databases


class DatabaseHealthTest(test_status.PlacementHealthTest):
    """``accel_database`` (and ``accel_discovery``, which reads the
    database) when the database server goes away: a real PostgreSQL,
    stopped under a running service."""

    def test_database_gone_is_a_503_with_the_reason(self):
        self.useFixture(fixtures.FakeLogger())
        pg = self.useFixture(databases.PostgreSQLServer())
        url = pg.create_database('accel')
        backends = 'accel_database,accel_discovery'
        svc = self.service('http://placement.invalid', connection=url,
                           backends=backends, detailed='false')
        detailed = self.service('http://placement.invalid', connection=url,
                                backends=backends)
        resp = self.health(svc)
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual(['database OK', 'discovery OK on 0 hosts'],
                         sorted(resp.json['reasons']))
        pg.stop()
        resp = self.health(svc)
        self.assertEqual(503, resp.status_int, resp.text)
        self.assertEqual(
            ['database unreachable: the database does not answer',
             'host status unreadable: the database does not answer'],
            sorted(resp.json['reasons']))
        # What a load balancer reads: plain text, the same reasons.
        resp = self.health(svc, accept='text/plain')
        self.assertEqual(503, resp.status_int)
        self.assertIn('database unreachable', resp.text)
        # The driver's words only where details are asked for.
        self.assertNotIn('Connection refused', resp.text)
        resp = self.health(detailed)
        self.assertEqual(503, resp.status_int, resp.text)
        details = {r['reason']: r['details'] for r in resp.json['reasons']}
        self.assertIn('OperationalError: connection to server', details[
            'database unreachable: the database does not answer'])
