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

"""What the scenarios of ``test_cloud`` share: the cloud with the nested
compute node, brought up once for the class, and the helpers that drive
its APIs and read its guests' consoles."""

import json
import subprocess
import time

import testtools

from accel_backend.common import ids
from nova_accel_tempest_plugin import guest_console
from tools.aio import __main__ as aio_main
from tools.aio import cloud as cloud_mod
from tools.aio import devices
from tools.aio import nested
from tools.aio import tempest as tempest_mod

ACTIVE_TIMEOUT = 900
NOVA_VERSION = {'X-OpenStack-Nova-API-Version': '2.90'}
#: The edu function's id as the guest lists it.
EDU = '0x%s:0x%s' % (devices.EDU_SPEC['vendor_id'],
                     devices.EDU_SPEC['product_id'])


class RealGuestTestBase(testtools.TestCase):
    """One cloud for the class, the one ``python -m tools.aio all
    --skip-tempest`` (the README's demo) brings up, taken down after it,
    and helpers over its APIs and guests."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The cloud the README's demo brings up: ``tools/run demo`` is
        # ``python -m tools.aio all --skip-tempest``.
        demo = aio_main.parser().parse_args(['all', '--skip-tempest'])
        try:
            cls.cloud = cloud_mod.up(db=demo.db, compute=demo.compute)
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
        """A flavor asking for device profile ``name`` of ``group`` (a
        request group dict, or a list of them); both deleted at cleanup.
        """
        groups = group if isinstance(group, list) else [group]
        self.api('POST', 'accel', '/v2/device_profiles',
                 [{'name': name, 'groups': groups}])
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
            ids.stable_uuid('device', nested.L1_HOST, address)),
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

    def _until(self, check, message, timeout=300):
        deadline = time.monotonic() + timeout
        while not check():
            self.assertLess(time.monotonic(), deadline, message)
            time.sleep(3)

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
                # The conductor binds for L1's agent.
                'metrics_url': 'http://127.0.0.1:%d/metrics' % (
                    layout.ports['conductor_metrics']),
            }})
        rc, out = tempest_mod.run_in(
            self.cloud, workspace, 'nova_accel_tempest_plugin.tests.'
            'scenario.' + module, concurrency=1, capture=True)
        self.assertEqual(0, rc, out[-4000:])
        self.assertIn(' - Passed: 1\n', out)
        self.assertIn(' - Skipped: 0\n', out)
        return out


def _edus(console):
    """``edu`` functions in the guest's last complete listing."""
    return guest_console.count(console, EDU)
