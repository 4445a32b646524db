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

"""What the policy tests share: the identities (the headers
keystonemiddleware would set, ``auth_strategy = noauth`` reads them) and
``AppTestBase``, a ``Service`` whose real WSGI app the tests call, with
rows inserted through ``accel_backend.objects`` and the binder's
``submit`` replaced by a recorder (a 202 bind starts no background work).

Used by ``test_policy_api``, ``test_personas`` and the functional
``test_auth``.
"""

import json

import fixtures
from oslo_utils import uuidutils
import testtools
import webob

from accel_backend import exception
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend import service as service_mod
from accel_common import arq_states
from tests.unit.accel_backend import base

PROJECT_A = 'a' * 32
PROJECT_B = 'b' * 32
ADMIN = {'X-Roles': 'admin,member,reader', 'X-Project-Id': 'c' * 32,
         'X-User-Id': 'admin-user'}
MEMBER_A = {'X-Roles': 'member,reader', 'X-Project-Id': PROJECT_A,
            'X-User-Id': 'user-a'}
MEMBER_B = {'X-Roles': 'member,reader', 'X-Project-Id': PROJECT_B,
            'X-User-Id': 'user-b'}
# What keystonemiddleware sets when Nova adds its X-Service-Token to the
# user's request ([service_user] send_service_user_token).
NOVA_FOR_A = dict(MEMBER_A, **{'X-Service-Roles': 'service,admin'})


class AppTestBase(testtools.TestCase):
    """A ``Service`` (noauth) and helpers to call its app."""

    AUTH_STRATEGY = 'noauth'
    EXTRA_CONF = {}

    def setUp(self):
        super().setUp()
        groups = {'api': {'auth_strategy': self.AUTH_STRATEGY},
                  'binding': {'workers': '1'}}
        groups.update(self.EXTRA_CONF)
        conf = base.make_conf(self, **groups)
        self.svc = service_mod.Service(conf)
        self.addCleanup(self.svc.stop)
        # The ARQs handed to the binder: in the PATCH's transaction
        # (embedded, mode = inline) or after it (submit).
        self.submitted = []
        self.useFixture(fixtures.MockPatchObject(
            self.svc.binder, 'submit', side_effect=self.submitted.extend))
        bind_locked = self.svc.binder.bind_locked

        def record(session, arqs, *args, **kwargs):
            self.submitted.extend(a.uuid for a in arqs)
            return bind_locked(session, arqs, *args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(
            self.svc.binder, 'bind_locked', side_effect=record))
        with self.svc.db.transaction() as session:
            dp_obj.create(session, 'dp1', [{'resources:PGPU': '1'}])

    def call(self, method, path, headers=None, body=None, status=None):
        req = webob.Request.blank(path, method=method,
                                  headers=headers or {})
        if body is not None:
            req.body = json.dumps(body).encode('utf-8')
            req.content_type = 'application/json'
        resp = req.get_response(self.svc.app)
        if status is not None:
            self.assertEqual(status, resp.status_code,
                             '%s %s: %s' % (method, path, resp.text))
        return resp

    def assert_forbidden(self, resp):
        self.assertEqual(403, resp.status_code, resp.text)
        self.assertEqual('accel.policy.forbidden',
                         resp.json['errors'][0]['code'])

    def make_arqs(self, project_id, state=arq_states.INITIAL, instance=None):
        """One ARQ of ``project_id`` in ``state``; returns its UUID."""
        with self.svc.db.transaction() as session:
            arq = arq_obj.create(session, 'dp1', project_id=project_id)[0]
            arq.state = state
            if state != arq_states.INITIAL:
                arq.hostname = 'compute1'
                arq.device_rp_uuid = uuidutils.generate_uuid()
                arq.instance_uuid = instance or uuidutils.generate_uuid()
            return arq.uuid

    def arq_state(self, uuid):
        with self.svc.db.transaction() as session:
            try:
                return arq_obj.get(session, uuid).state
            except exception.ARQNotFound:
                return None

    def bind_body(self, uuid, instance=None):
        return {uuid: [
            {'path': '/hostname', 'op': 'add', 'value': 'compute1'},
            {'path': '/device_rp_uuid', 'op': 'add',
             'value': uuidutils.generate_uuid()},
            {'path': '/instance_uuid', 'op': 'add',
             'value': instance or uuidutils.generate_uuid()}]}
