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

"""The route table: URL template -> {HTTP method: handler}.

Like openstack/placement's ``ROUTE_DECLARATIONS``: the whole API surface in
one place; a method missing for a path answers 405 with ``Allow``.
"""

from accel_backend.api.handlers import arq
from accel_backend.api.handlers import attribute
from accel_backend.api.handlers import deployable
from accel_backend.api.handlers import device
from accel_backend.api.handlers import device_profile
from accel_backend.api.handlers import root
from accel_backend.api.handlers import taint

ROUTES = {
    '': {'GET': root.versions},
    '/': {'GET': root.versions},
    '/v2': {'GET': root.v2},
    '/v2/': {'GET': root.v2},
    '/v2/device_profiles': {
        'GET': device_profile.list_,
        'POST': device_profile.create,
        'DELETE': device_profile.delete_by_value,
    },
    '/v2/device_profiles/': {
        'GET': device_profile.list_,
        'DELETE': device_profile.delete_unnamed,
    },
    '/v2/device_profiles/{ident}': {
        'GET': device_profile.show,
        'DELETE': device_profile.delete,
    },
    '/v2/accelerator_requests': {
        'GET': arq.list_,
        'POST': arq.create,
        'PATCH': arq.update,
        'DELETE': arq.delete,
    },
    '/v2/accelerator_requests/{arq_uuid}': {
        'GET': arq.show,
        # How openstacksdk (so both ``openstack accelerator arq ...``
        # command sets) binds, unbinds and deletes one ARQ; Cyborg takes
        # these too.
        'PATCH': arq.update,
        'DELETE': arq.delete,
    },
    '/v2/devices': {'GET': device.list_},
    '/v2/devices/{device_uuid}': {'GET': device.show},
    '/v2/devices/{device_uuid}/enable': {'POST': device.enable},
    '/v2/devices/{device_uuid}/disable': {'POST': device.disable},
    '/v2/deployables': {'GET': deployable.list_},
    # Before the template below: at microversions before 2.4 the handler
    # answers as ``show`` of an id that is no UUID (400), as before.
    '/v2/deployables/free_by_numa_node': {
        'GET': deployable.free_by_numa_node},
    '/v2/deployables/{deployable_uuid}': {'GET': deployable.show},
    '/v2/deployables/{deployable_uuid}/program': {
        'PATCH': deployable.program,
    },
    # Microversion 2.5; before it the handlers answer 404, as before.
    '/v2/deployables/{deployable_uuid}/taints': {
        'GET': taint.list_,
        'POST': taint.create,
    },
    '/v2/deployables/{deployable_uuid}/taints/{taint_uuid}': {
        'DELETE': taint.delete,
    },
    '/v2/attributes': {
        'GET': attribute.list_,
        'POST': attribute.create,
    },
    '/v2/attributes/{attribute_uuid}': {
        'GET': attribute.show,
        'DELETE': attribute.delete,
    },
}
