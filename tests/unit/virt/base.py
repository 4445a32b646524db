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

"""Shared helpers for the nova_accel.virt unit tests."""

import types

import libvirt
from lxml import etree
import testtools

import nova.conf
from nova.virt.libvirt import config as vconfig

# Registers the [nova_accel] options the tests override.
import nova_accel.conf  # noqa: F401

PCI_ARQ = {
    'uuid': '3b4c6a5e-0d3e-4f7a-9d1c-0a0b0c0d0e01',
    'state': 'Bound',
    'attach_handle_type': 'PCI',
    'attach_handle_uuid': None,
    'attach_handle_info': {'domain': '0000', 'bus': 'af',
                           'device': '00', 'function': '0'},
}
PCI_ARQ_2 = dict(PCI_ARQ, uuid='3b4c6a5e-0d3e-4f7a-9d1c-0a0b0c0d0e02',
                 attach_handle_info={'domain': '0001', 'bus': '3b',
                                     'device': '1f', 'function': '7'})
MDEV_UUID = '7f8e0c51-8b4a-4d63-9d5b-6b4f1c2e3a10'
MDEV_ARQ = {
    'uuid': '3b4c6a5e-0d3e-4f7a-9d1c-0a0b0c0d0e03',
    'state': 'Bound',
    'attach_handle_type': 'MDEV',
    'attach_handle_uuid': MDEV_UUID,
    'attach_handle_info': {'domain': '0000', 'bus': '5e', 'device': '00',
                           'function': '0', 'asked_type': 'nvidia-35'},
}
TEST_PCI_ARQ = dict(PCI_ARQ, uuid='3b4c6a5e-0d3e-4f7a-9d1c-0a0b0c0d0e04',
                    attach_handle_type='TEST_PCI')
#: An MDEV ARQ of the kernel's mtty sample, a parent that is not a PCI
#: function (accel_backend's drivers.mdev_virtual handle).
MTTY_UUID = 'b1ae8bf6-38b0-4c81-9d44-78ce3f520496'
MTTY_ARQ = {
    'uuid': '3b4c6a5e-0d3e-4f7a-9d1c-0a0b0c0d0e05',
    'state': 'Bound',
    'attach_handle_type': 'MDEV',
    'attach_handle_uuid': MTTY_UUID,
    'attach_handle_info': {'parent': 'mtty_mtty', 'parent_addr': 'mtty',
                           'asked_type': 'mtty-2',
                           'vgpu_mark': 'mtty-2_0'},
}


class FakeHost(object):
    """``nova.virt.libvirt.host.Host``'s node device methods: lookups in
    libvirt's test driver unless ``known``; creations recorded as
    ``(action, parent, type, uuid)``."""

    def __init__(self, known=()):
        self.conn = libvirt.open('test:///default')
        self.known = set(known)
        self.calls = []

    def device_lookup_by_name(self, name):
        if name in self.known:
            return types.SimpleNamespace(name=lambda: name)
        return self.conn.nodeDeviceLookupByName(name)

    def _record(self, action, conf):
        self.calls.append((action, conf.parent, conf.mdev_information.type,
                           conf.mdev_information.uuid))
        return types.SimpleNamespace(name=lambda: 'mdev_' + conf.parent)

    def device_create(self, conf):
        return self._record('create', conf)

    def device_define(self, conf):
        return self._record('define', conf)

    def device_set_autostart(self, dev, autostart=True):
        self.calls.append(('autostart', dev.name(), autostart))

    def get_guest(self, instance):
        return types.SimpleNamespace(attach_device=lambda conf, persistent,
                                     live: self.calls.append((
                                         'attach', conf.to_xml(),
                                         persistent, live)))


def config_guest(name='accel-guest',
                 uuid='f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b', memory=1024,
                 vcpus=1):
    """A minimal ``LibvirtConfigGuest`` (virt type ``test``, hvm);
    ``memory`` in MiB."""
    guest = vconfig.LibvirtConfigGuest()
    guest.virt_type = 'test'
    guest.name = name
    guest.uuid = uuid
    guest.memory = memory
    guest.vcpus = vcpus
    guest.os_type = 'hvm'
    return guest


_DOMAIN = ("<domain type='test'><name>%(name)s</name><memory>1024</memory>"
           "<os><type>hvm</type></os><devices>%(devices)s</devices>"
           "</domain>")


def _quiet(_ctx, _err):
    """libvirt error handler that keeps expected errors off stderr."""


class LibvirtSchemaMixin(object):
    """Validate hostdev XML against libvirt's real RNG schema.

    Uses libvirt's ``test:///default`` driver (no daemon):
    ``defineXMLFlags(..., VIR_DOMAIN_DEFINE_VALIDATE)`` checks the whole
    domain against ``domain.rng`` and libvirt's own parser.
    """

    def assertLibvirtAccepts(self, hostdev_xmls):
        """Define (then undefine) a test domain holding ``hostdev_xmls``."""
        conn = libvirt.open('test:///default')
        self.addCleanup(conn.close)
        xml = _DOMAIN % {'name': 'accel-%s' % self.id().rsplit('.', 1)[-1],
                         'devices': ''.join(hostdev_xmls)}
        dom = conn.defineXMLFlags(xml, libvirt.VIR_DOMAIN_DEFINE_VALIDATE)
        try:
            defined = etree.fromstring(dom.XMLDesc(0))
        finally:
            dom.undefine()
        return defined.findall('./devices/hostdev')

    def assertLibvirtRejects(self, hostdev_xmls):
        libvirt.registerErrorHandler(_quiet, None)
        self.addCleanup(libvirt.registerErrorHandler, None, None)
        return self.assertRaises(libvirt.libvirtError,
                                 self.assertLibvirtAccepts, hostdev_xmls)


class TestCase(testtools.TestCase):
    """testtools TestCase that resets ``[nova_accel]`` overrides."""

    def flags(self, group=None, **kw):
        for k, v in kw.items():
            nova.conf.CONF.set_override(k, v, group=group)
            self.addCleanup(nova.conf.CONF.clear_override, k, group=group)
