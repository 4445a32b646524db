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

"""Steps of the real guest's life cycle (``test_cloud``) about devices
that need service or fail (issue 53): a drained device stays under its
guest; a device that L1's kernel loses under the running guest (a
surprise removal through sysfs) is replaced by another while the guest
runs, with ``[nova_accel] replace_failed`` on in L1's nova-compute
(``tools.aio.nested.nova_conf``), and quarantined until it comes back.
They reuse the guest the life cycle boots: a guest costs minutes."""

import json
import time

import sqlalchemy as sa
import testtools
from testtools import content

from accel_backend.conductor import health_taints
from accel_backend.db import models
from accel_common import taints
from nova_accel.hotplug import replace
from tests.nested.cloud_base import _edus
from tools.aio import l1_restart
from tools.aio import nested

#: The accelerator microversion of the taints API.
TAINTS = {'OpenStack-API-Version': 'accelerator 2.5'}


class FailedDeviceSteps(testtools.TestCase):
    """Mixed into ``cloud_base.RealGuestTestBase``'s scenarios (its
    helpers: ``api``, ``arqs``, ``console``, ``sess``...)."""

    def deployable_of(self, rp):
        deps = self.api('GET', 'accel', '/v2/deployables',
                        headers=TAINTS)['deployables']
        return next(d for d in deps if d['rp_uuid'] == rp)

    def reserved(self, rp, rc='CUSTOM_EDU'):
        inventory = self.api('GET', 'placement', '/resource_providers/%s/'
                             'inventories' % rp)['inventories'][rc]
        return inventory['reserved'], inventory['total']

    def handle_states(self, address):
        """The states of the attach handles of L1's device at
        ``address``, read from accel_backend's database (the API shows
        none)."""
        engine = sa.create_engine(self.cloud.layout.db_url('accel_backend'))
        try:
            with engine.connect() as conn:
                return sorted(conn.scalars(
                    sa.select(models.AttachHandle.state)
                    .join(models.Deployable,
                          models.AttachHandle.deployable_id ==
                          models.Deployable.id)
                    .join(models.Device,
                          models.Deployable.device_id == models.Device.id)
                    .where(models.Device.hostname == nested.L1_HOST,
                           models.Device.address == address)))
        finally:
            engine.dispose()

    def _drain(self, address):
        """Taint L1's device at ``address`` ``NoSchedule`` as an operator
        drains it: Placement reserves it at once.

        :returns: ``(deployable UUID, taint UUID, provider UUID)``.
        """
        rp = self.provider_of(address)
        dep = self.deployable_of(rp)['uuid']
        taint = self.api('POST', 'accel', '/v2/deployables/%s/taints' % dep,
                         {'key': 'maintenance', 'effect': 'NoSchedule',
                          'reason': 'fan noise'}, headers=TAINTS)
        self.assertEqual((1, 1), self.reserved(rp))
        self.assertEqual(['maintenance'], [
            t['key'] for t in self.deployable_of(rp)['taints']])
        return dep, taint['uuid'], rp

    def _undrain(self, dep, taint, rp):
        """Remove the drain taint: the device is not reserved any more."""
        self.api('DELETE', 'accel', '/v2/deployables/%s/taints/%s' % (
            dep, taint), headers=TAINTS)
        self.assertEqual([], self.deployable_of(rp)['taints'])
        self.assertEqual((0, 1), self.reserved(rp))

    def _drain_keeps_the_guest(self, server, arq, address, rp):
        """An operator drains the guest's device (``NoSchedule``): the
        guest keeps it and Placement reserves it, so that no new boot
        gets it once the guest lets go; untainted, it is not reserved
        any more."""
        drained = self._drain(address)
        self.assertEqual([(arq['uuid'], 'Bound', rp)], [
            (a['uuid'], a['state'], a['device_rp_uuid'])
            for a in self.arqs(server)])
        self.assertEqual('vfio-pci',
                         nested.device_state(self.sess, address)['driver'])
        self._undrain(*drained)

    def replacement_plan(self, server, arq_uuid):
        """The plan of the replacement of ``arq_uuid`` under ``server``
        that nova-compute persisted (``nova_accel.hotplug.replace``: the
        instance's ``system_metadata``), read from Nova's cell database;
        None when there is none."""
        engine = sa.create_engine(self.cloud.layout.db_url('nova_cell1'))
        try:
            with engine.connect() as conn:
                value = conn.execute(sa.text(
                    'SELECT value FROM instance_system_metadata WHERE '
                    'instance_uuid = :i AND key = :k AND deleted = 0'), {
                        'i': server['id'],
                        'k': 'replace_accelerator:%s' % arq_uuid}).scalar()
        finally:
            engine.dispose()
        return None if value is None else json.loads(value)

    def _quarantined_then_offered(self, address, rp):
        """The failed function: missing, tainted ``NoExecute``, its handle
        quarantined and reserved; back on a rescan, cleaned and offered
        again."""
        # The failed one: missing, tainted NoExecute, quarantined and
        # reserved in Placement.
        self.assertEqual('missing', self.device_status(address))
        self.assertIn((health_taints.HEALTH_KEY, taints.NO_EXECUTE), [
            (t['key'], t['effect'])
            for t in self.deployable_of(rp)['taints']])
        self.assertEqual(['quarantined'], self.handle_states(address))
        self.assertEqual((1, 1), self.reserved(rp))
        # Back on a rescan: cleaned, then offered again.
        self.sess.sh('echo 1 > /sys/bus/pci/rescan')

        def offered():
            return (self.handle_states(address) == ['available'] and
                    self.reserved(rp) == (0, 1))
        self._until(offered, 'the failed device is not offered again')
        self.assertEqual('enabled', self.device_status(address))

    def _remove_and_kill_compute_midway(self, server, arq, address, rp):
        """Remove the guest's function in L1 and SIGKILL L1's nova-compute
        the moment its replacement has begun rebinding the ARQ (a watcher
        in L1 on its log, ``l1_restart.kill_on_log_line``); check the
        persisted plan says so; start nova-compute again.

        :returns: the ``time.monotonic()`` of the removal.
        """
        old = self.replacement['old']
        watcher = l1_restart.kill_on_log_line(
            self.sess, self.replacement,
            'ARQ %s: step "%s" begun' % (arq['uuid'], replace.REBIND))
        self.addCleanup(self.sess.sh, 'pkill -f "tail -n0 -s 0.1 -F" || '
                        'true\n', check=False)
        started = time.monotonic()
        # The write blocks until QEMU has released the function: in the
        # background, as a surprise removal does not wait for anyone.
        self.sess.sh("setsid sh -c 'echo 1 > /sys/bus/pci/devices/%s/"
                     "remove' </dev/null >/dev/null 2>&1 &" % address)
        self._until(lambda: not l1_restart.alive(self.sess, old),
                    'nova-compute was not killed mid-replacement (%s)'
                    % watcher)
        plan = self.replacement_plan(server, arq['uuid'])
        self.addDetail('killed', content.text_content(
            'nova-compute SIGKILLed %.1f s after the removal; plan: %s' % (
                time.monotonic() - started, plan)))
        # Killed with the replacement half done: the plan says so.
        self.assertIsNotNone(plan)
        self.assertIn(plan['step'], (replace.REBIND, replace.PLUG))
        self.assertEqual(rp, plan['old'])
        l1_restart.restart_compute(self.cloud, self.sess, self.token,
                                   replacement=self.replacement)
        self.assertEqual('ACTIVE', self.server(server)['status'])
        return started

    def _fail_and_replace(self, server, arq, address, rp, out):
        """L1's kernel removes the guest's function while the guest runs
        (``remove`` in sysfs: QEMU gives the function up, the guest sees
        it leave).  The agent finds it gone while in use (``missing``,
        tainted ``NoExecute``); L1's nova-compute starts replacing it and
        is SIGKILLed the moment it has begun rebinding the ARQ (its
        allocation already moved); the restarted nova-compute resumes the
        persisted plan: the same ARQ is Bound to another function, which
        the guest lists.  The failed one is quarantined, reserved; a
        rescan brings it back, cleaned and offered again.

        :returns: ``(arq, address, rp, console)`` of the replacement.
        """
        changes = out.count('guest: PCI functions changed')
        started = self._remove_and_kill_compute_midway(server, arq, address,
                                                       rp)

        def replaced():
            (now,) = self.arqs(server)
            return (now['state'] == 'Bound' and
                    now['device_rp_uuid'] != rp) and now
        self._until(replaced, 'the failed device was not replaced')
        new = replaced()
        rebound_s = time.monotonic() - started
        self.assertEqual(arq['uuid'], new['uuid'])
        info = new['attach_handle_info']
        new_address = '%s:%s:%s.%s' % (info['domain'], info['bus'],
                                       info['device'], info['function'])
        # The guest saw one function leave and one arrive.
        out = self.console(server, lambda text: text.count(
            'guest: PCI functions changed') >= changes + 2 and
            _edus(text) == 1, timeout=300)
        listed_s = time.monotonic() - started
        self.assertEqual(1, _edus(out), out[-2000:])
        self.addDetail('replacement', content.text_content(
            'ARQ rebound %.1f s, listed by the guest %.1f s after the '
            'removal (nova-compute killed and restarted between)' % (
                rebound_s, listed_s)))
        # Nothing double-assigned: the plan is gone, the instance holds
        # one unit, on the new device only.
        self.assertIsNone(self.replacement_plan(server, arq['uuid']))
        allocations = self.api('GET', 'placement', '/allocations/%s' % (
            server['id']))['allocations']
        self.assertEqual({new['device_rp_uuid']: {'CUSTOM_EDU': 1}}, {
            u: {'CUSTOM_EDU': a['resources']['CUSTOM_EDU']}
            for u, a in allocations.items()
            if 'CUSTOM_EDU' in a['resources']})
        _, xml = self.sess.sh('virsh -c qemu:///system dumpxml %s' % (
            server['OS-EXT-SRV-ATTR:instance_name']))
        self.assertIn("<address domain='0x%s' bus='0x%s' slot='0x%s' "
                      "function='0x%s'/>" % (info['domain'], info['bus'],
                                             info['device'],
                                             info['function']), xml)
        self.assertEqual('vfio-pci', nested.device_state(
            self.sess, new_address)['driver'])
        actions = self.nova('GET', '/servers/%s/os-instance-actions' % (
            server['id']))['instanceActions']
        self.assertIn('accelerator-replace',
                      [a['action'] for a in actions])
        self._quarantined_then_offered(address, rp)
        return new, new_address, new['device_rp_uuid'], out
