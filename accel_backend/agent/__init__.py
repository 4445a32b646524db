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

"""The agent: what runs on each compute node (``accel-backend-agent``),
without database credentials.

``discovery``: the host's accelerators from sysfs, through the drivers
of the ``accel_backend.discovery.drivers`` entry points; ``placement``:
the host's resource providers, inventories and traits in Placement;
``cleaning``: a device cleaned between tenants; ``rpc``: what the agent
serves, ``rpcapi``: its client, for the API and the conductor.  Rows
reach the agent through ``accel_backend.conductor.rpcapi
.RemoteHostStore``; the embedded ``accel-backend`` composes the same
parts with the database store (``accel_backend.service``).
"""
