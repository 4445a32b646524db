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

"""Version documents at ``/`` and ``/v2``.

Nova's client (openstacksdk/keystoneauth) discovers the endpoint with
``GET {endpoint}`` and then follows the ``self`` link of the ``/v2``
document, so that link must be the URL actually served (openstacksdk,
``openstack/proxy.py``, and keystoneauth version discovery).
"""

from accel_backend.api import microversion
from accel_backend.api import util


def _v2(req):
    return {
        'id': 'v2.0',
        'status': 'CURRENT',
        'min_version': microversion.fmt(microversion.MIN_VERSION),
        'max_version': microversion.fmt(microversion.MAX_VERSION),
        'links': [{'rel': 'self', 'href': util.base_url(req) + '/'}],
    }


def versions(req):
    """``GET /``: all versions and the default one."""
    v2 = _v2(req)
    return util.response(200, {
        'name': 'nova-accel accel_backend',
        'description': 'Cyborg v2 compatible accelerator API',
        'versions': [v2],
        'default_version': v2,
    })


def v2(req):
    """``GET /v2``: the v2 version document."""
    return util.response(200, _v2(req))
