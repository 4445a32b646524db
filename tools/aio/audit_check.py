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

"""The audit of deleted instances in the all-in-one cloud, two projects.

Real Keystone, Nova 34 and Placement.  accel-backend runs with the
``accelerator`` user of the install guide ("Roles": ``service``, and
``admin`` for its ``[nova]`` credentials, which Nova 34's external events
need).  ``accel-backend-manage audit deleted-instances --grace-period 0``
runs the audit's step (two passes in a row) from accel-backend's own
configuration file, and with a second ``--config-file`` whose ``[nova]``
is a user with the ``service`` role alone (created here), as an operator
who gave the ``[nova]`` credentials no more than ``service`` would run it:

#. the ``demo`` project (a member) boots a server with an accelerator; the
   audit keeps its ARQ with either credentials (administrators see the
   server; the ``service`` role is refused every project, so that audit
   deletes nothing and says why);
#. the server is deleted and an ARQ is left ``Bound`` to it (created and
   bound through the API with the ``accelerator`` user's service token,
   as a lost ``DELETE`` or an older release leaves it): with the
   ``service`` role the audit still deletes nothing; with the service's
   own credentials it deletes that ARQ.

``run`` returns the list of problems (empty: as expected).
"""

import json
import os
import subprocess

from accel_common import arq_states
from tools.aio import config
from tools.aio import demo as demo_mod
from tools.aio import devices
from tools.aio import services

NAME = 'aio-audit'
#: A user with the ``service`` role alone, for the refusal steps.
SERVICE_ONLY = 'aio-audit-service-only'


def _token(cloud, user, project, password):
    body = {'auth': {
        'identity': {'methods': ['password'], 'password': {'user': {
            'name': user, 'domain': {'name': config.DOMAIN},
            'password': password}}},
        'scope': {'project': {'name': project,
                              'domain': {'name': config.DOMAIN}}}}}
    _, headers = cloud.http('POST', cloud.layout.auth_url + '/auth/tokens',
                            body)
    return headers['X-Subject-Token']


class AuditCheck:

    def __init__(self, cloud):
        self.cloud = cloud
        self.layout = cloud.layout
        self.admin = demo_mod.Demo(cloud)
        self.demo = demo_mod.Demo(cloud)
        self.demo.env = cloud.env(OS_CLOUD='aio-demo')
        self.conf = self.layout.path('etc', 'accel-backend',
                                     'accel-backend.conf')
        self.problems = []

    def expect(self, ok, what):
        print('%s: %s' % ('ok' if ok else 'PROBLEM', what), flush=True)
        if not ok:
            self.problems.append('audit: %s' % what)

    def arqs(self, server_id):
        arqs, _ = self.cloud.http('GET', self.layout.url(
            'accel', '/v2/accelerator_requests?instance=%s' % server_id),
            token=self.cloud.admin_token())
        return arqs['arqs']

    def audit(self, *config_files):
        """``accel-backend-manage audit deleted-instances``; returns
        ``(exit status, stdout + stderr)``."""
        argv = [self.cloud.prog('accel-backend-manage'), '--config-file',
                self.conf]
        for path in config_files:
            argv += ['--config-file', path]
        argv += ['audit', 'deleted-instances', '--grace-period', '0']
        print('\n$ %s' % ' '.join(argv), flush=True)
        proc = subprocess.run(argv, env=self.cloud.env(), text=True,
                              capture_output=True, stdin=subprocess.DEVNULL)
        out = (proc.stdout + proc.stderr).strip()
        print(out + '\n  [exit status %d]' % proc.returncode, flush=True)
        return proc.returncode, out

    def service_only_conf(self):
        """A configuration file whose ``[nova]`` is a user with the
        ``service`` role alone in the service project (created here)."""
        api = self.layout.auth_url
        token = self.cloud.admin_token()

        def one(kind, name):
            got, _ = self.cloud.http('GET', '%s/%s?name=%s' % (
                api, kind, name), token=token)
            return got[kind][0]['id']
        password = self.layout.passwords['service']
        found, _ = self.cloud.http('GET', '%s/users?name=%s' % (
            api, SERVICE_ONLY), token=token)
        if found['users']:
            user = found['users'][0]['id']
        else:
            body, _ = self.cloud.http('POST', api + '/users', {'user': {
                'name': SERVICE_ONLY, 'password': password,
                'domain_id': one('domains', config.DOMAIN)}}, token=token)
            user = body['user']['id']
        self.cloud.http('PUT', '%s/projects/%s/users/%s/roles/%s' % (
            api, one('projects', config.SERVICE_PROJECT), user,
            one('roles', 'service')), token=token)
        path = self.layout.path('etc', 'accel-backend', 'audit-service.conf')
        ini = config.Ini()
        ini.update('nova', dict(
            config.service_credentials(self.layout, 'accelerator'),
            username=SERVICE_ONLY))
        with open(path, 'w') as f:
            f.write(ini.render())
        return path

    def orphan(self, server_id, rp_uuid):
        """An ARQ Bound to the deleted server ``server_id``."""
        admin = self.cloud.admin_token()
        service = _token(self.cloud, 'accelerator', config.SERVICE_PROJECT,
                         self.layout.passwords['service'])
        headers = {'X-Service-Token': service}
        url = self.layout.url('accel', '/v2/accelerator_requests')
        body, _ = self.cloud.http('POST', url, {'device_profile_name': NAME},
                                  token=admin, headers=headers)
        arq = body['arqs'][0]['uuid']
        self.cloud.http('PATCH', url, {arq: [
            {'path': '/hostname', 'op': 'add', 'value': self.layout.host},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': rp_uuid},
            {'path': '/instance_uuid', 'op': 'add', 'value': server_id}]},
            token=admin, headers=headers)
        self.cloud.wait_for('ARQ %s Bound' % arq, lambda: [
            a['state'] for a in self.arqs(server_id)] == [
                arq_states.BOUND], timeout=60)
        return arq

    def cleanup(self):
        self.demo.osc('server', 'delete', '--wait', NAME, check=False)
        self.admin.osc('flavor', 'delete', NAME, check=False)
        self.admin.osc('accelerator', 'device', 'profile', 'delete', NAME,
                       check=False)

    def run(self):
        self.cleanup()
        self.admin.osc('accelerator', 'device', 'profile', 'create', NAME,
                       '--group', ','.join(
                           '%s=%s' % kv for kv in
                           devices.tempest_group(self.layout).items()))
        self.admin.osc('flavor', 'create', '--ram', '512', '--disk', '1',
                       '--vcpus', '1', '--property',
                       'accel:device_profile=%s' % NAME, NAME,
                       columns=['id', 'name'])
        try:
            self.scenario()
        finally:
            self.cleanup()
        return self.problems

    def scenario(self):
        self.demo.osc('server', 'create', '--flavor', NAME, '--image',
                      services.IMAGE_NAME, '--nic', 'none', '--wait', NAME,
                      columns=['id', 'status'])
        server = json.loads(self.demo.osc(
            'server', 'show', NAME, '-f', 'json', show=False).stdout)
        (arq,) = self.arqs(server['id'])
        self.expect(arq['state'] == arq_states.BOUND,
                    'the demo project\'s server has a Bound ARQ')
        service_only = self.service_only_conf()
        print('\n== the audit with the service\'s own credentials',
              flush=True)
        code, out = self.audit()
        self.expect(code == 0 and 'deleted 0 ARQs' in out,
                    'the live server of another project is seen alive')
        print('\n== the audit with [nova] credentials of the service role '
              'alone', flush=True)
        code, out = self.audit(service_only)
        self.expect(code == 1 and '403' in out,
                    'with the service role alone the audit refuses to '
                    'delete (exit status 1, Nova\'s 403 named)')
        self.expect([a['state'] for a in self.arqs(server['id'])] ==
                    [arq_states.BOUND], 'the live server of another project '
                    'keeps its Bound ARQ')
        print('\n== the server is deleted; an ARQ is left Bound to it',
              flush=True)
        self.demo.osc('server', 'delete', '--wait', NAME)
        token = self.cloud.admin_token()
        left, allocations, _ = self.admin.leftovers(server['id'], token)
        self.expect(not left and not allocations,
                    'Nova deleted the server\'s ARQ and allocations')
        orphan = self.orphan(server['id'], arq['device_rp_uuid'])
        code, out = self.audit(service_only)
        self.expect(code == 1 and [a['uuid'] for a in self.arqs(
            server['id'])] == [orphan], 'with the service role alone even '
            'the deleted server\'s ARQ is kept')
        print('\n== the audit with the service\'s own credentials',
              flush=True)
        code, out = self.audit()
        self.expect(code == 0 and 'deleted 1 ARQs of 1 instances' in out and
                    server['id'] in out,
                    'with the service\'s credentials the audit deletes the '
                    'ARQ of the deleted server')
        self.expect(self.arqs(server['id']) == [],
                    'no ARQ is left for the deleted server')
        os.unlink(service_only)


def run(cloud):
    """The scenario above in the cloud that ``up`` started; returns the
    list of problems."""
    print('== the audit of deleted instances, two projects, the documented '
          'roles', flush=True)
    return AuditCheck(cloud).run()
