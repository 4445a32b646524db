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

"""MIG-backed vGPU types: which vGPU type runs on which MIG GPU instance
profile.

NVIDIA's vGPU types reference (NVIDIA AI Enterprise, "NVIDIA vGPU Types
Reference": "Ampere Architecture vGPU Types", "Hopper Architecture vGPU
Types", tables "MIG-Backed NVIDIA vGPU for Compute for NVIDIA <board>",
column "Corresponding GPU Instance Profile") names every MIG-backed
type ``<board>-<compute slices>-<framebuffer GB>C``, with ``ME`` after
the ``C`` for the profile with media extensions, and gives the profile
``<compute slices>g.<GB>gb`` (``+me``): ``H200X-3-71C`` is ``MIG
3g.71gb`` on an H200 SXM5 141GB, ``H100XM-1-10CME`` ``MIG 1g.10gb+me``
on an H100 SXM5 80GB, ``A100-3-20C`` ``MIG 3g.20gb`` on an A100 40GB.
Time-sliced types have no middle number (``H200X-70C``).  The driver
shows a type with a vendor prefix (``NVIDIA H200X-3-71C`` in a VF's
``creatable_vgpu_types``, ``GRID A100-3-20C`` in older mdev ``name``
files), which is not part of the table's name.

A GPU in MIG mode offers MIG-backed types only, and a type only while a
free GPU instance of its profile exists (creating the vGPU takes it).
"""

import re

_PREFIXES = ('NVIDIA ', 'GRID ')
_MIG_BACKED = re.compile(
    r'^(?P<board>[A-Z][A-Z0-9]*)-(?P<compute>[1-7])-(?P<gb>[0-9]+)C'
    r'(?P<me>ME)?$')


def table_name(type_name):
    """The type's name as NVIDIA's tables print it: ``type_name`` (str)
    without the driver's vendor prefix."""
    for prefix in _PREFIXES:
        if type_name.startswith(prefix):
            return type_name[len(prefix):]
    return type_name


def mig_profile(type_name):
    """The MIG GPU instance profile (str, ``'3g.71gb'``,
    ``'1g.18gb+me'``) a vGPU type runs on, or None for a time-sliced
    type or a name of another form.

    :param type_name: a vGPU type name as the driver shows it
        (``'NVIDIA H200X-3-71C'``) or as the tables print it.
    """
    found = _MIG_BACKED.match(table_name(type_name.strip()))
    if found is None:
        return None
    return '%sg.%sgb%s' % (found.group('compute'), found.group('gb'),
                           '+me' if found.group('me') else '')
