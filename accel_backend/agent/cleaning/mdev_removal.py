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

"""The ``mdev`` cleaning method: the released unit's mediated device is
destroyed, so that the next guest gets a fresh one (the virt driver
creates it again from the attach handle, Nova 34's
``_allocate_cyborg_mdevs`` or ``nova_accel.virt.mdevs``).

Kernel (Linux 6.1, ``Documentation/driver-api/vfio-mediated-device.rst``):
writing ``1`` to ``/sys/bus/mdev/devices/<uuid>/remove`` destroys the
device (``EBUSY`` while a guest holds it).  Nova defines the devices it
creates with libvirt, which keeps the definition with ``mdevctl``
(``/etc/mdevctl.d``); ``mdevctl undefine --uuid`` drops it, or libvirt
would still list the device (inactive) and Nova would find it instead of
creating it (libvirt 9.0 and mdevctl 1.2, seen on the nested compute
node).
"""

import os
import shutil
import subprocess


class MdevRemovalError(Exception):
    """The mediated device could not be destroyed; the message says why.
    """


def devices_dir(sysfs_root):
    """``/sys/bus/mdev/devices`` of the sysfs whose PCI functions are
    under ``sysfs_root`` (``/sys/bus/pci/devices``)."""
    bus_dir = os.path.dirname(os.path.dirname(os.path.normpath(
        sysfs_root)))
    return os.path.join(bus_dir, 'mdev', 'devices')


def remove(mdev_uuid, sysfs_root, mdevctl='mdevctl', timeout=60):
    """Destroy mediated device ``mdev_uuid`` and its mdevctl definition;
    a device that does not exist (any more) is no error (idempotent).

    :param mdev_uuid: the device's UUID (str; the attach handle's UUID).
    :param sysfs_root: ``[discovery] sysfs_root``.
    :param mdevctl: the mdevctl program; when it is not installed there
        is no definition to drop.
    :param timeout: seconds mdevctl may run.
    :raises MdevRemovalError: the kernel refused (a guest still holds
        it) or mdevctl failed.
    """
    path = os.path.join(devices_dir(sysfs_root), mdev_uuid)
    if os.path.exists(path):
        try:
            with open(os.path.join(path, 'remove'), 'w') as f:
                f.write('1')
        except OSError as e:
            raise MdevRemovalError('removing mediated device %s failed: %s'
                                   % (mdev_uuid, e))
    program = shutil.which(mdevctl)
    if program is None:
        return
    try:
        for action in ('list', 'undefine'):
            args = [program, action] + (['--defined'] if action == 'list'
                                        else []) + ['--uuid', mdev_uuid]
            done = subprocess.run(args, capture_output=True, text=True,
                                  timeout=timeout)
            if done.returncode:
                raise MdevRemovalError('%s exited %d: %s' % (
                    ' '.join(args), done.returncode,
                    done.stderr.strip()[-300:]))
            if action == 'list' and not done.stdout.strip():
                return      # not defined
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MdevRemovalError('mdevctl for %s failed: %s' % (mdev_uuid, e))
