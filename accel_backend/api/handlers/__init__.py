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

"""One module per API resource of the Cyborg v2 API (openstack-cyborg
17.0.0, ``cyborg/api/controllers/v2``).

Every handler takes the ``webob.Request`` and the route's path segments
(str, named as in ``accel_backend.api.route_table``), and returns a
``webob.Response`` (``api.util.response``).  Errors leave as
``accel_backend.exception.AccelBackendError`` subclasses, which
``api.deploy.AccelApp`` turns into their status and an error document; every
handler may raise ``Forbidden`` (403) when the policy rule named in its
body refuses the caller, and the ones that read a body
``InvalidJSON``/``SchemaValidationError`` (400).  A handler's docstring
names the route, the answer and the other errors.
"""
