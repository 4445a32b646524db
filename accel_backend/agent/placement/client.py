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

"""A thin keystoneauth1 client of the Placement API.

Raises ``PlacementError`` for any unexpected status so callers never get
half-read responses; 404 and 409 are returned to the caller where the
protocol expects them (lookups, generation conflicts).
"""

from oslo_log import log as logging

from accel_backend import exception
from accel_backend import metrics
from accel_backend import service_auth
from accel_common import placement_errors

LOG = logging.getLogger(__name__)
MICROVERSION = '1.36'
#: Placement's stable error codes (openstack-placement 16,
#: ``placement/errors.py``) that callers tell apart.
INVENTORY_INUSE = placement_errors.INVENTORY_INUSE
CONCURRENT_UPDATE = placement_errors.CONCURRENT_UPDATE


error_code = placement_errors.error_code


def adapter_from_conf(conf, group='placement', auth=None):
    """keystoneauth1 Adapter for ``service_type=placement`` from ``conf``.

    :param auth: a keystoneauth1 auth plugin overriding the configured one.
    """
    return service_auth.adapter_from_conf(
        conf, group, 'placement', auth=auth,
        default_microversion=MICROVERSION)


class PlacementClient:
    """Placement calls used by the reporter.

    :param adapter: keystoneauth1 ``Adapter`` whose endpoint is Placement.
    :param host: this host's name, the ``host`` label of the
        ``accel_placement_request_seconds`` metric.
    """

    def __init__(self, adapter, host=''):
        self.adapter = adapter
        self.host = host
        self.calls = 0

    def _request(self, method, url, ok=(200,), json=None):
        self.calls += 1
        with metrics.timed(metrics.PLACEMENT_SECONDS, host=self.host,
                           method=method, status='0') as labels:
            resp = self.adapter.request(url, method, json=json,
                                        raise_exc=False)
            labels['status'] = str(resp.status_code)
        if resp.status_code not in ok:
            raise exception.PlacementError(method=method, url=url,
                                           status=resp.status_code,
                                           body=resp.text[:500])
        return resp

    def get(self, url, ok=(200,)):
        """GET ``url``; returns the response (status in ``ok``)."""
        return self._request('GET', url, ok=ok)

    def put(self, url, body=None, ok=(200, 201, 204)):
        """PUT ``url`` with JSON ``body``; returns the response."""
        return self._request('PUT', url, ok=ok, json=body)

    def post(self, url, body, ok=(200, 201)):
        """POST JSON ``body`` to ``url``; returns the response."""
        return self._request('POST', url, ok=ok, json=body)

    def delete(self, url, ok=(204,)):
        """DELETE ``url``; returns the response."""
        return self._request('DELETE', url, ok=ok)
