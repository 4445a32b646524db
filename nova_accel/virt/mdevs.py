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

"""``MDEV`` attach handles on mediated-device parents that are not PCI
functions (the kernel's ``mtty`` sample; ``accel_backend``'s
``agent.discovery.drivers.mdev_virtual`` reports them).

Nova 34's ``LibvirtDriver._allocate_cyborg_mdevs``
(``nova/virt/libvirt/driver.py``, 34.0.0) names the parent
``pci_<domain>_<bus>_<device>_<function>`` and the mediated device
``mdev_<uuid>_<domain>_<bus>_<device>_<function>`` from the handle's PCI
fields, so it cannot create a device on such a parent.  Their handles
carry instead ``parent`` (libvirt's node device name, ``mtty_mtty``) and
``parent_addr`` (libvirt's name of the parent in its mediated devices'
node device names: ``mdev_<uuid, '-' as '_'>_mtty``, libvirt 9.0).
"""

import re
import uuid

from lxml import etree

from nova_accel.virt import exception

#: libvirt node device names (``mtty_mtty``) and parent addresses.
_NAME_RE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*')


def on_virtual_parent(arq):
    """Whether ``arq`` (a bound ARQ dict) is an ``MDEV`` handle of a
    parent that is not a PCI function (no ``domain``, a
    ``parent_addr``)."""
    info = arq.get('attach_handle_info') or {}
    return (arq.get('attach_handle_type') == 'MDEV' and
            'domain' not in info and 'parent_addr' in info)


def creation(arq):
    """What creating ``arq``'s mediated device takes.

    :param arq: a bound ARQ dict ``on_virtual_parent``.
    :returns: ``(mdev UUID, parent node device name, mdev type, node
        device name of the mediated device)``, all str.
    :raises InvalidAttachHandle: the UUID is not one, or ``parent``,
        ``parent_addr`` or ``asked_type`` is missing or not a plain name.
    """
    arq_uuid = arq.get('uuid')
    info = arq['attach_handle_info']
    try:
        mdev_uuid = str(uuid.UUID(arq.get('attach_handle_uuid')))
    except (TypeError, ValueError, AttributeError):
        raise exception.InvalidAttachHandle(
            arq_uuid, 'MDEV attach_handle_uuid %r is not a UUID' %
            (arq.get('attach_handle_uuid'),))
    for key in ('parent', 'parent_addr', 'asked_type'):
        value = info.get(key)
        if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
            raise exception.InvalidAttachHandle(
                arq_uuid, 'MDEV attach_handle_info %s must be a plain name, '
                'got %r' % (key, value))
    name = 'mdev_%s_%s' % (mdev_uuid.replace('-', '_'), info['parent_addr'])
    return mdev_uuid, info['parent'], info['asked_type'], name


def live_alias(domain_xml, mdev_uuid):
    """The alias libvirt gave the guest's ``<hostdev type='mdev'>`` of
    ``mdev_uuid`` (``hostdev1``), or None.

    Nova 34 waits for a live detach's libvirt event by the device's alias
    (``LibvirtDriver._detach_from_live_and_wait_for_event``), which its
    ``LibvirtConfigGuestHostdevMDEV`` does not parse
    (``nova/virt/libvirt/config.py``, 34.0.0).

    :param domain_xml: the live domain XML (str).
    :param mdev_uuid: the mediated device's UUID (str).
    """
    for dev in etree.fromstring(domain_xml).iterfind(
            './devices/hostdev[@type="mdev"]'):
        if dev.find('./source/address[@uuid="%s"]' % mdev_uuid) is not None:
            alias = dev.find('./alias')
            return None if alias is None else alias.get('name')
    return None
