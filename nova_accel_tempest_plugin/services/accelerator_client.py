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

"""Tempest REST client of the accelerator (Cyborg v2) API of accel_backend.

The endpoint from the catalog includes ``/v2``; paths here are relative to
it.  ``microversion`` (e.g. ``'2.2'``) adds
``OpenStack-API-Version: accelerator <v>``; none sends no header (2.0, as
Nova does).  ``service_token`` (a callable returning a Keystone token,
str) adds ``X-Service-Token`` to every request, as Nova does with
``[service_user] send_service_user_token``: the accelerator API binds,
unbinds and deletes bound ARQs only for such a request (Cyborg 17's and
accel_backend's ``service_token_api`` rule).
"""

import json
from urllib import parse

from tempest.lib.common import rest_client


class AcceleratorClient(rest_client.RestClient):

    def __init__(self, auth_provider, service, region, microversion=None,
                 service_token=None, **kwargs):
        super().__init__(auth_provider, service, region, **kwargs)
        self.microversion = microversion
        self.service_token = service_token

    def get_headers(self, accept_type=None, send_type=None):
        headers = super().get_headers(accept_type, send_type)
        if self.microversion:
            headers['OpenStack-API-Version'] = (
                'accelerator %s' % self.microversion)
        if self.service_token is not None:
            headers['X-Service-Token'] = self.service_token()
        return headers

    def _json(self, resp, body, expected):
        self.expected_success(expected, resp.status)
        body = json.loads(body) if body else {}
        return rest_client.ResponseBody(resp, body)

    def _get(self, url, params=None):
        """GET ``url`` with the query ``params`` (a dict, or None);
        expects 200; returns the decoded body."""
        if params:
            url += '?' + parse.urlencode(params)
        resp, body = self.get(url)
        return self._json(resp, body, 200)

    def _post(self, url, payload):
        """POST ``payload`` (JSON-encoded) to ``url``; expects 201."""
        resp, body = self.post(url, json.dumps(payload))
        return self._json(resp, body, 201)

    def _delete(self, url):
        """DELETE ``url``; expects 204."""
        resp, body = self.delete(url)
        return self._json(resp, body, 204)

    # -- device profiles ---------------------------------------------------

    def create_device_profile(self, name, groups, description=None):
        """POST /device_profiles with a list holding the profile (as
        Cyborg 17 takes it); returns the profile (201)."""
        body = {'name': name, 'groups': groups}
        if description is not None:
            body['description'] = description
        return self._post('device_profiles', [body])

    def list_device_profiles(self, **params):
        """GET /device_profiles[?name=...]."""
        return self._get('device_profiles', params)

    def show_device_profile(self, uuid_or_name):
        """GET /device_profiles/{uuid or name (2.2)}."""
        return self._get('device_profiles/%s' % uuid_or_name)

    def delete_device_profile(self, uuid_or_name):
        """DELETE /device_profiles/{uuid or name} (204)."""
        return self._delete('device_profiles/%s' % uuid_or_name)

    # -- accelerator requests (ARQs) -----------------------------------------

    def create_arqs(self, device_profile_name):
        """POST /accelerator_requests for one device profile; returns
        ``{'arqs': [...]}`` (201)."""
        return self._post('accelerator_requests',
                          {'device_profile_name': device_profile_name})

    def list_arqs(self, **params):
        """GET /accelerator_requests[?instance=...&bind_state=...]."""
        return self._get('accelerator_requests', params)

    def show_arq(self, arq_uuid):
        """GET /accelerator_requests/{uuid}."""
        return self._get('accelerator_requests/%s' % arq_uuid)

    def bind_arqs(self, bindings):
        """PATCH /accelerator_requests: bind ARQs as Nova's conductor does
        (needs ``service_token``); the binding finishes in the background.

        :param bindings: ``{arq_uuid: {'hostname': ..., 'device_rp_uuid':
            ..., 'instance_uuid': ...}}`` (str values).
        :returns: the empty body (202).
        """
        body = {arq: [{'path': '/%s' % field, 'op': 'add', 'value': value}
                      for field, value in sorted(fields.items())]
                for arq, fields in bindings.items()}
        resp, body = self.patch('accelerator_requests', json.dumps(body))
        return self._json(resp, body, 202)

    def delete_arqs(self, arq_uuids):
        """DELETE /accelerator_requests?arqs=<uuid>,... (204)."""
        return self._delete('accelerator_requests?arqs=%s' %
                            ','.join(arq_uuids))

    def delete_arqs_of_instance(self, instance_uuid):
        """DELETE /accelerator_requests?instance=<uuid> (204)."""
        return self._delete('accelerator_requests?instance=%s' %
                            instance_uuid)

    # -- devices and deployables --------------------------------------------

    def list_devices(self):
        """GET /devices."""
        return self._get('devices')

    def list_deployables(self):
        """GET /deployables."""
        return self._get('deployables')
