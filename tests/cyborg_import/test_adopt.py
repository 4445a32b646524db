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

"""Adopt a real Cyborg 17 deployment: servers keep their devices.

Cyborg 17 (API, conductor, agent with its fake driver) reports its device
to a real Placement; two servers get the equivalent of a boot (their
allocations in Placement, ARQs created and bound with Nova 34's own
client).  Cyborg is stopped, accel_backend discovers the host without
reporting, imports, and starts: Placement shows the same provider with
the same allocations, Nova's client gets the same ARQs as before, and
deleting a server's ARQs frees its device.
"""

import os
import sqlite3
import subprocess
import time
import uuid

import fixtures
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1.token_endpoint import Token
from nova.accelerator import cyborg as nova_cyborg
from nova import exception as nova_exception
import requests
import testtools
from testtools import content

from tests.cyborg_import import fixtures as cy_fixtures
from tests.functional.fixtures import servers
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import cyborg as cyborg_fx
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import process
from tools.fixtures import rabbitmq
from tools.launch import accel_backend as launch_accel
from tools.launch import cyborg as launch

# Cyborg takes the project from X-Project-Id and wants a UUID there.
PROJECT = '6b5b2ad1c5b24a0f9d3fb0f8f9a3c001'
USER = 'a3c0e8e2a2b84f0fa5d0c4b1e6f7a002'
HEADERS = {'X-Roles': 'admin,member,reader', 'X-Service-Roles': 'service',
           'X-User-Id': USER, 'X-Project-Id': PROJECT}
TIMEOUT = 120
#: What Nova's client shows and must not change across the import.
FIELDS = ('uuid', 'state', 'device_profile_name', 'device_profile_group_id',
          'hostname', 'device_rp_uuid', 'instance_uuid',
          'attach_handle_type', 'attach_handle_uuid', 'attach_handle_info')


def nova_client(endpoint):
    """Nova 34's own Cyborg client, talking to ``endpoint`` (``.../v2``)."""
    client = nova_cyborg._CyborgClient(None)
    client._adapter = ks_adapter.Adapter(
        ks_session.Session(auth=Token(endpoint, 'admin')),
        service_type='accelerator', endpoint_override=endpoint,
        additional_headers=HEADERS)
    return client


def wait_for(what, fn, check=None, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('timed out waiting for %s' % what)
        time.sleep(0.5)


class TestAdoptCyborg(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer())
        self.placement = self.useFixture(placement_fx.PlacementServer())
        self.nova = self.useFixture(nova_stub.NovaStub())
        self.root = self.placement.create_provider(launch.HOST)
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def _pl(self, path):
        return self.placement.request('GET', path)

    def _allocations(self, consumer):
        """``{rp_uuid: resources}`` of a consumer (a provider's
        generation moves with any write to it: not compared)."""
        return {rp: a['resources'] for rp, a in self._pl(
            '/allocations/%s' % consumer)['allocations'].items()}

    def _cyborg_boot(self, cyborg, count):
        """Profile, then per server: allocation, ARQs, bind."""
        for attempt in range(3):
            resp = requests.post(cyborg.url + '/v2/device_profiles', json=[{
                'name': 'fpga-dp', 'groups': cy_fixtures.GROUPS}],
                headers=HEADERS)
            # Cyborg 17 (SQLite) answered this 500 once in a CI run on a
            # busy machine, and passed alone; its log went with the
            # temporary directory.  Upstream's setup, not the import under
            # test: tried again, and the API log attached if it fails.
            if resp.status_code < 500:
                break
            time.sleep(2)
        if resp.status_code not in (200, 201):
            with open(cyborg.logs['cyborg-api'], errors='replace') as f:
                self.addDetail('cyborg-api.log', content.text_content(
                    f.read()[-20000:]))
        self.assertIn(resp.status_code, (200, 201), resp.text)
        deps = wait_for('Cyborg\'s provider', lambda: [
            d for d in requests.get(cyborg.url + '/v2/deployables',
                                    headers=HEADERS).json()['deployables']
            if d.get('rp_uuid')] and self._pl(
                '/resource_providers?in_tree=%s&resources=FPGA:1'
                % self.root)['resource_providers'], cyborg.check_running)
        rp = deps[0]['uuid']
        client = nova_client(cyborg.url + '/v2')
        instances = [str(uuid.uuid4()) for _ in range(count)]
        for inst in instances:
            self.placement.request('PUT', '/allocations/%s' % inst, {
                'allocations': {rp: {'resources': {'FPGA': 1}}},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': None}, microversion='1.36')
            arqs = client.create_arqs('fpga-dp')
            client.bind_arqs({a['uuid']: {
                'hostname': launch.HOST, 'device_rp_uuid': rp,
                'instance_uuid': inst} for a in arqs})
        for inst in instances:
            wait_for('Bound ARQs', lambda: all(
                a['state'] == 'Bound' for a in
                client.get_arqs_for_instance(inst, only_resolved=True)),
                cyborg.check_running)
        return rp, instances, {
            inst: client.get_arqs_for_instance(inst) for inst in instances}

    def _manage(self, *args):
        return subprocess.run(
            [process.venv_program('accel-backend-manage'), '--config-file',
             self.config_file] + list(args), env=process.code_env(),
            capture_output=True, text=True, timeout=300)

    def test_adopt(self):
        cyborg = self.useFixture(cyborg_fx.CyborgServices(
            self.placement.endpoint, self.nova.endpoint, self.rabbit.url,
            periodic_interval=2))
        rp, instances, before = self._cyborg_boot(cyborg, 2)
        allocations = {i: self._allocations(i) for i in instances}
        tree = self._pl('/resource_providers?in_tree=%s' % self.root)
        cyborg.stop()

        port = process.free_port()
        self.config_file = os.path.join(self.tmp, 'accel.conf')
        with open(self.config_file, 'w') as f:
            f.write(launch_accel.config(
                self.placement.endpoint, self.nova.endpoint,
                servers.SYSFS_TWO_GPUS, [],
                DEFAULT={'host': launch.HOST, 'state_path': self.tmp},
                api={'host_ip': '127.0.0.1', 'port': port},
                discovery={'enabled_drivers': 'fake'},
                audit={'interval': 0},
                database={'connection': 'sqlite:///%s/accel.sqlite'
                          % self.tmp}))
        for args in (('db', 'sync'), ('discovery', 'sync', '--no-report')):
            out = self._manage(*args)
            self.assertEqual(0, out.returncode, out.stderr)
        # Nothing reported yet: Cyborg's provider has no twin.
        self.assertEqual(tree, self._pl('/resource_providers?in_tree=%s'
                                        % self.root))
        imp = ('import-cyborg', '--cyborg-connection', cyborg.db_url,
               '--cyborg-api', cyborg.url, '--quiet-period', '1')
        dry = self._manage(*imp)
        self.assertEqual(0, dry.returncode, dry.stdout + dry.stderr)
        self.assertIn('Would do (', dry.stdout)
        self.assertIn('take over resource provider %s' % rp, dry.stdout)
        done = self._manage(*(imp + ('--apply',)))
        self.assertEqual(0, done.returncode, done.stdout + done.stderr)
        again = self._manage(*(imp + ('--apply',)))
        self.assertIn('Done (0 changes)', again.stdout)

        server = self.useFixture(accel_fx.AccelBackendServer(
            config_file=self.config_file, port=port))
        wait_for('the first report', lambda: 'OWNER_CYBORG' in self._pl(
            '/resource_providers/%s/traits' % rp)['traits'])
        after_tree = self._pl('/resource_providers?in_tree=%s' % self.root)
        self.assertEqual(sorted(p['uuid'] for p in tree['resource_providers']),
                         sorted(p['uuid'] for p in
                                after_tree['resource_providers']))
        inv = self._pl('/resource_providers/%s/inventories' % rp)
        self.assertEqual((16, 0), (inv['inventories']['FPGA']['total'],
                                   inv['inventories']['FPGA']['reserved']))
        for inst in instances:
            self.assertEqual(allocations[inst], self._allocations(inst))
        client = nova_client(server.endpoint)
        for inst in instances:
            ours = client.get_arqs_for_instance(inst, only_resolved=True)
            self.assertEqual(
                [{k: a[k] for k in FIELDS} for a in before[inst]],
                [{k: a[k] for k in FIELDS} for a in ours])

        gone = before[instances[0]][0]['attach_handle_uuid']
        client.delete_arqs_for_instance(instances[0])
        self.placement.request('DELETE', '/allocations/%s' % instances[0])
        # Nova 34's client raises when an instance has no ARQ left.
        exc = self.assertRaises(nova_exception.AcceleratorRequestOpFailed,
                                client.get_arqs_for_instance, instances[0])
        self.assertIn('no accelerator requests', str(exc))
        db = sqlite3.connect(os.path.join(self.tmp, 'accel.sqlite'))
        self.addCleanup(db.close)
        self.assertEqual((0, 'available'), db.execute(
            'SELECT in_use, state FROM attach_handles WHERE uuid = ?',
            (gone,)).fetchone())
        self.assertEqual({'FPGA': 1}, self._pl(
            '/resource_providers/%s/usages' % rp)['usages'])
        # The other server keeps its device.
        kept = client.get_arqs_for_instance(instances[1])
        self.assertEqual([{k: a[k] for k in FIELDS}
                          for a in before[instances[1]]],
                         [{k: a[k] for k in FIELDS} for a in kept])
