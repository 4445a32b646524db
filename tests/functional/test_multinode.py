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

"""Many compute nodes: ``accel-backend-api``, ``accel-backend-conductor``
and one ``accel-backend-agent`` per host, as real processes, laid out as
the install guide says: the agents' configuration has no ``[database]``
section.

Started here: RabbitMQ (Debian ``rabbitmq-server``; the agents connect
as a user with only the permissions of
``etc/rabbitmq/compute-node.permissions``), PostgreSQL (the
throwaway server of ``fixtures.databases``), Placement (gunicorn), a Nova
stub, the compute node providers of hosts ``node1`` and ``node2``, two
agents (both over the recorded ``two-gpus`` sysfs tree: device and
provider UUIDs are derived from the host, so the two hosts' GPUs stay
apart; cleaning by ``[cleaning] command``), one conductor and two API
processes on the shared database.  The test checks that:

* both hosts' devices, discovered by agents that opened no database, are
  listed by either API and sit in Placement under the right compute node
  provider;
* an ARQ bound (through one API) to a GPU of node2 is bound by the
  conductor (the attach handle is node2's device) and the Nova stub gets
  ``accelerator-request-bound``;
* with the conductor killed (SIGKILL), binds are accepted and stay
  ``BindStarted``; the restarted conductor resumes them from the database,
  binds them and tells Nova;
* the broker is killed (SIGKILL) and started again; then deleting the
  ARQs releases the devices; each host's agent runs its
  cleaning command and commits the outcome through the conductor, and the
  devices bind again; node1's agent, killed (SIGKILL) before the delete,
  cleans its devices once started again;
* the conductor refuses what the agent of node1 asks about node2's attach
  handles (over the real broker), and nothing changes.
"""

import os
import time

from amqp import exceptions as amqp_exceptions
import fixtures
import kombu
import sqlalchemy as sa
import testtools

from accel_backend.common import ids
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend import conf as accel_conf
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import exception
from accel_backend import transports
from tests.functional.fixtures import accel_nodes
from tests import waiting
from tools.fixtures import databases
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import rabbitmq

HOSTS = ('node1', 'node2')
ADDRESSES = ('0000:af:00.0', '0000:d8:00.0')
T4_GROUP = {'resources:PGPU': '1', 'trait:CUSTOM_NVIDIA_T4': 'required'}
WAIT = 30


def compute_permissions():
    """``(configure, write, read)`` of the shipped
    ``etc/rabbitmq/compute-node.permissions``."""
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'etc',
                        'rabbitmq', 'compute-node.permissions')
    with open(path) as f:
        found = dict(line.split(' = ', 1) for line in f.read().splitlines()
                     if line and not line.startswith('#'))
    return found['configure'], found['write'], found['read']


def rp_uuid(host, address):
    return ids.stable_uuid('rp', host, address)


class TestMultiNode(testtools.TestCase):

    def setUp(self):
        super().setUp()
        started = time.monotonic()
        # The broker takes the longest: it boots while the rest starts.
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer(wait=False))
        pg = self.useFixture(databases.PostgreSQLServer())
        database = pg.create_database('accel_multinode')
        self.placement = self.useFixture(placement_fx.PlacementServer())
        self.nova = self.useFixture(nova_stub.NovaStub())
        self.compute_rps = {h: self.placement.create_provider(h)
                            for h in HOSTS}
        self.rabbit.wait_ready()
        # The install guide's layout: a vhost of accel_backend's own, the
        # control plane's user with every permission on it, the compute
        # nodes' user with those of etc/rabbitmq/compute-node.permissions.
        control_url = self.rabbit.add_user('accel', 'secret', 'accel',
                                           '.*', '.*', '.*')
        self.compute_url = compute_url = self.rabbit.add_user(
            'accel-compute', 'secret', 'accel', *compute_permissions())
        self.database = database
        tmp = self.useFixture(fixtures.TempDir()).path
        self.cleaned = os.path.join(tmp, 'cleaned')
        self.conf = accel_nodes.MultiNodeConf(
            database, control_url, self.placement, self.nova,
            options={'cleaning': {'methods': 'generic_pci:command'}})
        self.conf.db_sync(tmp)
        self.conductor = self.useFixture(accel_nodes.ConductorProcess(
            self.conf, 'conductor1'))
        # Agents call the conductor's topic: its queue must exist first.
        self.conductor.wait_started()
        self.agents = {h: self.useFixture(accel_nodes.AgentProcess(
            self.conf, h, options={
                'DEFAULT': {'transport_url': compute_url},
                'cleaning': {'command': 'sh -c "echo %s {address} >> %s"'
                             % (h, self.cleaned)}})) for h in HOSTS}
        self.apis = [self.useFixture(accel_nodes.ApiServer(
            self.conf, 'api%d' % i)) for i in (1, 2)]
        for proc in [self.conductor] + list(self.agents.values()):
            proc.wait_started()
        self.addDetail('setup_seconds', testtools.content.text_content(
            '%.1f' % (time.monotonic() - started)))

    def details(self):
        procs = dict(self.agents, conductor=self.conductor)
        return '\n'.join('--- %s:\n%s' % (h, a.log_text()[-3000:])
                         for h, a in procs.items())

    # -- helpers ---------------------------------------------------------

    def wait_for(self, what, predicate):
        """``waiting.wait_for`` for up to ``WAIT`` seconds, polling every
        0.1 s; a failure shows the agents' logs."""
        return waiting.wait_for(what, predicate, WAIT, interval=0.1,
                                log=self.details)

    def arq(self, arq_uuid, api=0):
        return self.apis[api].request(
            'GET', '/v2/accelerator_requests/' + arq_uuid)

    def new_arq(self):
        (arq,) = self.apis[0].request(
            'POST', '/v2/accelerator_requests',
            {'device_profile_name': 'gpu'}, expect=(201,))['arqs']
        return arq['uuid']

    def bind(self, arq_uuid, host, address, instance, api=1):
        self.apis[api].request('PATCH', '/v2/accelerator_requests', {
            arq_uuid: [
                {'op': 'add', 'path': '/hostname', 'value': host},
                {'op': 'add', 'path': '/device_rp_uuid',
                 'value': rp_uuid(host, address)},
                {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
            expect=(202,))

    def wait_bound(self, arq_uuid):
        def bound():
            arq = self.arq(arq_uuid)
            return arq if arq['state'] == 'Bound' else None
        return self.wait_for('ARQ %s Bound' % arq_uuid, bound)

    def wait_event(self, arq_uuid, instance):
        want = {'name': 'accelerator-request-bound', 'server_uuid': instance,
                'tag': arq_uuid, 'status': 'completed'}
        return self.wait_for('event for ARQ %s' % arq_uuid,
                             lambda: want in self.nova.received())

    # -- the test --------------------------------------------------------

    def test_two_hosts(self):
        self.check_reported()
        self.apis[0].request('POST', '/v2/device_profiles',
                             [{'name': 'gpu', 'groups': [T4_GROUP]}],
                             expect=(201,))
        vm1, vm2 = self.check_conductor_binds_and_resumes()
        # node1's agent may not touch node2's rows: refused, unchanged.
        self.check_host_refused()
        self.check_compute_user_limits()
        self.check_disable_enable()
        self.check_cleaning(vm1, vm2)

    def check_disable_enable(self):
        """An administrator disables and enables a free device through
        an API process, which has no host store: Placement reserves it
        all, then nothing."""
        device = ids.stable_uuid('device', 'node2', ADDRESSES[0])
        self.assertEqual([0], self.reserved('node2', ADDRESSES[0]))
        self.apis[0].request('POST', '/v2/devices/%s/disable' % device)
        self.assertEqual([1], self.reserved('node2', ADDRESSES[0]))
        self.apis[1].request('POST', '/v2/devices/%s/enable' % device)
        self.assertEqual([0], self.reserved('node2', ADDRESSES[0]))

    def reserved(self, host, address):
        """Placement's reserved units of a device's provider (list, one
        per resource class)."""
        inventories = self.placement.request(
            'GET', '/resource_providers/%s/inventories' % rp_uuid(
                host, address))['inventories']
        return [inv['reserved'] for inv in inventories.values()]

    def check_reported(self):
        """Both hosts' devices, through either API and in Placement,
        from agents that opened no database."""
        def all_devices():
            devs = self.apis[1].request('GET', '/v2/devices')['devices']
            return devs if len(devs) == 4 else None
        devices = self.wait_for('4 devices', all_devices)
        self.assertEqual(
            sorted((h, ids.stable_uuid('device', h, a))
                   for h in HOSTS for a in ADDRESSES),
            sorted((d['hostname'], d['uuid']) for d in devices))
        for host in HOSTS:
            self.assertEqual(2, len(self.apis[0].request(
                'GET', '/v2/devices?hostname=' + host)['devices']))

        # ... and in Placement, under the right compute node provider.
        for host in HOSTS:
            def tree(host=host):
                rps = self.placement.request(
                    'GET', '/resource_providers?in_tree=' +
                    self.compute_rps[host])['resource_providers']
                return rps if len(rps) == 3 else None
            children = [rp for rp in self.wait_for('%s provider tree' % host,
                                                   tree)
                        if rp['uuid'] != self.compute_rps[host]]
            self.assertEqual(
                sorted(rp_uuid(host, a) for a in ADDRESSES),
                sorted(rp['uuid'] for rp in children))
            self.assertEqual({self.compute_rps[host]},
                             {rp['parent_provider_uuid'] for rp in children})

        # The agents opened no database: none in their files, no SQLite
        # file where the default would put one.
        for agent in self.agents.values():
            with open(agent.config_file) as f:
                self.assertNotIn('[database]', f.read())
            self.assertEqual([], [f for f in os.listdir(agent.tmpdir)
                                  if 'sqlite' in f])

    def check_conductor_binds_and_resumes(self):
        """The conductor binds; killed, it resumes the binds it missed.

        :returns: the two instances (node1's, node2's).
        """
        # A node2 GPU is bound by the conductor, and Nova is told.
        arq2, vm2 = self.new_arq(), '22222222-2222-4222-8222-222222222222'
        self.bind(arq2, 'node2', ADDRESSES[1], vm2)
        bound = self.wait_bound(arq2)
        self.assertEqual(('node2', rp_uuid('node2', ADDRESSES[1]), 'd8'),
                         (bound['hostname'], bound['device_rp_uuid'],
                          bound['attach_handle_info']['bus']))
        self.wait_event(arq2, vm2)
        self.assertIn('%s to PCI' % arq2, self.conductor.log_text())

        # The conductor crashes; binds wait in the database.
        self.conductor.kill()
        arqs1 = [self.new_arq() for _ in ADDRESSES]
        vm1 = '11111111-1111-4111-8111-111111111111'
        for arq_uuid, address in zip(arqs1, ADDRESSES):
            self.bind(arq_uuid, 'node1', address, vm1)
        time.sleep(1)
        self.assertEqual(['BindStarted', 'BindStarted'],
                         [self.arq(u, api=1)['state'] for u in arqs1])
        # The restarted conductor resumes them from the database.
        self.conductor.start()
        for arq_uuid in arqs1:
            self.assertEqual('node1', self.wait_bound(arq_uuid)['hostname'])
            self.wait_event(arq_uuid, vm1)
        log = self.conductor.log_text()
        self.assertIn('Resuming binding of 2 ARQs', log)
        self.assertEqual(
            {'af', 'd8'},
            {self.arq(u)['attach_handle_info']['bus'] for u in arqs1})
        return vm1, vm2

    def check_cleaning(self, vm1, vm2):
        """Deletes release the devices; each agent cleans its own."""
        # The broker dies (SIGKILL) and comes back: every process
        # reconnects before the deletes below need them.
        self.rabbit.kill()
        self.rabbit.start()
        # Delete frees the devices; each agent cleans its own, committing
        # through the conductor; they bind again.  node1's agent is dead
        # meanwhile (SIGKILL): its devices wait, dirty, until it is back.
        self.agents['node1'].kill()
        for vm in (vm1, vm2):
            self.apis[0].request('DELETE',
                                 '/v2/accelerator_requests?instance=' + vm,
                                 expect=(204,))
        self.assertEqual([], self.apis[1].request(
            'GET', '/v2/accelerator_requests')['arqs'])
        # Reserved in Placement by the API before it answered, though
        # node1's agent, whose cleaner would, is down: never offered
        # while dirty.
        self.assertEqual([[1], [1]], [self.reserved('node1', a)
                                      for a in ADDRESSES])
        self.wait_for('node2 cleaned', lambda: self.cleanings() == [
            'node2 ' + ADDRESSES[1]])
        self.assertEqual({'dirty'}, set(self.handles('node1').values()) -
                         {'available'})
        self.agents['node1'].start()
        want = sorted(['node1 ' + a for a in ADDRESSES] +
                      ['node2 ' + ADDRESSES[1]])
        self.wait_for('3 cleanings', lambda: self.cleanings() == want)
        self.wait_for('every handle available', lambda: set(
            self.handles().values()) == {'available'})
        again = self.new_arq()
        self.bind(again, 'node1', ADDRESSES[0], vm1)
        self.wait_bound(again)

    # -- rows, as the conductor sees them ------------------------------------

    def cleanings(self):
        if not os.path.exists(self.cleaned):
            return []
        with open(self.cleaned) as f:
            return sorted(line.strip() for line in f if line.strip())

    def handles(self, host=None):
        """``{attach handle UUID: state}`` (of ``host``'s devices)."""
        db = db_api.Database(self.database)
        try:
            with db.transaction() as session:
                query = (sa.select(models.AttachHandle.uuid,
                                   models.AttachHandle.state)
                         .join(models.Deployable).join(models.Device))
                if host:
                    query = query.where(models.Device.hostname == host)
                return dict(session.execute(query).all())
        finally:
            db.dispose()

    def check_compute_user_limits(self):
        """The compute nodes' RabbitMQ user cannot take the conductor's
        messages: declaring or reading its queue is refused."""
        url = self.compute_url.replace('rabbit://', 'amqp://')
        for action in ('declare', 'get'):
            with kombu.Connection(url) as conn:
                channel = conn.channel()
                call = (lambda: channel.queue_declare('accel-conductor'))
                if action == 'get':
                    call = (lambda: channel.basic_get('accel-conductor'))
                self.assertRaises(amqp_exceptions.AccessRefused, call)

    def check_host_refused(self):
        """What node1's agent would send about a handle of node2, over
        the real broker, is refused by the conductor."""
        conf = accel_conf.new_conf([], config_files=[
            self.agents['node1'].config_file])
        transport = transports.get_rpc_transport(conf)
        self.addCleanup(transport.cleanup)
        store = conductor_rpcapi.RemoteHostStore(
            conductor_rpcapi.ConductorAPI.from_conf(conf, transport), 'node1')
        before = self.handles('node2')
        handle = sorted(before)[0]
        for call in (lambda: store.start_cleaning(handle),
                     lambda: store.finish_cleaning(handle, 'forged')):
            self.assertRaises(exception.NotThisHost, call)
        self.assertEqual(before, self.handles('node2'))
        self.assertIn('Refused: host node1 asked to change attach handle %s'
                      % handle, self.conductor.log_text())
