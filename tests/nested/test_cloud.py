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

"""Scenarios of the whole cloud with the nested compute node: Nova 34
(nova-compute with ``accel.LibvirtDriver`` in L1, libvirtd on QEMU/TCG)
boots a real guest with a device accel_backend's agent discovered on L1's
real sysfs; the assertions read what L1's kernel, libvirt and the guest
see, not only API states.

One cloud for the class (``tools.aio.cloud.up(compute='nested')``, the same
as ``tools/run demo``): 2 to 3.5 minutes to come up on a quiet 2-core
machine (6 to 13 while other jobs share it), plus the guest's boot under
TCG inside TCG.  Two tempest scenarios of nova-accel's plugin run against
it too: the guest one (3.5 to 7.3 minutes measured) and the bind failure one
(3.7).  The class takes its cloud down before ``test_demo`` brings up its
own (``tools.aio`` keeps one).
"""

import json
import subprocess
import time

import testtools

from accel_backend.objects import device as device_obj
from nova_accel_tempest_plugin import guest_console
from tools.aio import cloud as cloud_mod
from tools.aio import devices
from tools.aio import nested
from tools.aio import tempest as tempest_mod
from tools.nested import node

ACTIVE_TIMEOUT = 900
NOVA_VERSION = {'X-OpenStack-Nova-API-Version': '2.90'}
#: The edu function's id as the guest lists it.
EDU = '0x%s:0x%s' % (devices.EDU_SPEC['vendor_id'],
                     devices.EDU_SPEC['product_id'])


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

    def flavor_for(self, name, group, vcpus=1, **extra_specs):
        self.api('POST', 'accel', '/v2/device_profiles',
                 [{'name': name, 'groups': [group]}])
        self.addCleanup(self.api, 'DELETE', 'accel',
                        '/v2/device_profiles/%s' % name)
        flavor = self.nova('POST', '/flavors', {'flavor': {
            'name': name, 'ram': 256, 'vcpus': vcpus, 'disk': 1}})['flavor']
        self.addCleanup(self.nova, 'DELETE', '/flavors/%s' % flavor['id'])
        self.nova('POST', '/flavors/%s/os-extra_specs' % flavor['id'],
                  {'extra_specs': dict(extra_specs, **{
                      'accel:device_profile': name})})
        return flavor['id']

    def boot(self, name, flavor):
        """Boot a server (deleted at cleanup, also when it fails) and wait
        until it is ACTIVE."""
        server = self.nova('POST', '/servers', {'server': {
            'name': name, 'imageRef': self.cloud.state['image_id'],
            'flavorRef': flavor, 'networks': 'none'}})['server']
        self.addCleanup(self.delete, server)
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

    def server(self, server):
        return self.nova('GET', '/servers/%s' % server['id'])['server']

    def action(self, server, body, status):
        """Run a server action and wait for ``status`` (after the task
        state has cleared)."""
        self.nova('POST', '/servers/%s/action' % server['id'], body)
        deadline = time.monotonic() + ACTIVE_TIMEOUT
        while True:
            got = self.server(server)
            if got['status'] in (status, 'ERROR') and \
                    not got.get('OS-EXT-STS:task_state'):
                break
            self.assertLess(time.monotonic(), deadline,
                            'not %s after %s' % (status, body))
            time.sleep(3)
        self.assertEqual(status, got['status'], got.get('fault'))
        return got

    def device_status(self, address):
        """The status (microversion 2.3) of L1's device at PCI
        ``address`` (its UUID is derived from host and address)."""
        return self.api('GET', 'accel', '/v2/devices/%s' % (
            device_obj.stable_uuid('device', nested.L1_HOST, address)),
            headers={'OpenStack-API-Version': 'accelerator 2.3'})['status']

    def arqs(self, server):
        return self.api('GET', 'accel', '/v2/accelerator_requests?'
                        'instance=%s' % server['id'])['arqs']

    def console(self, server, until, timeout=nested.GUEST_BOOT_TIMEOUT):
        """The server's console output once ``until(output)`` holds (or
        at ``timeout`` seconds, for the caller's assertions)."""
        deadline = time.monotonic() + timeout
        while True:
            out = self.nova('POST', '/servers/%s/action' % server['id'], {
                'os-getConsoleOutput': {}})['output']
            if until(out) or time.monotonic() > deadline:
                return out
            time.sleep(5)

    def new_boot(self, server, old_boot):
        """The console once a boot other than ``old_boot`` (an id of
        ``guest_console.boot_id``) has listed its PCI functions."""
        out = self.console(server, lambda text: guest_console.boot_id(
            text) not in (None, old_boot) and guest_console.listing(
            text) is not None)
        self.assertNotIn(guest_console.boot_id(out), (None, old_boot),
                         'no new boot: ' + out[-2000:])
        return out

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
        self.assertEqual(1, _edus(out), out[-2000:])
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
        out = self.console(server, lambda text: _edus(text) == 2,
                           timeout=300)
        self.assertEqual(2, _edus(out), out[-2000:])
        # Hot-remove: and leave again.
        done = self.nova_accel('detach-accelerator', '--server',
                               server['id'], '--device-profile',
                               'nested-extra')
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        self.assertEqual(1, len(self.arqs(server)))
        out = self.console(server, lambda text: _edus(text) == 1 and
                           'changed' in text, timeout=300)
        self.assertEqual(1, _edus(out), out[-2000:])

        # nova-compute restarts while the guest holds the device: the guest
        # keeps running with it and the ARQ stays Bound.
        nested.restart_compute(self.cloud, self.sess, self.token)
        self.assertEqual('ACTIVE', self.server(server)['status'])
        self.assertEqual([(arq['uuid'], 'Bound')], [
            (a['uuid'], a['state']) for a in self.arqs(server)])
        self.assertEqual('vfio-pci',
                         nested.device_state(self.sess, address)['driver'])
        # A hard reboot by the restarted nova-compute defines the domain
        # again from the ARQs: the new boot lists the device (its console
        # starts afresh, without the hot-plug's "changed" lines).
        boot = guest_console.boot_id(out)
        self.action(server, {'reboot': {'type': 'HARD'}}, 'ACTIVE')
        out = self.new_boot(server, boot)
        self.assertEqual(1, _edus(out), out[-2000:])
        self.assertEqual('vfio-pci',
                         nested.device_state(self.sess, address)['driver'])

        # Stopped, the server keeps its ARQ and allocation; libvirt gives
        # the function back to L1.  L1's kernel then loses it (hot-unplug
        # while allocated): the agent keeps its device as missing and its
        # provider with the allocation, and takes it back on a rescan.
        boot = guest_console.boot_id(out)
        self.action(server, {'os-stop': None}, 'SHUTOFF')
        self.assertNotEqual('vfio-pci',
                            nested.device_state(self.sess, address)['driver'])
        self.sess.sh('echo 1 > /sys/bus/pci/devices/%s/remove' % address)
        self._until(lambda: self.device_status(address) == 'missing',
                    'the removed device is not missing')
        self.assertEqual([(arq['uuid'], 'Bound')], [
            (a['uuid'], a['state']) for a in self.arqs(server)])
        self.assertEqual(1, self.api(
            'GET', 'placement', '/resource_providers/%s/usages' % rp)[
            'usages'].get('CUSTOM_EDU'))
        self.sess.sh('echo 1 > /sys/bus/pci/rescan')
        self._until(lambda: self.device_status(address) == 'enabled',
                    'the rescanned device is not enabled again')
        # Started again, the guest has the device.
        self.action(server, {'os-start': None}, 'ACTIVE')
        out = self.new_boot(server, boot)
        self.assertEqual(1, _edus(out), out[-2000:])
        self.assertEqual('vfio-pci',
                         nested.device_state(self.sess, address)['driver'])

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

    def test_numa_guest_gets_the_device_on_its_node1_cell(self):
        # A guest with two NUMA cells (hw:numa_nodes=2): Nova places cell
        # N on L1's node N.  The device of L1's node 1 (behind its
        # expander bus) appears in the guest behind an expander bus of
        # guest cell 1, and the guest's kernel says so.
        flavor = self.flavor_for('nested-numa', devices.NUMA1_GROUP,
                                 vcpus=2, **{'hw:numa_nodes': '2'})
        server = self.boot('nested-numa', flavor)
        arq, = self.arqs(server)
        info = arq['attach_handle_info']
        self.assertEqual(node.Layout.NUMA1_EDU, '%s:%s:%s.%s' % (
            info['domain'], info['bus'], info['device'], info['function']))
        _, xml = self.sess.sh('virsh -c qemu:///system dumpxml %s' % (
            server['OS-EXT-SRV-ATTR:instance_name']))
        self.assertIn("<memnode cellid='1' mode='strict' nodeset='1'/>", xml)
        # An expander bus on guest cell 1: pci-expander-bus (pxb) on Nova's
        # default i440fx machine, pcie-expander-bus on q35.
        self.assertRegex(xml, r"model='pcie?-expander-bus'>\s*<model "
                         r"name='pxb(-pcie)?'/>\s*<target busNr='\d+'>\s*"
                         r"<node>1</node>")
        out = self.console(server, lambda text: 'guest: done' in text)
        edus = [fn for fn in guest_console.listing(out) or ()
                if fn.pci_id == EDU]
        self.assertEqual([1], [fn.numa for fn in edus], out[-2000:])

    def tempest(self, module):
        """Run nova-accel's tempest scenario ``module`` (under
        ``nova_accel_tempest_plugin.tests.scenario``) against this cloud as
        an operator would, configured for its real guests; returns
        tempest's output after checking that it passed, skipping
        nothing."""
        layout = self.cloud.layout
        group = devices.demo_group(layout)
        workspace = tempest_mod.prepare(self.cloud, extra={
            'compute-feature-enabled': {'console_output': True},
            'accelerator': {
                'device_profile_group': json.dumps(group),
                'resource_class': devices.resource_class(group),
                'accelerators_per_host': devices.accelerator_total(
                    layout, group),
                'guest_pci_id': EDU,
                'guest_timeout': nested.GUEST_BOOT_TIMEOUT,
                'hotplug_command': 'env OS_NOVA_DISABLE_EVENTLET_PATCHING=1 '
                                   '%s --config-file %s' % (
                                       self.cloud.prog('nova-accel'),
                                       layout.path('etc', 'nova',
                                                   'nova.conf')),
                # The agent in L1 binds and cleans (forwarded port).
                'metrics_url': 'http://127.0.0.1:%d/metrics' % (
                    layout.ports['l1_metrics']),
            }})
        rc, out = tempest_mod.run_in(
            self.cloud, workspace, 'nova_accel_tempest_plugin.tests.'
            'scenario.' + module, concurrency=1, capture=True)
        self.assertEqual(0, rc, out[-4000:])
        self.assertIn(' - Passed: 1\n', out)
        self.assertIn(' - Skipped: 0\n', out)
        return out

    def test_tempest_guest_scenario(self):
        # nova-accel's tempest plugin as an operator runs it against this
        # cloud: its guest scenario (boot, hot-add, delete and reuse)
        # requires the device inside each guest, read from the console.
        self.tempest('test_guest_accelerators')

    def test_tempest_bind_failure_scenario(self):
        # The tempest scenario of a bind that fails in L1's agent: every
        # edu device held outside Placement by ARQs bound with a service
        # token, a boot onto one ends ERROR with a fault and leaves
        # nothing (the agent counts a no_free_handle failure), then the
        # released devices serve a real guest that lists its device.
        self.tempest('test_bind_failure')
        # Nothing of it is left in L1: no domain defined, every edu
        # function off vfio-pci.
        _, names = self.sess.sh('virsh -c qemu:///system list --all --name')
        self.assertEqual('', names.strip())
        for address in node.Layout.ROOT_EDUS + node.Layout.BRIDGED_EDUS + (
                node.Layout.NUMA1_EDU,):
            self.assertNotEqual('vfio-pci', nested.device_state(
                self.sess, address)['driver'])

    def test_functions_of_one_iommu_group_are_one_device(self):
        deps = self.api('GET', 'accel', '/v2/deployables')['deployables']
        text = json.dumps(deps)
        first, second = node.Layout.BRIDGED_EDUS
        # The two functions behind the PCIe-to-PCI bridge share an IOMMU
        # group: one of them is offered, never both to two guests.
        self.assertEqual(1, sum(a in text for a in (first, second)))
        self.assertEqual(devices.expected_deployables(self.cloud.layout),
                         len(deps))


def _edus(console):
    """``edu`` functions in the guest's last complete listing."""
    return guest_console.count(console, EDU)
