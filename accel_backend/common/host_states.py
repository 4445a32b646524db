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

"""The states of a host's last discovery pass.

The agent (or the embedded service, ``accel_backend.service``) records one
after every pass and when it refuses to start
(``conductor.store.HostStore.record_status``, over the conductor's RPC
API from an agent); the conductor stores it (``objects.host_status``),
and the API's ``/healthcheck`` and ``accel-backend-manage discovery
status`` read it.  Each value is the ``state`` column of the
``host_status`` table.
"""

#: The pass reported every device it found.
OK = 'ok'
#: A misconfiguration (sysfs root, Nova's ``[pci] device_spec``, a mass
#: removal): nothing was reported or removed.
REFUSED = 'refused'
#: Anything else that failed (Placement unreachable...): retried.
FAILING = 'failing'
#: The pass was reported, but a misconfiguration made discovery withhold
#: devices (a Nova ``[pci] device_spec`` value that does not parse: the
#: ids it names are left to Nova).
DEGRADED = 'degraded'
#: Pooling was turned on and the host's per-device providers are being
#: migrated into pools (``agent.placement.reshape``): binds that find no
#: attach handle on it wait, ``BindStarted``, until a pass finishes the
#: migration (``conductor.failure.HOST_MIGRATING``).
MIGRATING = 'migrating'
