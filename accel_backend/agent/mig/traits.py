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

"""What a MIG slice is called in Placement: its resource class and
traits, one scheme for every provider that sells a slice (a GPU
instance's own provider, ``mig.inventory``, and a GPU's MIG-backed
vGPUs, ``agent.discovery.drivers.nvidia_vgpu``).

* One resource class for every profile, ``CUSTOM_MIG_SLICE``: a
  provider with a class per profile *and* a common class would hold two
  units that two tenants could take at once, over-committing the GPU
  instance.
* What a flavor asks for is in traits: the profile
  (``CUSTOM_MIG_3G_71GB``: ``os_traits.normalize_name('MIG_' +
  profile)``), the GPU model (``CUSTOM_GPU_H200_SXM5_141GB``:
  ``normalize_name('GPU_' + model)``, a key of ``profiles.MODELS``),
  ``CUSTOM_MIG_MEM_GE_<N>GB`` for every N of ``MEMORY_THRESHOLDS_GB``
  at most the profile's memory, and ``OWNER_CYBORG``.  So "a 3g.40gb
  slice of an H100" is ``resources=CUSTOM_MIG_SLICE:1&required=
  CUSTOM_MIG_3G_40GB,CUSTOM_GPU_H100_SXM5_80GB`` and "any slice with at
  least 20 GB" is ``resources=CUSTOM_MIG_SLICE:1&required=
  CUSTOM_MIG_MEM_GE_20GB`` (in a device profile's group:
  ``resources:CUSTOM_MIG_SLICE=1``, ``trait:...=required``).
"""

import os_traits

from accel_backend.agent.mig import profiles

#: The resource class of every MIG slice.
SLICE_RC = 'CUSTOM_MIG_SLICE'
#: The N (GB) of the ``CUSTOM_MIG_MEM_GE_<N>GB`` traits.
MEMORY_THRESHOLDS_GB = (5, 10, 20, 40, 70, 80, 140, 180)
OWNER_TRAIT = os_traits.OWNER_CYBORG


def profile_trait(profile):
    """``CUSTOM_MIG_<PROFILE>`` of a profile name (``'1g.18gb+me'`` ->
    ``'CUSTOM_MIG_1G_18GB_ME'``)."""
    return os_traits.normalize_name('MIG_' + profile)


def model_trait(model):
    """``CUSTOM_GPU_<MODEL>`` of a key of ``profiles.MODELS``."""
    return os_traits.normalize_name('GPU_' + model)


def memory_traits(memory_gb):
    """The ``CUSTOM_MIG_MEM_GE_<N>GB`` traits (set of str) of a slice of
    ``memory_gb`` GB (int)."""
    return {'CUSTOM_MIG_MEM_GE_%dGB' % n for n in MEMORY_THRESHOLDS_GB
            if memory_gb >= n}


def slice_traits(model_name, profile):
    """Every trait (set of str) of a slice of ``profile`` (str, a
    profile name of the model) on a ``model_name`` GPU (a key of
    ``profiles.MODELS``).

    :raises exception.MigModelUnknown: unknown model.
    :raises KeyError: the model has no such profile.
    """
    prof = profiles.profile(model_name, profile)
    return {profile_trait(profile), model_trait(model_name),
            OWNER_TRAIT}.union(memory_traits(prof.memory_gb))
