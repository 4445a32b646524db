"""Tempest REST client of the accelerator (Cyborg v2) API of accel_backend.

The endpoint from the catalog includes ``/v2``; paths here are relative to
it.  ``microversion`` (e.g. ``'2.2'``) adds
``OpenStack-API-Version: accelerator <v>``; none sends no header (2.0, as
Nova does).
"""

import json
from urllib import parse

from tempest.lib.common import rest_client


class AcceleratorClient(rest_client.RestClient):

    def __init__(self, auth_provider, service, region, microversion=None,
                 **kwargs):
        super().__init__(auth_provider, service, region, **kwargs)
        self.microversion = microversion

    def get_headers(self, accept_type=None, send_type=None):
        headers = super().get_headers(accept_type, send_type)
        if self.microversion:
            headers['OpenStack-API-Version'] = (
                'accelerator %s' % self.microversion)
        return headers

    def _json(self, resp, body, expected):
        self.expected_success(expected, resp.status)
        body = json.loads(body) if body else {}
        return rest_client.ResponseBody(resp, body)

    def _list(self, url, params):
        """GET ``url`` with the query ``params`` (a dict); expects 200."""
        if params:
            url += '?' + parse.urlencode(params)
        resp, body = self.get(url)
        return self._json(resp, body, 200)

    # -- device profiles ---------------------------------------------------

    def create_device_profile(self, name, groups, description=None):
        """POST /device_profiles with a list holding the profile (as
        Cyborg 17 takes it); returns the profile (201)."""
        body = {'name': name, 'groups': groups}
        if description is not None:
            body['description'] = description
        resp, body = self.post('device_profiles', json.dumps([body]))
        return self._json(resp, body, 201)

    def list_device_profiles(self, **params):
        """GET /device_profiles[?name=...]."""
        return self._list('device_profiles', params)

    def show_device_profile(self, uuid_or_name):
        resp, body = self.get('device_profiles/%s' % uuid_or_name)
        return self._json(resp, body, 200)

    def delete_device_profile(self, uuid_or_name):
        resp, body = self.delete('device_profiles/%s' % uuid_or_name)
        return self._json(resp, body, 204)

    # -- accelerator requests (ARQs) -----------------------------------------

    def create_arqs(self, device_profile_name):
        resp, body = self.post('accelerator_requests', json.dumps(
            {'device_profile_name': device_profile_name}))
        return self._json(resp, body, 201)

    def list_arqs(self, **params):
        """GET /accelerator_requests[?instance=...&bind_state=...]."""
        return self._list('accelerator_requests', params)

    def show_arq(self, arq_uuid):
        resp, body = self.get('accelerator_requests/%s' % arq_uuid)
        return self._json(resp, body, 200)

    def delete_arqs(self, arq_uuids):
        resp, body = self.delete('accelerator_requests?arqs=%s' %
                                 ','.join(arq_uuids))
        return self._json(resp, body, 204)

    def delete_arqs_of_instance(self, instance_uuid):
        resp, body = self.delete('accelerator_requests?instance=%s' %
                                 instance_uuid)
        return self._json(resp, body, 204)

    # -- devices and deployables --------------------------------------------

    def list_devices(self):
        resp, body = self.get('devices')
        return self._json(resp, body, 200)

    def list_deployables(self):
        resp, body = self.get('deployables')
        return self._json(resp, body, 200)
