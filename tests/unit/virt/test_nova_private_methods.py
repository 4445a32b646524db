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

"""Guards on the private methods of Nova's libvirt driver that
nova_accel's drivers call or override (the contributor guide's "Nova's
private methods we use" lists them and says why no public way exists).

Each test pins what Nova 34 (``nova/virt/libvirt/driver.py``,
``nova/virt/libvirt/host.py``, 34.0.0) does and nova_accel relies on,
against the Nova installed beside the tests, so that a Nova upgrade that
changes it fails here rather than in a cloud:

* ``LibvirtDriver._hard_reboot``: overridden by
  ``nova_accel.virt.hotplug_mixins.LibvirtHotplugMixin`` to add the
  hot-plugged ARQs to ``accel_info``;
* ``LibvirtDriver._detach_with_retry``: called by
  ``LibvirtHotplugMixin.accel_detach_hostdev`` to hot-remove a
  ``<hostdev>`` (its live detach waits by the device's alias);
* ``LibvirtDriver._host``: the ``nova.virt.libvirt.host.Host`` the
  mixin gets guests from and ``nova_accel.virt.libvirt.driver`` looks
  node devices up with;
* ``LibvirtDriver._allocate_cyborg_mdevs``: overridden by
  ``nova_accel.virt.libvirt.driver.LibvirtDriver`` for mediated devices
  of parents that are not PCI functions, which call Nova's
  ``_create_mdev``;
* ``LibvirtDriver._guest_add_accel_pci_devices``: overridden by
  ``nova_accel.virt.libvirt.driver.LibvirtDriver`` (that
  ``_get_guest_config`` still calls it is pinned in
  ``test_driver.LibvirtDriverTest.test_nova_still_calls_the_hook``).
"""

import ast
import inspect
import textwrap
import types

import fixtures
from nova.compute import power_state
from nova import exception as nova_exception
from nova.virt import fake as nova_fake
from nova.virt.libvirt import config as vconfig
from nova.virt.libvirt import driver as nova_driver
from nova.virt.libvirt import host as nova_host

from nova_accel.virt import hostdev
from nova_accel.virt.libvirt import driver
from tests.unit.virt import base

NOVA = nova_driver.LibvirtDriver


def _params(func):
    """``[(name, default or '-')]`` of ``func``'s signature."""
    return [(p.name, '-' if p.default is p.empty else p.default)
            for p in inspect.signature(func).parameters.values()]


def _tree(func):
    return ast.parse(textwrap.dedent(inspect.getsource(func)))


def _self_calls(func, name):
    """The ``self.<name>(...)`` calls in ``func``'s source, as
    ``(positional argument texts, {keyword: value text})``."""
    return [([ast.unparse(a) for a in node.args],
             {kw.arg: ast.unparse(kw.value) for kw in node.keywords})
            for node in ast.walk(_tree(func))
            if isinstance(node, ast.Call) and
            isinstance(node.func, ast.Attribute) and
            node.func.attr == name and
            isinstance(node.func.value, ast.Name) and
            node.func.value.id == 'self']


class HardRebootTest(base.TestCase):
    """``_hard_reboot``: Nova rebuilds the domain XML from ``accel_info``
    there, and reaches it from every path that rebuilds a guest."""

    def test_signature(self):
        # The mixin's override takes and passes on these, positionally
        # or by keyword (Nova's callers pass them positionally).
        self.assertEqual(
            [('self', '-'), ('context', '-'), ('instance', '-'),
             ('network_info', '-'), ('share_info', '-'),
             ('block_device_info', None), ('accel_info', None)],
            _params(NOVA._hard_reboot))

    def test_domain_xml_built_from_accel_info(self):
        calls = _self_calls(NOVA._hard_reboot, '_get_guest_xml')
        self.assertEqual(1, len(calls))
        self.assertEqual('accel_info', calls[0][1].get('accel_info'))

    def test_reboot_power_on_and_host_boot_resume_go_through_it(self):
        # Hard reboot and power on hand Nova's accel_info on (the sixth
        # positional argument); resume on host boot has none to give,
        # which is why the mixin fills it in for every caller.
        for method, accel in ((NOVA.reboot, 'accel_info'),
                              (NOVA.power_on, 'accel_info'),
                              (NOVA.resume_state_on_host_boot, None)):
            calls = _self_calls(method, '_hard_reboot')
            self.assertEqual(1, len(calls), method.__name__)
            args, kwargs = calls[0]
            self.assertEqual({}, kwargs, method.__name__)
            self.assertEqual(accel, (args[5:] or [None])[0],
                             method.__name__)


class _ShutOffGuest(object):
    """A shut-off libvirt domain with a persistent config (the libvirt
    boundary of ``nova.virt.libvirt.guest.Guest``): records the device
    queries and detaches Nova makes."""

    def __init__(self, devices):
        self.devices = list(devices)
        self.calls = []

    def get_power_state(self, host):
        return power_state.SHUTDOWN

    def has_persistent_configuration(self):
        return True

    def get_all_devices(self, devtype=None, from_persistent_config=False):
        self.calls.append(('query', from_persistent_config))
        return [d for d in self.devices
                if devtype is None or isinstance(d, devtype)]

    def detach_device(self, conf, persistent=False, live=False):
        self.calls.append(('detach', conf, persistent, live))
        self.devices.remove(conf)


def _pci_config(bus):
    dev = vconfig.LibvirtConfigGuestHostdevPCI()
    dev.domain, dev.bus, dev.slot, dev.function = '0000', bus, '00', '0'
    return dev


class DetachWithRetryTest(base.TestCase):
    """``_detach_with_retry``: Nova's detach with the device lookup the
    caller gives it; run for real through the mixin."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.drv = object.__new__(driver.LibvirtDriver)
        self.guest = None
        self.drv._host = types.SimpleNamespace(
            get_guest=lambda instance: self.guest)
        self.instance = types.SimpleNamespace(
            uuid='0e9a2c1b-1111-4222-8333-944455556666')
        self.elem = hostdev.compose_hostdevs([base.PCI_ARQ])[0]

    def test_signature(self):
        self.assertEqual(
            [('self', '-'), ('guest', '-'), ('instance_uuid', '-'),
             ('get_device_conf_func', '-'), ('device_name', '-')],
            _params(NOVA._detach_with_retry))

    def test_detaches_what_our_lookup_finds(self):
        ours, other = _pci_config('0xaf'), _pci_config('0x3b')
        self.guest = _ShutOffGuest([other, ours])
        self.drv.accel_detach_hostdev(self.instance, self.elem)
        # Nova asks our lookup for the persistent config's device by the
        # keyword from_persistent_config, detaches exactly that one from
        # the persistent config, then asks again to check it is gone.
        self.assertEqual([('query', True), ('detach', ours, True, False),
                          ('query', True)], self.guest.calls)
        self.assertEqual([other], self.guest.devices)

    def test_live_detach_waits_for_the_alias_mdev_configs_lack(self):
        # Nova's live detach waits for libvirt's event by ``dev.alias``;
        # its mdev config parses none, so nova_accel sets it from the live
        # XML (hotplug_mixins._accel_find_hostdev, mdevs.live_alias).
        src = inspect.getsource(NOVA._detach_from_live_and_wait_for_event)
        self.assertIn('if dev.alias is None:', src)
        self.assertIn('instance_uuid, dev.alias,', src)
        dev = vconfig.LibvirtConfigGuestHostdevMDEV()
        dev.parse_str("<hostdev mode='subsystem' type='mdev'><source>"
                      "<address uuid='%s'/></source><alias name='hostdev1'/>"
                      "</hostdev>" % base.MDEV_UUID)
        self.assertIsNone(getattr(dev, 'alias', None))

    def test_device_not_there_raises_device_not_found(self):
        self.guest = _ShutOffGuest([_pci_config('0x3b')])
        self.assertRaises(nova_exception.DeviceNotFound,
                          self.drv.accel_detach_hostdev, self.instance,
                          self.elem)


class HostTest(base.TestCase):
    """``_host``: the ``nova.virt.libvirt.host.Host`` Nova's driver makes
    in ``__init__``, and the two methods of it nova_accel calls."""

    def test_driver_holds_a_host(self):
        self.useFixture(fixtures.FakeLogger())
        drv = driver.LibvirtDriver(nova_fake.FakeVirtAPI(), read_only=True)
        self.assertIsInstance(drv._host, nova_host.Host)

    def test_methods_used(self):
        # hotplug_mixins: self._host.get_guest(instance) -> Guest;
        # virt.libvirt.driver: self._host.device_lookup_by_name(name) ->
        # a libvirt virNodeDevice (XMLDesc(0) read).
        self.assertEqual([('self', '-'), ('instance', '-')],
                         _params(nova_host.Host.get_guest))
        self.assertEqual([('self', '-'), ('name', '-')],
                         _params(nova_host.Host.device_lookup_by_name))
        self.assertEqual(
            ['return self.get_connection().nodeDeviceLookupByName(name)'],
            [ast.unparse(n) for n in ast.walk(_tree(
                nova_host.Host.device_lookup_by_name))
             if isinstance(n, ast.Return)])


class GuestAddAccelPciDevicesTest(base.TestCase):

    def test_signature(self):
        self.assertEqual([('self', '-'), ('guest', '-'),
                          ('accel_info', '-')],
                         _params(NOVA._guest_add_accel_pci_devices))


class AllocateCyborgMdevsTest(base.TestCase):
    """``_allocate_cyborg_mdevs`` and ``_create_mdev``: what the override
    in ``nova_accel.virt.libvirt.driver`` takes, calls and replaces."""

    def test_signatures(self):
        self.assertEqual([('self', '-'), ('accel_info', '-')],
                         _params(NOVA._allocate_cyborg_mdevs))
        self.assertEqual([('self', '-'), ('dev_name', '-'),
                          ('mdev_type', '-'), ('uuid', None)],
                         _params(NOVA._create_mdev))

    def test_spawn_and_hard_reboot_go_through_it(self):
        for method in (NOVA.spawn, NOVA._hard_reboot):
            self.assertEqual([(['accel_info'], {})],
                             _self_calls(method, '_allocate_cyborg_mdevs'),
                             method.__name__)

    def test_nova_names_the_parent_after_pci_fields_only(self):
        # Why the override exists: Nova 34 builds pci_<d>_<b>_<s>_<f>
        # from the handle, so a handle of a virtual parent (mtty) has no
        # way through it.
        drv = object.__new__(NOVA)
        drv._host = base.FakeHost()
        drv.pgpu_type_mapping, drv.pgpu_type_default = {}, None
        self.useFixture(fixtures.FakeLogger())
        e = self.assertRaises(KeyError, drv._allocate_cyborg_mdevs,
                              [base.MTTY_ARQ])
        self.assertEqual("'domain'", str(e))
