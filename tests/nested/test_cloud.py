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

One cloud for the class, the one ``tools/run demo`` brings up (``python
-m tools.aio all --skip-tempest``): 2 to 3.5 minutes to come up on a quiet
2-core machine (6 to 13 while other jobs share it), plus the guest's boot
under TCG inside TCG.  Two tempest scenarios of nova-accel's plugin run
against it too: the guest one (8.4 minutes measured: three guest boots, a
shelve and an unshelve) and the bind failure one (3.4), and so does the
README's demo step (``tests/nested/demo_run.py``).
"""

import json
import time

from nova_accel_tempest_plugin import guest_console
from tests.nested.cloud_base import _edus
from tests.nested.cloud_base import EDU
from tests.nested.cloud_base import RealGuestTestBase
from tests.nested import demo_run
from tests.nested.failed_device_steps import FailedDeviceSteps
from tests.nested.mtty_steps import MttySteps
from tools.aio import devices
from tools.aio import l1_restart
from tools.aio import nested
from tools.nested import node


class TestARealGuest(RealGuestTestBase, FailedDeviceSteps, MttySteps):

    # -- scenarios ---------------------------------------------------------

    def test_boot_use_hotplug_delete_and_offer_again(self):
        # One guest for the whole life cycle: each boot costs minutes of
        # TCG inside TCG.  A drained device sends the boot elsewhere and
        # keeps its guest; the guest's device removed by L1's kernel is
        # replaced under the running guest, nova-compute SIGKILLed and
        # restarted half-way (failed_device_steps).
        # L1's bridged function drained: the boot lands on the other
        # function of the group asked for (node 1's); undrained, the
        # bridged one serves the hot-add.
        drained = self._drain(node.Layout.BRIDGED_EDUS[0])
        server, arq, address, rp, out = self._boot_with_a_device()
        self.assertEqual(node.Layout.NUMA1_EDU, address)
        self._undrain(*drained)
        self._hot_add_and_remove(server)
        self._drain_keeps_the_guest(server, arq, address, rp)
        arq, address, rp, out = self._fail_and_replace(
            server, arq, address, rp, self.console(server, bool))
        self._stop_remove_rescan_start(server, arq, address, rp, out)
        self._delete_and_offer_again(server, address, rp)

    def _boot_with_a_device(self):
        """Boot the guest with one edu function and check it in L1's
        kernel, L1's libvirt, the guest and Placement.

        :returns: ``(server, arq, address, rp, console)``.
        """
        group = devices.demo_group(self.cloud.layout)
        flavor = self.flavor_for('nested-one', group)
        self.api('POST', 'accel', '/v2/device_profiles',
                 [{'name': 'nested-extra', 'groups': [group]}])
        self.addCleanup(self.api, 'DELETE', 'accel',
                        '/v2/device_profiles/nested-extra')
        # The nova-compute that _fail_and_replace starts in place of the
        # one it kills mid-replacement imports its modules while the
        # control plane schedules the server and binds its ARQ, when L1
        # idles.
        self.replacement = l1_restart.prepare(self.cloud, self.sess)
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
        return server, arq, address, rp, out

    def _hot_add_and_remove(self, server):
        """``nova-accel attach-accelerator`` then ``detach-accelerator``:
        the guest's kernel sees a second function arrive and leave."""
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

    def _stop_remove_rescan_start(self, server, arq, address, rp, out):
        """Stop the server, unplug its function from L1 and plug it back,
        start the server again (libvirt's power on is a hard reboot: the
        domain is defined again from the ARQs): the guest has the
        device."""
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

    def _delete_and_offer_again(self, server, address, rp):
        """Delete the server: its device is released, cleaned and offered
        again (within 300 s)."""
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

        def inventory():
            return self.api('GET', 'placement', '/resource_providers/%s/'
                            'inventories' % rp)['inventories']
        self.sess.sh('echo 1 > /sys/bus/pci/rescan')
        # The provider is created, then given its inventory: two calls,
        # either of which a look may fall between.
        self._until(lambda: providers() == [rp] and 'CUSTOM_EDU' in
                    inventory(), 'not reported again')
        self.assertEqual(1, inventory()['CUSTOM_EDU']['total'])

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
        self._release_after_resets_disabled(server, node.Layout.NUMA1_EDU)

    def _release_after_resets_disabled(self, server, address):
        """Disable every reset method of the guest's function in L1's
        kernel (``echo > reset_method``: the kernel keeps ``reset``, whose
        write now fails), then delete the guest: the function, discovered
        with ``bus`` and cleaned ``flr``, is released without a reset and
        offered again, not locked out."""
        path = '/sys/bus/pci/devices/%s/reset_method' % address
        _, methods = self.sess.sh('cat %s' % path)
        self.assertEqual('bus', methods.strip())
        self.sess.sh('echo > %s' % path)
        self.addCleanup(self.sess.sh, 'echo default > %s' % path)
        _, methods = self.sess.sh('cat %s' % path)
        self.assertEqual('', methods.strip())
        rp = self.provider_of(address)
        self.delete(server)

        def offered():
            usages = self.api('GET', 'placement', '/resource_providers/%s/'
                              'usages' % rp)['usages']
            inventory = self.api('GET', 'placement', '/resource_providers/'
                                 '%s/inventories' % rp)['inventories']
            return (self.device_status(address) == 'enabled' and
                    not usages.get('CUSTOM_EDU') and
                    not inventory['CUSTOM_EDU']['reserved'])
        self._until(offered, 'the function is not offered again')

    def test_two_pooled_functions_and_a_unit_in_one_guest(self):
        # L1's two root-bus edu functions are one pooled provider
        # (devices.EDU_POOL_SPEC, total 2): a profile asking for 2 in one
        # request group gets 2 ARQs bound to distinct functions of that
        # provider.  A second group asks for L1's multi-function device
        # (slot 08, two functions in one IOMMU group: one device,
        # devices.EDU_UNIT_SPEC): one ARQ whose attach handle names both
        # functions.  The guest lists all four, the unit's two in one
        # slot.
        pool = self.pool_provider()
        flavor = self.flavor_for('nested-pool', [devices.POOLED_GROUP,
                                                 devices.UNIT_GROUP])
        server = self.boot('nested-pool', flavor)
        arqs = self.arqs(server)
        self.assertEqual(['Bound'] * 3, [a['state'] for a in arqs])
        pooled = [a for a in arqs if a['device_rp_uuid'] == pool]
        unit, = [a for a in arqs if a['device_rp_uuid'] != pool]
        addresses = sorted('%(domain)s:%(bus)s:%(device)s.%(function)s' %
                           a['attach_handle_info'] for a in pooled)
        self.assertEqual(sorted(node.Layout.ROOT_EDUS), addresses)
        self.assertEqual(('0000:00:08.0', '0,1'), (
            '%(domain)s:%(bus)s:%(device)s.%(function)s' % unit[
                'attach_handle_info'],
            unit['attach_handle_info'].get('functions')))
        held = addresses + list(node.Layout.UNIT_EDUS)
        for address in held:
            self.assertEqual('vfio-pci', nested.device_state(
                self.sess, address)['driver'])
        self.assertEqual(2, self.api(
            'GET', 'placement', '/resource_providers/%s/usages' % pool)[
            'usages'].get('CUSTOM_EDU_POOL'))
        _, xml = self.sess.sh('virsh -c qemu:///system dumpxml %s' % (
            server['OS-EXT-SRV-ATTR:instance_name']))
        for function in (0, 1):
            self.assertIn("<address domain='0x0000' bus='0x00' "
                          "slot='0x08' function='0x%d'/>" % function, xml)
        self.assertIn("multifunction='on'", xml)
        out = self.console(server, lambda text: 'guest: done' in text)
        edus = [fn.address for fn in guest_console.listing(out) or ()
                if fn.pci_id == EDU]
        self.assertEqual(4, len(edus), out[-2000:])
        slots = {}
        for address in edus:
            slot, function = address.rsplit('.', 1)
            slots.setdefault(slot, []).append(function)
        self.assertIn(['0', '1'], sorted(sorted(f) for f in slots.values()),
                      edus)
        # Deleted: each function is released and offered again.
        self.delete(server)
        for address in held:
            self.assertNotEqual('vfio-pci', nested.device_state(
                self.sess, address)['driver'])
        self._until(lambda: pool in self.api(
            'GET', 'placement', '/allocation_candidates?resources='
            'CUSTOM_EDU_POOL:2', headers={
                'OpenStack-API-Version': 'placement 1.36'})[
            'provider_summaries'], 'the pool is not offered again')
        self._until(lambda: unit['device_rp_uuid'] in self.api(
            'GET', 'placement', '/allocation_candidates?resources='
            'CUSTOM_EDU_UNIT:1', headers={
                'OpenStack-API-Version': 'placement 1.36'})[
            'provider_summaries'], 'the unit is not offered again')

    def pool_provider(self):
        """The pooled provider of L1's root-bus edu functions: total 2."""
        deps = self.api('GET', 'accel', '/v2/deployables')['deployables']
        (rp,) = [d['rp_uuid'] for d in deps if '_pool_' in d['name']]
        inventory = self.api('GET', 'placement', '/resource_providers/%s/'
                             'inventories' % rp)['inventories']
        self.assertEqual(2, inventory['CUSTOM_EDU_POOL']['total'])
        return rp

    def test_tempest_guest_scenario(self):
        # nova-accel's tempest plugin as an operator runs it against this
        # cloud: its guest scenario (boot, rebuild, shelve-offload and
        # unshelve onto a released and cleaned device, hot-add, delete)
        # requires the device inside the guest after each step, read
        # from the console, and the ARQs and Placement to match.
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
                node.Layout.NUMA1_EDU,) + node.Layout.UNIT_EDUS:
            self.assertNotEqual('vfio-pci', nested.device_state(
                self.sess, address)['driver'])

    def test_the_readme_demo(self):
        # The README's main job is ``all --skip-tempest``: up (this
        # class's cloud), demo, down (this class's teardown).  Its demo
        # step, as tox -e aio runs it, checked on what it prints.
        rc, out, _ = demo_run.run()
        demo_run.check(self, rc, out)

    def test_functions_of_one_iommu_group_are_one_device(self):
        deps = self.api('GET', 'accel', '/v2/deployables')['deployables']
        text = json.dumps(deps)
        first, second = node.Layout.BRIDGED_EDUS
        # The two functions behind the PCIe-to-PCI bridge share an IOMMU
        # group: one of them is offered, never both to two guests.
        self.assertEqual(1, sum(a in text for a in (first, second)))
        self.assertEqual(devices.expected_deployables(self.cloud.layout),
                         len(deps))
