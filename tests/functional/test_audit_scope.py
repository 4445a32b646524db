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

"""The audit against Nova 34's own API code and policy, two projects.

Nova's API, its policy defaults (``enforce_new_defaults``) and its
database reads are the real ones of Nova's functional harness; Placement
is the harness's real Placement.  Identities come from the headers the
harness turns into a request context (``X-Auth-User``,
``X-Auth-Project-Id``, ``X-Roles``; ``base._give_requests_a_token``), so a
credential set is a user, a project and roles:

* ``[nova]`` credentials of the ``service`` role alone (an operator who
  gave them no more) in the ``service`` project;
* an administrator's, which the install guide asks for (``admin``: Nova's
  external events and this audit need it).

A server of project B is booted with a GPU.  With the ``service`` role
Nova answers 404 for it (it is not the caller's project) and 403 to
``all_tenants``: the audit must keep its device.  With an administrator's
credentials, ARQs left bound for a server Nova deleted are deleted, with
``accelerator.arq.delete.end``.
"""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from nova.tests.functional.api import client as nova_client

from accel_backend.conductor import audit
from accel_backend.conductor import nova_orphans
from tests.functional import base

PROJECT_B = 'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0'


class RecordingNotifications:
    """``accel_backend.notifications.Notifications``' ``arq`` call,
    recorded (the versioned payloads through a real RabbitMQ are
    ``test_notifications``')."""

    def __init__(self):
        self.sent = []

    def arq(self, event_type, data):
        self.sent.append((event_type, data['uuid']))


class AuditScopeTest(base.AccelServersTestBase):

    def setUp(self):
        super().setUp()
        self.rps = self.device_rps()
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])
        self.flavor = self.accel_flavor('gpu')
        self.notifications = RecordingNotifications()

    def nova_as(self, user, project, roles):
        """keystoneauth1 Adapter of Nova's API for that identity."""
        url = self.api_fixture.base_url
        sess = ks_session.Session(auth=token_endpoint.Token(url, user))
        return ks_adapter.Adapter(sess, endpoint_override=url,
                                  additional_headers={
                                      'X-Auth-User': user,
                                      'X-Auth-Project-Id': project,
                                      'X-Roles': ','.join(roles)})

    def auditor(self, nova):
        """An audit of this host as the service runs it, grace period 0
        (two audits in a row prove an instance gone)."""
        return audit.Auditor(
            self.accel.db, self.COMPUTE, nova=nova, binder=self.accel.binder,
            cleaner=self.accel.cleaner, grace_period=0,
            placement=self.accel.placement,
            notifications=self.notifications)

    def boot_in_project_b(self):
        api_b = nova_client.TestOpenStackClient(
            'user-b', self.api_fixture.base_url, project_id=PROJECT_B,
            roles=['member', 'reader'])
        api_b.microversion = 'latest'
        server = self._create_server(flavor_id=self.flavor,
                                     networks='none', api=api_b)
        self.assertEqual(PROJECT_B, server['tenant_id'])
        return server

    def test_service_role_keeps_other_projects_devices(self):
        server = self.boot_in_project_b()
        (arq,) = self.arqs_of(server['id'])
        self.assertEqual('Bound', arq['state'])
        service = self.nova_as('accelerator', 'service', ['service'])
        # The premise: Nova 34 shows the live server of project B as
        # missing to the service role, and refuses it every project.
        self.assertEqual(404, service.get(
            '/servers/%s' % server['id'], raise_exc=False).status_code)
        self.assertEqual(403, service.get(
            nova_orphans.SCOPE_PROBE, raise_exc=False).status_code)

        auditor = self.auditor(service)
        reports = [auditor.run() for _ in range(3)]

        self.assertEqual([nova_orphans.OWN_PROJECT] * 3,
                         [r.scope.state for r in reports])
        self.assertEqual([], sum((r.deleted_arqs for r in reports), []))
        self.assertEqual([], self.notifications.sent)
        self.assert_one_bound_arq(server['id'], arq['device_rp_uuid'])
        self.assertEqual({'PGPU': 1}, self.placement.get(
            '/allocations/%s' % server['id']).body['allocations'][
                arq['device_rp_uuid']]['resources'])

    def test_admin_sees_project_b_server_alive(self):
        server = self.boot_in_project_b()
        admin = self.nova_as('admin', self.api_fixture.project_id,
                             ['admin', 'member', 'reader'])
        auditor = self.auditor(admin)
        reports = [auditor.run() for _ in range(3)]
        self.assertEqual(nova_orphans.ALL_PROJECTS, reports[-1].scope.state)
        self.assertEqual([], sum((r.deleted_arqs + r.kept_instances
                                  for r in reports), []))
        (arq,) = self.arqs_of(server['id'])
        self.assertEqual('Bound', arq['state'])

    def orphan_arq(self, server_id):
        """An ARQ left Bound to the deleted server ``server_id`` on this
        host (what a lost DELETE or an older release leaves): created and
        bound through the API with a service token, as Nova's conductor
        does."""
        (arq,) = self.accel_request('POST', '/v2/accelerator_requests',
                                    {'device_profile_name': 'gpu'},
                                    expect=(201,))['arqs']
        rp = sorted(self.rps.values())[0]
        self.accel_request('PATCH', '/v2/accelerator_requests', {
            arq['uuid']: [
                {'path': '/hostname', 'op': 'add', 'value': self.COMPUTE},
                {'path': '/device_rp_uuid', 'op': 'add', 'value': rp},
                {'path': '/instance_uuid', 'op': 'add',
                 'value': server_id}]}, expect=(202,))
        (bound,) = self.arqs_of(server_id)
        self.assertEqual('Bound', bound['state'])
        return bound

    def test_admin_deletes_arqs_of_a_server_deleted_behind_our_back(self):
        server = self.boot_in_project_b()
        self._delete_server(server)
        arq = self.orphan_arq(server['id'])
        admin = self.nova_as('admin', self.api_fixture.project_id,
                             ['admin', 'member', 'reader'])
        auditor = self.auditor(admin)

        first = auditor.run()
        self.assertEqual(nova_orphans.ALL_PROJECTS, first.scope.state)
        self.assertEqual([(server['id'], nova_orphans.NOT_CONFIRMED)],
                         [k[:2] for k in first.kept_instances])
        self.assertEqual([arq['uuid']],
                         [a['uuid'] for a in self.arqs_of(server['id'])])

        second = auditor.run()
        self.assertEqual([server['id']], second.deleted_instances)
        self.assertEqual([arq['uuid']], second.deleted_arqs)
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual([('accelerator.arq.delete.end', arq['uuid'])],
                         self.notifications.sent)
