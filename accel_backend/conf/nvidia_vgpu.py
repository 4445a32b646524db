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

"""``[nvidia_vgpu]``: the ``nvidia_vgpu`` discovery driver (NVIDIA vGPU
through the vendor-specific VFIO framework, vGPU 17+ on Ada, Hopper and
newer GPUs)."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    'nvidia_vgpu', title='NVIDIA vGPU on SR-IOV VFs (vendor-specific VFIO)')
OPTS = [
    cfg.ListOpt('profiles', default=[],
                help='vGPU profiles to offer, by the name NVIDIA\'s '
                     '``creatable_vgpu_types`` gives them (e.g. ``NVIDIA '
                     'H100-40C``). Each GPU offers the first of these it '
                     'supports, one profile per GPU (a time-sliced GPU runs '
                     'one framebuffer size at a time). A GPU in MIG mode '
                     'offers every MIG-backed type listed here (``NVIDIA '
                     'H200X-3-71C``: ``<board>-<slices>-<GB>C``), one '
                     '``CUSTOM_MIG_SLICE`` provider per type, each vGPU on '
                     'a GPU instance of its own. Empty: nothing is '
                     'offered, with a warning naming what the GPUs offer.'),
    cfg.BoolOpt('configure_vfs', default=True,
                help='Give every free VF of a GPU its profile (write the '
                     'type id to ``nvidia/current_vgpu_type``) until the '
                     'card can create no more, as NVIDIA\'s vGPU device '
                     'manager does, so that the inventory is exactly what '
                     'the card holds. False: offer only the VFs an '
                     'operator (or NVIDIA\'s vgpu-device-manager) has '
                     'configured.'),
]
