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

"""openstack-placement in this process, safe for callers in several threads.

openstack-placement's own ``PlacementFixture`` keeps its database in
SQLite in memory on one shared connection.  Two requests at once (a
background thread of accel_backend writing while the test reads, or a
request a client timed out on finishing late) then share a transaction
and fail with "cannot start a transaction within a transaction".  This
fixture serves the same Placement application, one request at a time.
(Nova 34's functional ``PlacementFixture`` moves the database to a
WAL-mode SQLite file instead, but it also patches Nova's report client,
which tests of accel_backend do not want.)
"""

import http
import json
import threading

import fixtures
from oslo_utils import uuidutils
from placement import deploy
from placement.tests.functional.fixtures import placement as pl_fixture
import testtools
from wsgi_intercept import interceptor


class PlacementFixture(pl_fixture.PlacementFixture):
    """Placement behind wsgi-intercept at ``endpoint``
    (``http://<uuid>/placement``, ``noauth2``: token ``admin``), serving
    one request at a time.

    :ivar endpoint: the URL the ``requests`` library reaches it at.
    :ivar outage: None, or an HTTP status (int) that every request gets
        instead of an answer (Placement down behind a proxy).
    """

    def __init__(self):
        super().__init__(use_intercept=False)

    def setUp(self):
        super().setUp()
        app = deploy.loadapp(self.conf_fixture.conf)
        lock = threading.Lock()
        self.outage = None

        def one_at_a_time(environ, start_response):
            status = self.outage
            if status is not None:
                body = json.dumps({'errors': [{
                    'status': status, 'title': 'outage',
                    'detail': 'injected by the test'}]}).encode()
                start_response('%d %s' % (status, http.HTTPStatus(status)
                                          .phrase),
                               [('Content-Type', 'application/json'),
                                ('Content-Length', str(len(body)))])
                return [body]
            with lock:
                # The whole body is produced under the lock.
                return list(app(environ, start_response))

        self.endpoint = 'http://%s/placement' % uuidutils.generate_uuid()
        intercept = interceptor.RequestsInterceptor(
            lambda: one_at_a_time, url=self.endpoint)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)


class PlacementTestCase(testtools.TestCase):
    """A test with Placement in this process and the root logger captured
    (expected warnings stay out of the output).

    :ivar placement: the :class:`PlacementFixture` (``endpoint``).
    :ivar logger: the ``fixtures.FakeLogger`` (``output``).
    """

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.placement = self.useFixture(PlacementFixture())
