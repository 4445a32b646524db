"""Scenarios of the whole cloud with the nested compute node: Nova 34
(nova-compute with ``accel.LibvirtDriver`` in L1, libvirtd on QEMU/TCG)
boots a real guest with a device accel_backend's agent discovered on L1's
real sysfs; the assertions read what L1's kernel, libvirt and the guest
see, not only API states.

One cloud for the class (``tools.aio.cloud.up(compute='nested')``, the same
as ``tools/run demo``): about 6 minutes to come up on 2 cores, plus the
guest's boot under TCG inside TCG.
"""

import json
import subprocess
import time

import testtools

from tools.aio import cloud as cloud_mod
from tools.aio import devices
from tools.aio import nested
from tools.nested import node

ACTIVE_TIMEOUT = 900
NOVA_VERSION = {'X-OpenStack-Nova-API-Version': '2.90'}


class TestARealGuest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.cloud = cloud_mod.up(compute='nested')
        except SystemExit as e:
            raise AssertionError('the cloud with the nested compute node '
                                 'did not come up (%s); see its output '
                                 'above' % e.code)
        cls.sess = nested.attach(cls.cloud)
        cls.token = cls.cloud.admin_token()

    @classmethod
    def tearDownClass(cls):
        cloud_mod.down()
        super().tearDownClass()

    # -- helpers ----------------------------------------------------------

    def api(self, method, service, path, body=None, **kw):
        got, _ = self.cloud.http(method, self.cloud.layout.url(
            service, path), body, token=self.token, **kw)
        return got

    def nova(self, method, path, body=None):
        return self.api(method, 'nova_api', '/v2.1' + path, body,
                        headers=NOVA_VERSION)

    def flavor_for(self, name, group):
        self.api('POST', 'accel', '/v2/device_profiles',
                 [{'name': name, 'groups': [group]}])
        self.addCleanup(self.api, 'DELETE', 'accel',
                        '/v2/device_profiles/%s' % name)
        flavor = self.nova('POST', '/flavors', {'flavor': {
            'name': name, 'ram': 256, 'vcpus': 1, 'disk': 1}})['flavor']
        self.addCleanup(self.nova, 'DELETE', '/flavors/%s' % flavor['id'])
        self.nova('POST', '/flavors/%s/os-extra_specs' % flavor['id'],
                  {'extra_specs': {'accel:device_profile': name}})
        return flavor['id']

    def boot(self, name, flavor):
        server = self.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': self.cloud.state['image_id'],
            'flavorRef': flavor, 'networks': 'none'}})['server']
        deadline = time.monotonic() + ACTIVE_TIMEOUT
        while True:
            got = self.nova('GET', '/servers/%s' % server['id'])['server']
            if got['status'] in ('ACTIVE', 'ERROR'):
                break
            self.assertLess(time.monotonic(), deadline, 'not ACTIVE')
            time.sleep(3)
        self.assertEqual('ACTIVE', got['status'], got.get('fault'))
        return got

    def delete(self, server):
        """Delete ``server`` and wait until it is gone (also when it
        already is)."""
        try:
            self.nova('DELETE', '/servers/%s' % server['id'])
        except RuntimeError as e:
            if ': 404 ' in str(e):
                return
            raise
        deadline = time.monotonic() + ACTIVE_TIMEOUT
        while time.monotonic() < deadline:
            try:
                self.nova('GET', '/servers/%s' % server['id'])
            except RuntimeError as e:
                if ': 404 ' in str(e):
                    return
                raise
            time.sleep(2)
        self.fail('server %s not deleted' % server['id'])

    def arqs(self, server):
        return self.api('GET', 'accel', '/v2/accelerator_requests?'
                        'instance=%s' % server['id'])['arqs']

    def console(self, server, until, timeout=nested.GUEST_BOOT_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            out = self.nova('POST', '/servers/%s/action' % server['id'], {
                'os-getConsoleOutput': {}})['output']
            if until(out) or time.monotonic() > deadline:
                return out
            time.sleep(5)

    def nova_accel(self, *args):
        """Run the ``nova-accel`` command with the cloud's nova.conf."""
        layout = self.cloud.layout
        return subprocess.run(
            [self.cloud.prog('nova-accel'), '--config-file',
             layout.path('etc', 'nova', 'nova.conf')] + list(args),
            env=self.cloud.env(OS_NOVA_DISABLE_EVENTLET_PATCHING='1'),
            capture_output=True, text=True, timeout=900)

    def provider_of(self, address):
        deps = self.api('GET', 'accel', '/v2/deployables')['deployables']
        return next(d['rp_uuid'] for d in deps if address in json.dumps(d))

    # -- scenarios ---------------------------------------------------------

    def test_boot_use_hotplug_delete_and_offer_again(self):
        # One guest for the whole life cycle: each boot costs minutes of
        # TCG inside TCG.
        group = devices.demo_group(self.cloud.layout)
        flavor = self.flavor_for('nested-one', group)
        self.api('POST', 'accel', '/v2/device_profiles',
                 [{'name': 'nested-extra', 'groups': [group]}])
        self.addCleanup(self.api, 'DELETE', 'accel',
                        '/v2/device_profiles/nested-extra')
        server = self.boot('nested-one', flavor)
        self.addCleanup(self.delete, server)
        arq, = self.arqs(server)
        self.assertEqual('Bound', arq['state'])
        info = arq['attach_handle_info']
        address = '%s:%s:%s.%s' % (info['domain'], info['bus'],
                                   info['device'], info['function'])
        # L1's kernel: the function is on vfio-pci while the guest runs.
        self.assertEqual('vfio-pci',
                         nested.device_state(self.sess, address)['driver'])
        # libvirt in L1 holds the <hostdev> of that function.
        _, xml = self.sess.sh('virsh -c qemu:///system dumpxml %s' % (
            server['OS-EXT-SRV-ATTR:instance_name']))
        self.assertIn("<hostdev mode='subsystem' type='pci' managed='yes'>",
                      xml)
        self.assertIn("<address domain='0x%s' bus='0x%s' slot='0x%s' "
                      "function='0x%s'/>" % (info['domain'], info['bus'],
                                             info['device'],
                                             info['function']), xml)
        # The guest lists the device on its own console.
        out = self.console(server, lambda text: 'guest: done' in text)
        self.assertEqual(1, _edus(_last_listing(out)), out[-2000:])
        rp = self.provider_of(address)
        self.assertEqual(1, self.api(
            'GET', 'placement', '/resource_providers/%s/usages' % rp)[
            'usages'].get('CUSTOM_EDU'))

        # Hot-add: the guest's kernel sees a second function arrive.
        done = self.nova_accel('attach-accelerator', '--server',
                               server['id'], '--device-profile',
                               'nested-extra')
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertEqual(2, len(self.arqs(server)))
        out = self.console(server, lambda text: _edus(
            _last_listing(text)) == 2, timeout=300)
        self.assertEqual(2, _edus(_last_listing(out)), out[-2000:])
        # Hot-remove: and leave again.
        done = self.nova_accel('detach-accelerator', '--server',
                               server['id'], '--device-profile',
                               'nested-extra')
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertEqual(1, len(self.arqs(server)))
        out = self.console(server, lambda text: _edus(
            _last_listing(text)) == 1 and 'changed' in text, timeout=300)
        self.assertEqual(1, _edus(_last_listing(out)), out[-2000:])

        self.delete(server)
        self.assertEqual([], self.arqs(server))
        self.assertNotEqual('vfio-pci',
                            nested.device_state(self.sess, address)['driver'])
        # Released, cleaned and offered again.
        deadline = time.monotonic() + 300
        while True:
            usages = self.api('GET', 'placement', '/resource_providers/%s/'
                              'usages' % rp)['usages']
            summaries = self.api(
                'GET', 'placement', '/allocation_candidates?resources='
                'CUSTOM_EDU:1', headers={
                    'OpenStack-API-Version': 'placement 1.36'})[
                'provider_summaries']
            if not usages.get('CUSTOM_EDU') and rp in summaries:
                break
            self.assertLess(time.monotonic(), deadline,
                            'the device is not offered again')
            time.sleep(3)

    def test_a_free_function_removed_from_l1_then_rescanned(self):
        # L1's kernel drops a free function (hot-unplug as the PCI core
        # does it) and finds it again on a rescan: the agent deletes its
        # provider, then reports it again under the same identity.
        address = node.Layout.NUMA1_EDU
        rp = self.provider_of(address)
        name = '%s_%s' % (nested.L1_HOST, address)
        self.sess.sh('echo 1 > /sys/bus/pci/devices/%s/remove' % address)

        def providers():
            return [p['uuid'] for p in self.api(
                'GET', 'placement', '/resource_providers?name=%s' % name)[
                'resource_providers']]
        self._until(lambda: not providers() and address not in json.dumps(
            self.api('GET', 'accel', '/v2/deployables')), 'not removed')

        self.sess.sh('echo 1 > /sys/bus/pci/rescan')
        self._until(lambda: providers() == [rp], 'not reported again')
        inventory = self.api('GET', 'placement', '/resource_providers/%s/'
                             'inventories' % rp)['inventories']
        self.assertEqual(1, inventory['CUSTOM_EDU']['total'])

    def _until(self, check, message, timeout=300):
        deadline = time.monotonic() + timeout
        while not check():
            self.assertLess(time.monotonic(), deadline, message)
            time.sleep(3)

    def test_functions_of_one_iommu_group_are_one_device(self):
        deps = self.api('GET', 'accel', '/v2/deployables')['deployables']
        text = json.dumps(deps)
        first, second = node.Layout.BRIDGED_EDUS
        # The two functions behind the PCIe-to-PCI bridge share an IOMMU
        # group: one of them is offered, never both to two guests.
        self.assertEqual(1, sum(a in text for a in (first, second)))
        self.assertEqual(devices.expected_deployables(self.cloud.layout),
                         len(deps))


def _last_listing(console):
    """The guest's last list of PCI functions on its console (the lines
    between its last ``guest: PCI functions`` header and ``guest: done``)."""
    lines = console.splitlines()
    starts = [i for i, line in enumerate(lines)
              if line.startswith('guest: PCI functions')]
    if not starts:
        return []
    listing = []
    for line in lines[starts[-1] + 1:]:
        if line.startswith('guest: done'):
            return listing
        if line.startswith('guest-pci '):
            listing.append(line)
    return []  # still printing


def _edus(listing):
    return sum(' 0x1234:0x11e8' in line for line in listing)
