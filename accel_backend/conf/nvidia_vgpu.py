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
from oslo_config import types


class MigLayout(types.ConfigType):
    """One ``[nvidia_vgpu] mig_layouts`` value, ``<model>:
    <profile>[,<profile>...]`` (``H200-SXM5-141GB: 3g.71gb,3g.71gb``),
    read as ``(model, [profile, ...])``.  Whether the MIG rules allow it
    is checked when the service starts
    (``agent.mig.repartition.from_conf``)."""

    def __init__(self):
        super().__init__(type_name='MIG layout')

    def __call__(self, value):
        if isinstance(value, tuple):
            return value
        model, sep, names = value.partition(':')
        names = [n.strip() for n in names.split(',') if n.strip()]
        if not sep or not model.strip() or not names:
            raise ValueError('expected "<model>: <profile>[,<profile>...]", '
                             'got %r' % value)
        return model.strip(), names

    def _formatter(self, value):
        return '%s: %s' % (value[0], ','.join(value[1]))


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
    cfg.MultiOpt('mig_layouts', item_type=MigLayout(), default=None,
                 help='Layouts a GPU in MIG mode may be repartitioned into '
                      'when it is idle, one per line: "<model>: '
                      '<profile>[,<profile>...]" (e.g. "H200-SXM5-141GB: '
                      '3g.71gb,3g.71gb"); models and profiles as NVIDIA\'s '
                      'MIG user guide names them. No line: no '
                      'repartitioning.'),
    cfg.Opt('mig_free_target',
            type=types.Dict(value_type=types.Integer(min=0)), default={},
            help='Free GPU instances wanted on this host per MIG profile '
                 '(e.g. "3g.71gb:2,1g.18gb:4"). After each discovery pass '
                 'the agent repartitions idle GPUs in MIG mode (nothing '
                 'bound, nothing allocated in Placement; held and '
                 'checkpointed first) into layouts of mig_layouts until '
                 'the target is met or no change gets closer; MIG mode '
                 'itself is never switched. Empty: no repartitioning.'),
]
