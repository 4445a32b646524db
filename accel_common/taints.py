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

"""Device taint effects and well-known keys, shared by accel_backend
(``objects.taint``, the API's schema) and the ``openstack accelerator
device taint`` commands (``nova_accel.osc.taint``).

After Kubernetes DRA's device taints (KEP-5055, ``resource.k8s.io``
``DeviceTaint``): ``NoSchedule`` keeps new work off the device,
``NoExecute`` also takes it from its guests (here: quarantined when
released, and replaced under running guests by ``nova_accel``'s
failed-device watch or ``nova-accel replace-accelerator``).
"""

NO_SCHEDULE = 'NoSchedule'
NO_EXECUTE = 'NoExecute'
EFFECTS = (NO_SCHEDULE, NO_EXECUTE)
#: The key ``accel-backend-manage device drain`` sets and ``undrain``
#: removes.
DRAIN_KEY = 'accel.openstack.org/drain'
#: The audit's taint of a device a Bound ARQ holds without an allocation
#: in Placement (``accel_backend.conductor.orphan_taints``).
UNALLOCATED_KEY = 'accel.openstack.org/unallocated'
#: The key of the taint that holds a GPU while its MIG layout changes
#: (``accel_backend.agent.mig.repartition``).
REPARTITION_KEY = 'accel.openstack.org/repartition'
#: ``set_by`` of the taints of ``[taints] devices`` (accel_backend's
#: configuration file, set and removed by discovery).
CONFIG_SET_BY = 'accel_backend.config'
#: The API microversion that serves taints (``OpenStack-API-Version:
#: accelerator 2.5``).
MICROVERSION = '2.5'
