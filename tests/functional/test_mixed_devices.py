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

"""A whole GPU and a vGPU in one server (issue "nova_accel in Nova", part 2).

Host sysfs: a copy combining two recorded trees, the T4 of ``two-gpus`` at
0000:af:00.0 (vfio-pci, no mdev types: ``generic_pci`` reports it as
``PGPU``) and the mdev-capable T4 of ``mdev-gpu`` at 0000:41:00.0
(``mdev`` driver, type ``nvidia-222`` only: ``VGPU``, 16 units).  The
``mdev`` driver comes first in ``enabled_drivers`` so it owns 0000:41:00.0
(``generic_pci``'s spec matches that T4 too).

Nova 34 itself creates the mediated device: ``LibvirtDriver.spawn`` calls
``_allocate_cyborg_mdevs(accel_info)``, which looks the mdev up by its
nodedev name and, when libvirt answers ``VIR_ERR_NO_NODE_DEVICE``, calls
``_create_mdev(pci_0000_41_00_0, asked_type, uuid=attach_handle_uuid)``
(``nodeDeviceCreateXML`` + ``nodeDeviceDefineXML``); Nova's
``_guest_add_mdevs`` then writes the ``<hostdev type='mdev'>``.  Our driver
composes only the PCI hostdev.

Two things of Nova's fake libvirt are made to behave as libvirt does
(test harness only, no Nova code is changed):

* ``nodeDeviceLookupByName`` of an unknown ``mdev_*`` name raises
  ``KeyError`` (``HostMdevDevicesInfo`` is a plain dict lookup) instead of
  libvirt's ``VIR_ERR_NO_NODE_DEVICE`` error, which would fail every
  Cyborg mdev boot: :class:`LibvirtMdevDevicesInfo` raises the libvirt
  error.
* ``nodeDeviceCreateXML`` does nothing: :func:`node_device_create_xml`
  checks the parent is an mdev-capable PCI device of the host (the fake
  ``pci_info`` has one at 0000:41:00.0) and records the mdev, so the test
  can see which parent, type and UUID Nova asked for.
* ``nodeDeviceDefineXML`` returns None, on which ``_create_mdev`` fails
  (``device_set_autostart(None)``, then ``None.name()`` in its own
  error handler): :func:`node_device_define_xml` returns the device.
"""

import os
import shutil

import fixtures
from lxml import etree

from nova.tests.fixtures import libvirt as fakelibvirt
from nova.virt.libvirt import utils as libvirt_utils

from tests.functional import base

SYSFS = os.path.join(os.path.dirname(__file__), '..', 'fixtures', 'sysfs')
PCI_GPU = '0000:af:00.0'
MDEV_PARENT = '0000:41:00.0'
MDEV_PARENT_NODEDEV = 'pci_0000_41_00_0'


def no_node_device(name):
    """The ``libvirtError`` libvirt raises for an unknown node device."""
    return fakelibvirt.make_libvirtError(
        fakelibvirt.libvirtError,
        'Node device not found: no node device with matching name '
        "'%s'" % name,
        error_code=fakelibvirt.VIR_ERR_NO_NODE_DEVICE,
        error_domain=fakelibvirt.VIR_FROM_NODEDEV)


class LibvirtMdevDevicesInfo(fakelibvirt.HostMdevDevicesInfo):
    """``HostMdevDevicesInfo`` answering unknown names as libvirt does."""

    def get_device_by_name(self, device_name):
        try:
            return self.devices[device_name]
        except KeyError:
            raise no_node_device(device_name)


def node_device_create_xml(conn, xml, flags):
    """Fake ``virConnect.nodeDeviceCreateXML`` for mdevs."""
    doc = etree.fromstring(xml)
    parent = doc.findtext('parent')
    mdev_type = doc.find('./capability[@type="mdev"]/type').get('id')
    mdev_uuid = doc.findtext('./capability[@type="mdev"]/uuid')
    dev = conn.pci_info.get_device_by_name(parent)
    if dev is None or not dev.is_capable_of_mdevs:
        raise no_node_device(parent)
    # libvirt (>= 7.3) names an mdev nodedev after its UUID and parent.
    name = mdev_nodedev_name(mdev_uuid, parent)
    conn.mdev_info.devices[name] = fakelibvirt.FakeMdevDevice(
        dev_name=name, type_id=mdev_type, parent=parent)
    return MdevNodeDevice(conn, xml=conn.mdev_info.devices[name].XMLDesc(0))


def node_device_define_xml(conn, xml, flags):
    """Fake ``virConnect.nodeDeviceDefineXML``: the device made by
    :func:`node_device_create_xml` (the fake returns None, on which Nova's
    ``_create_mdev`` fails when it sets autostart)."""
    doc = etree.fromstring(xml)
    name = mdev_nodedev_name(
        doc.findtext('./capability[@type="mdev"]/uuid'),
        doc.findtext('parent'))
    dev = conn.mdev_info.get_device_by_name(name)
    return MdevNodeDevice(conn, xml=dev.XMLDesc(0))


def mdev_nodedev_name(mdev_uuid, parent):
    return '%s_%s' % (libvirt_utils.mdev_uuid2name(mdev_uuid),
                      parent[len('pci_'):])


class MdevNodeDevice(fakelibvirt.NodeDevice):
    autostart = False

    def setAutostart(self, autostart):
        self.autostart = bool(autostart)


class PciAndMdevTest(base.AccelServersTestBase):

    DEVICE_SPECS = [base.T4_SPEC]

    def setUp(self):
        self.SYSFS_ROOT = self.useFixture(fixtures.TempDir()).path
        for tree, address in (('two-gpus', PCI_GPU),
                              ('mdev-gpu', MDEV_PARENT)):
            shutil.copytree(os.path.join(SYSFS, tree, address),
                            os.path.join(self.SYSFS_ROOT, address),
                            symlinks=True)
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.libvirt.Connection.nodeDeviceCreateXML',
            node_device_create_xml))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.libvirt.Connection.nodeDeviceDefineXML',
            node_device_define_xml))
        super().setUp()

    def start_compute(self, hostname='compute1', **kwargs):
        pci_info = fakelibvirt.HostPCIDevicesInfo(num_pci=0, num_pfs=0,
                                                  num_vfs=0)
        pci_info.add_device(dev_type='MDEV_TYPES', bus=0x41, slot=0,
                            function=0, iommu_group=25, numa_node=0)
        return super().start_compute(
            hostname=hostname, pci_info=pci_info,
            mdev_info=LibvirtMdevDevicesInfo(devices={}), **kwargs)

    def accel_config(self, tmpdir):
        return super().accel_config(tmpdir).replace(
            '[discovery]\n',
            '[discovery]\nenabled_drivers = mdev,generic_pci\n'
            'mdev_types = nvidia-222\n', 1)

    def connection(self):
        return self.computes[self.COMPUTE].driver._host.get_connection()

    def test_boot_with_pgpu_and_vgpu(self):
        records = {(r.address, r.resource_class): r
                   for r in self.accel.discover_and_report()}
        self.assertEqual({(PCI_GPU, 'PGPU'), (MDEV_PARENT, 'VGPU')},
                         set(records))
        pgpu_rp = records[(PCI_GPU, 'PGPU')].rp_uuid
        vgpu_rp = records[(MDEV_PARENT, 'VGPU')].rp_uuid
        self.assertEqual(16, records[(MDEV_PARENT, 'VGPU')].total)
        self.create_device_profile('mixed', [
            {'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'},
            {'resources:VGPU': '1',
             'trait:CUSTOM_MDEV_NVIDIA_222': 'required'}])

        server = self._create_server(flavor_id=self.accel_flavor('mixed'),
                                     networks='none')

        arqs = sorted(self.arqs_of(server['id']),
                      key=lambda a: a['device_profile_group_id'])
        self.assertEqual(['Bound', 'Bound'], [a['state'] for a in arqs])
        pci_arq, mdev_arq = arqs
        self.assertEqual(('PCI', pgpu_rp),
                         (pci_arq['attach_handle_type'],
                          pci_arq['device_rp_uuid']))
        self.assertEqual(('MDEV', vgpu_rp),
                         (mdev_arq['attach_handle_type'],
                          mdev_arq['device_rp_uuid']))
        info = mdev_arq['attach_handle_info']
        self.assertEqual('nvidia-222', info['asked_type'])
        mdev_uuid = mdev_arq['attach_handle_uuid']

        # Nova created the mdev on the parent the ARQ names ...
        mdev = self.connection().mdev_info.devices[
            mdev_nodedev_name(mdev_uuid, MDEV_PARENT_NODEDEV)]
        mdev_xml = etree.fromstring(mdev.XMLDesc(0))
        self.assertEqual(MDEV_PARENT_NODEDEV, mdev_xml.findtext('parent'))
        self.assertEqual('nvidia-222', mdev_xml.find(
            './capability[@type="mdev"]/type').get('id'))

        # ... and the guest has one PCI and one mdev hostdev.
        devices = etree.fromstring(self.guest_xml(server['id'])).find(
            'devices')
        pci = devices.findall('./hostdev[@type="pci"]/source/address')
        self.assertEqual([('0x0000', '0xaf', '0x00', '0x0')],
                         [(a.get('domain'), a.get('bus'), a.get('slot'),
                           a.get('function')) for a in pci])
        mdevs = devices.findall('./hostdev[@type="mdev"]')
        self.assertEqual(1, len(mdevs))
        self.assertEqual('vfio-pci', mdevs[0].get('model'))
        self.assertEqual([mdev_uuid],
                         [a.get('uuid') for a in
                          mdevs[0].findall('./source/address')])

        allocs = self.placement.get(
            '/allocations/%s' % server['id']).body['allocations']
        self.assertEqual({'PGPU': 1}, allocs[pgpu_rp]['resources'])
        self.assertEqual({'VGPU': 1}, allocs[vgpu_rp]['resources'])

        self._delete_server(server)
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.placement.get(
            '/allocations/%s' % server['id']).body['allocations'])
