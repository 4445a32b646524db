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

"""The ``mdev`` driver's deployables of virtual mediated-device parents
(``agent.discovery.mdev_bus``): the kernel's ``mtty`` sample and the
like, which Nova 34's own vGPU code also accepts (``[mdev_<type>]
device_addresses = mtty_mtty``).

Each parent offers one enabled type, chosen as for a GPU: the type whose
``[mdev_<type>] device_addresses`` names the parent (``mtty_mtty``),
else the first enabled type without ``device_addresses``.  Capacity: the
type's ``available_instances`` plus its devices already created, capped
by ``[mdev_<type>] max_instances``.  Its attach handles are ``MDEV``
handles without PCI fields: ``parent`` (the node device name),
``parent_addr`` (libvirt's name of the parent in its mediated devices'
names), ``asked_type`` and ``vgpu_mark``; ``accel.LibvirtDriver`` creates
the mediated device from them
(``nova_accel.virt.mdevs``).
"""

import os_traits

from accel_backend.agent.discovery import mdev_bus
from accel_backend.common import discovered


def type_trait(type_id):
    """``CUSTOM_MDEV_<TYPE>``: ``mtty-2`` -> ``CUSTOM_MDEV_MTTY_2``
    (``os_traits.normalize_name``)."""
    return os_traits.normalize_name('MDEV_' + type_id)


def handle_info(parent, type_id, mark):
    """The ``MDEV`` attach info of one unit of ``parent`` (a
    ``mdev_bus.VirtualParent``) of type ``type_id`` (dict)."""
    return {'parent': parent.name, 'parent_addr': parent.parent_addr,
            'asked_type': type_id, 'vgpu_mark': mark}


def deployables(path, type_for, max_instances, resource_class, cleaning,
                warn_once):
    """The deployables of the virtual parents under ``path``.

    :param path: the ``class/mdev_bus`` directory (str).
    :param type_for: callable(parent name) -> enabled type id or None.
    :param max_instances: ``{type id: int or None}``.
    :param resource_class: the inventory's resource class (str).
    :param cleaning: the cleaning method of the driver (str).
    :param warn_once: callable(key, message, *args) logging a warning
        once per key.
    :returns: list of ``DiscoveredDeployable`` (address: the parent's
        node device name), by name.
    """
    found = []
    for parent in mdev_bus.virtual_parents(path):
        types = {t.type_id: t for t in parent.types}
        type_id = type_for(parent.name)
        if type_id not in types:
            warn_once(parent.name, 'mdev parent %s offers types %s; none '
                      'of them is enabled for it ([discovery] mdev_types, '
                      '[mdev_<type>] device_addresses)', parent.name,
                      sorted(types))
            continue
        capacity = types[type_id].capacity
        if max_instances.get(type_id) is not None:
            capacity = min(capacity, max_instances[type_id])
        handles = [('MDEV', handle_info(parent, type_id,
                                        '%s_%d' % (type_id, i)))
                   for i in range(capacity)]
        found.append(discovered.DiscoveredDeployable(
            address=parent.name, device_type='OTHER', vendor_id='',
            product_id='', model=parent.parent_addr, driver_name='mdev',
            resource_class=resource_class,
            traits={os_traits.OWNER_CYBORG, type_trait(type_id)},
            attach_handles=handles, subname=type_id, cleaning=cleaning,
            std_board_info={'parent': parent.path, 'mdev_types': {
                t.type_id: {'name': t.name, 'device_api': t.device_api}
                for t in parent.types}}))
    return found
