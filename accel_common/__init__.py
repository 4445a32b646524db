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

"""Rules shared by the two halves of nova-accel.

``nova_accel`` (Nova's side) and ``accel_backend`` (the accelerator
service) never import each other; what both must agree on lives here, once:
the ARQ state machine (:mod:`accel_common.arq_states`), device profile
groups (:mod:`accel_common.device_profile`) and PCI addresses
(:mod:`accel_common.pci`).  These modules import neither half, nor Nova,
nor SQLAlchemy, so the tempest plugin can use them too.
"""
