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

"""MIG (Multi-Instance GPU): slices sold, and partitioning.

``traits``: what a slice is called in Placement (``CUSTOM_MIG_SLICE``
and its traits), for every provider that sells one; ``vgpu_types``: the
MIG profile a MIG-backed vGPU type runs on.  The discovery drivers
``nvidia_vgpu`` and ``mdev`` sell the slices of GPU instances an
operator carved.  Partitioning is not wired into the agent yet:
``profiles``: each GPU model's MIG profiles and the rules of a GPU's
layout of GPU instances; ``host``: the host-side interface
(``MigHost``), a simulated host and one driving ``nvidia-smi mig``;
``planner``: the repartitioning plan of a host's idle GPUs;
``inventory``: the GPU instances as resource providers in Placement
(one per GI, ``CUSTOM_MIG_SLICE`` with profile, model and memory
traits), kept equal to the host's GIs.
"""
