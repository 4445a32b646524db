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

"""What the agent reports and the conductor stores, as pure rules that
both read: pools of identical functions (``pooling``), AER health
verdicts (``aer``), HGX boards (``hgx``), the refusal of a mass
removal (``removal``), the records of resource providers
(``provider_records``), the UUIDs and names of a host's rows (``ids``)
and the states of a host's last discovery pass (``host_states``).
Nothing here reads sysfs, the database or the network.
"""
