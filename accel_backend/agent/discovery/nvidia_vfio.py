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

"""NVIDIA's vendor-specific VFIO vGPU files of an SR-IOV VF.

With NVIDIA vGPU 17 and later on Ada, Hopper and newer GPUs (kernels
6.8+), there are no mediated devices.  ``sriov-manage -e <PF>`` enables
the PF's VFs, which stay on the ``nvidia`` driver, and each VF has (NVIDIA
vGPU user guide, "vendor-specific VFIO framework"; NVIDIA's
kubevirt-gpu-device-plugin README):

* ``<VF>/nvidia/creatable_vgpu_types``: a header line ``ID    : vGPU
  Name``, then one ``<id> : <name>`` line per vGPU type the VF can
  still be given.  Ids are the card's own (another card may number the
  same profile differently) and the list shrinks as the card fills: on a
  full card it is the header alone;
* ``<VF>/nvidia/current_vgpu_type``: the type id the VF carries, ``0``
  for none.  Writing an id creates the vGPU; writing ``0`` destroys it.

A VF with a type is assigned to a guest as a PCI device that stays on
``nvidia`` (libvirt ``<hostdev managed='no'>``).

Every write goes through ``LOCK``, so that a discovery pass never sees the
``0`` a cleaning writes between destroying and recreating a vGPU.
"""

import os
import threading

#: Serializes this process's reads-then-writes of ``current_vgpu_type``.
LOCK = threading.Lock()


class VGPUTypeError(Exception):
    """A vGPU type could not be set on a VF; the message says why."""


def _path(root, address, name):
    return os.path.join(root, address, 'nvidia', name)


def has_vgpu_files(root, address):
    """True when the function has NVIDIA's vendor-specific VFIO files."""
    return os.path.isfile(_path(root, address, 'current_vgpu_type'))


def creatable(root, address):
    """``{type id (int): profile name (str)}`` the VF can still be given
    ({} when the file is missing or holds the header alone)."""
    try:
        with open(_path(root, address, 'creatable_vgpu_types')) as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        left, sep, right = line.partition(':')
        if sep and left.strip().isdigit() and right.strip():
            found[int(left.strip())] = right.strip()
    return found


def current(root, address):
    """The VF's type id (int, 0 for none), or None when unreadable."""
    try:
        with open(_path(root, address, 'current_vgpu_type')) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _write(root, address, value):
    try:
        with open(_path(root, address, 'current_vgpu_type'), 'w') as f:
            f.write('%d\n' % value)
    except OSError as e:
        raise VGPUTypeError('writing %d to the current_vgpu_type of %s '
                            'failed: %s' % (value, address, e))


def set_profile(root, address, profile):
    """Give the VF ``address`` the vGPU type named ``profile``, read from
    its own ``creatable_vgpu_types`` (ids are the card's), under ``LOCK``.

    :returns: the type id written (int).
    :raises VGPUTypeError: the VF already carries a type, or the card
        cannot create ``profile`` any more, or the write failed.
    """
    with LOCK:
        return _set_locked(root, address, profile)


def _set_locked(root, address, profile):
    now = current(root, address)
    if now != 0:
        raise VGPUTypeError('%s carries vGPU type %s already' % (
            address, now))
    ids = [i for i, name in creatable(root, address).items()
           if name == profile]
    if not ids:
        raise VGPUTypeError('the card of %s cannot create a %s vGPU any '
                            'more' % (address, profile))
    _write(root, address, ids[0])
    if current(root, address) != ids[0]:
        raise VGPUTypeError('%s did not take vGPU type %d' % (
            address, ids[0]))
    return ids[0]


def recreate(root, address, profile):
    """Destroy the VF's vGPU and create a new one of ``profile`` (a
    cleaning: the new vGPU's framebuffer is fresh), under ``LOCK``.

    :returns: the type id written (int).
    :raises VGPUTypeError: as ``set_profile``, or the destroy failed.
    """
    with LOCK:
        _write(root, address, 0)
        if current(root, address) != 0:
            raise VGPUTypeError('the vGPU of %s was not destroyed' % address)
        return _set_locked(root, address, profile)


def clear(root, address):
    """Destroy the VF's vGPU, if it has one (write 0 to
    ``current_vgpu_type``), under ``LOCK``: its GPU instance is free
    again (a MIG repartition, ``agent.mig.repartition``).

    :raises VGPUTypeError: the write failed or did not take.
    """
    with LOCK:
        if current(root, address) in (0, None):
            return
        _write(root, address, 0)
        if current(root, address) != 0:
            raise VGPUTypeError('the vGPU of %s was not destroyed' % address)
