#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""A tiny in-memory accelerator (Cyborg v2) WSGI app for client tests.

It records every request and answers as the wire contract of
nova/accelerator/cyborg.py (nova 34.0.0)
says; ``inject()`` queues canned answers (error statuses, odd bodies) that
take precedence over the normal behaviour.
"""

import collections
import json
import uuid

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
import webob
import webob.dec
from wsgi_intercept import interceptor

HOST = 'accel.test'
ENDPOINT = 'http://%s:80/v2' % HOST
TOKEN = 'user-token'

Recorded = collections.namedtuple(
    'Recorded', 'method path query body headers')


def cyborg_error(status, text):
    """Cyborg-style body: error_message holds a JSON string (wsme fault)."""
    return status, {'error_message': json.dumps(
        {'faultcode': 'Client' if status < 500 else 'Server',
         'faultstring': text, 'debuginfo': None})}


def api_wg_error(status, code, detail):
    """OpenStack API-WG style body."""
    return status, {'errors': [{'status': status, 'code': code,
                                'title': 'Error', 'detail': detail}]}


class FakeAccelerator(object):
    """In-memory accelerator service; see the module docstring."""

    def __init__(self):
        self.requests = []
        self.profiles = []
        self.arqs = collections.OrderedDict()
        self._injected = []

    def add_profile(self, name, groups):
        profile = {'name': name, 'uuid': str(uuid.uuid4()),
                   'groups': groups, 'description': ''}
        self.profiles.append(profile)
        return profile

    def inject(self, status, body=None, text=None):
        """Answer the next request with ``status`` and a JSON/text body."""
        self._injected.append((status, body, text))

    @staticmethod
    def _resp(status, body=None, text=None):
        resp = webob.Response(status=status)
        if body is not None:
            resp.json_body = body
        elif text is not None:
            resp.content_type = 'text/plain'
            resp.text = text
        else:
            resp.content_type = None
        return resp

    @webob.dec.wsgify
    def __call__(self, req):
        body = None
        if req.body:
            body = json.loads(req.body)
        self.requests.append(Recorded(
            req.method, req.path, req.GET.dict_of_lists(), body,
            dict(req.headers)))
        if self._injected:
            return self._resp(*self._injected.pop(0))
        path = req.path
        if not path.startswith('/v2/'):
            return self._resp(*cyborg_error(404, 'no route'))
        path = path[len('/v2'):]
        handler = {
            ('GET', '/device_profiles'): self._list_profiles,
            ('POST', '/accelerator_requests'): self._create_arqs,
            ('PATCH', '/accelerator_requests'): self._patch_arqs,
            ('GET', '/accelerator_requests'): self._list_arqs,
            ('DELETE', '/accelerator_requests'): self._delete_arqs,
        }.get((req.method, path))
        if handler:
            return self._resp(*handler(req, body))
        if req.method == 'GET' and path.startswith('/accelerator_requests/'):
            arq = self.arqs.get(path.rsplit('/', 1)[1])
            if arq is None:
                return self._resp(*cyborg_error(404, 'ARQ not found'))
            return self._resp(200, arq)
        return self._resp(*cyborg_error(405, 'unsupported'))

    def _list_profiles(self, req, body):
        name = req.GET.get('name')
        profiles = [p for p in self.profiles
                    if name is None or p['name'] == name]
        return 200, {'device_profiles': profiles}

    def _create_arqs(self, req, body):
        name = body.get('device_profile_name')
        matches = [p for p in self.profiles if p['name'] == name]
        if not matches:
            return cyborg_error(404, 'Device profile %s not found' % name)
        created = []
        for gid, group in enumerate(matches[0]['groups']):
            for key, val in group.items():
                if not key.startswith('resources:'):
                    continue
                for _ in range(int(val)):
                    arq = {'uuid': str(uuid.uuid4()), 'state': 'Initial',
                           'device_profile_name': name,
                           'device_profile_group_id': gid,
                           'hostname': None, 'device_rp_uuid': None,
                           'instance_uuid': None, 'project_id': None,
                           'attach_handle_type': None,
                           'attach_handle_uuid': None,
                           'attach_handle_info': None}
                    self.arqs[arq['uuid']] = arq
                    created.append(arq)
        return 201, {'arqs': created}

    def _patch_arqs(self, req, body):
        for arq_uuid in body:
            if arq_uuid not in self.arqs:
                return cyborg_error(404, 'ARQ %s not found' % arq_uuid)
        for arq_uuid, ops in body.items():
            arq = self.arqs[arq_uuid]
            kinds = {op['op'] for op in ops}
            if kinds == {'add'}:
                for op in ops:
                    arq[op['path'].lstrip('/')] = op['value']
                arq['state'] = 'Bound'
                arq['attach_handle_type'] = 'PCI'
                arq['attach_handle_info'] = {'domain': '0000', 'bus': 'af',
                                             'device': '00', 'function': '0'}
            elif kinds == {'remove'}:
                for op in ops:
                    arq[op['path'].lstrip('/')] = None
                arq['state'] = 'Unbound'
            else:
                return cyborg_error(400, 'mixed patch ops')
        return 202, None

    def _list_arqs(self, req, body):
        instance = req.GET.get('instance')
        arqs = [a for a in self.arqs.values()
                if instance is None or a['instance_uuid'] == instance]
        return 200, {'arqs': arqs}

    def _delete_arqs(self, req, body):
        if 'instance' in req.GET:
            doomed = [u for u, a in self.arqs.items()
                      if a['instance_uuid'] == req.GET['instance']]
        else:
            doomed = req.GET.get('arqs', '').split(',')
            if any(u not in self.arqs for u in doomed):
                for u in doomed:
                    self.arqs.pop(u, None)
                return cyborg_error(404, 'some ARQs not found')
        for u in doomed:
            del self.arqs[u]
        return 204, None


def make_adapter(endpoint=ENDPOINT, token=TOKEN):
    """A real keystoneauth Session + Adapter for the accelerator service."""
    auth = token_endpoint.Token(endpoint, token)
    sess = ks_session.Session(auth=auth)
    return ks_adapter.Adapter(sess, service_type='accelerator',
                              endpoint_override=endpoint)


class FakeAcceleratorFixture(fixtures.Fixture):
    """Serve a FakeAccelerator at ENDPOINT through wsgi-intercept."""

    def _setUp(self):
        self.fake = FakeAccelerator()
        icpt = interceptor.RequestsInterceptor(
            app=lambda: self.fake, host=HOST, port=80)
        icpt.install_intercept()
        self.addCleanup(icpt.uninstall_intercept)
