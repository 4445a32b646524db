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

"""Evacuate a server with a GPU (issue "nova_accel in Nova", part 4).

Two compute nodes, compute1 and compute2, each with the recorded
``two-gpus`` sysfs tree (device and provider UUIDs are derived from the
host name, so the hosts' GPUs stay apart):

* compute1's accel_backend is the embedded ``Service`` of the harness
  (the API Nova talks to), with ``[binding] mode = agents``: it is also
  the conductor, binding every host's ARQs and telling Nova;
* compute2's is a second in-process ``Service`` with role ``agent``,
  talking to it over the same (``fake://``) RPC transport: it stores
  compute2's GPUs through the conductor and reports them to Placement
  under compute2's provider.

compute1 goes down (service stopped, forced down) and the server is
evacuated: Nova's conductor deletes the old ARQs, creates new ones and
binds them to a GPU of compute2 (``_create_and_bind_arq_for_instance``);
the conductor binds them and Nova rebuilds the guest on compute2 with
compute2's GPU.  compute1's allocation is removed when compute1 comes back
(Nova's ``_destroy_evacuated_instances``), as for any evacuation.
"""

import os

import fixtures
from nova.tests.fixtures import libvirt as fakelibvirt

from accel_backend.common import ids
from accel_backend.conductor import rpc as conductor_rpc
from accel_backend import conf as accel_conf
from accel_backend import service as accel_service
from accel_backend import transports
from wsgi_intercept import interceptor

from tests.functional import base

ADDRESSES = ('0000:af:00.0', '0000:d8:00.0')


class EvacuateTest(base.AccelServersTestBase):

    def setUp(self):
        self.accel_dir = self.useFixture(fixtures.TempDir()).path
        self.accel_db = 'sqlite:///%s' % os.path.join(self.accel_dir,
                                                      'accel.sqlite')
        self.accel_transport = None
        super().setUp()
        self.start_compute(hostname='compute2')
        self.agent2 = self._start_agent('compute2')
        self.rps = {h: {a: ids.stable_uuid('rp', h, a)
                        for a in ADDRESSES} for h in ('compute1', 'compute2')}
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])

    # -- accel_backend: embedded API + compute1, agent of compute2 -------

    def accel_config(self, tmpdir, host=None):
        text = super().accel_config(tmpdir)
        if host is not None:
            text = text.replace('host = %s\n' % self.COMPUTE,
                                'host = %s\n' % host, 1)
        return text.replace(
            '[DEFAULT]\n',
            '[DEFAULT]\ntransport_url = fake://\n', 1).replace(
            '[binding]\n', '[binding]\nmode = agents\n', 1) + (
            '[database]\nconnection = %s\n[audit]\ninterval = 0\n'
            % self.accel_db)

    def _new_conf(self, host=None):
        tmpdir = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmpdir, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(self.accel_config(tmpdir, host=host))
        return accel_conf.new_conf(config_files=[path])

    def _transport(self, conf):
        if self.accel_transport is None:
            self.accel_transport = transports.get_rpc_transport(conf)
            self.addCleanup(self.accel_transport.cleanup)
        return self.accel_transport

    def _start_accel_backend(self):
        conf = self._new_conf()
        svc = accel_service.Service(conf, transport=self._transport(conf))
        self.addCleanup(svc.stop)
        # The conductor of compute2's agent: its RPC API (the harness
        # runs discovery itself, so not the whole ``svc.start()``).
        server = conductor_rpc.start_server(
            svc.transport, conf.conductor.topic, conf.host,
            conductor_rpc.store_factory(svc.db, conf, svc.notifications),
            svc.binder)
        self.addCleanup(conductor_rpc.stop_server, server)
        intercept = interceptor.RequestsInterceptor(lambda: svc.app,
                                                    url=base.ACCEL_URL)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        return svc

    def _start_agent(self, host):
        conf = self._new_conf(host=host)
        svc = accel_service.Service(conf, role=accel_service.AGENT,
                                    transport=self._transport(conf))
        self.addCleanup(svc.stop)
        svc.discover_and_report()
        svc.start()
        return svc

    def _drop_casts_to(self, host):
        """Harness only: Nova's test RPC turns casts into calls, so a
        cast to a stopped compute blocks its caller for
        ``rpc_response_timeout`` (60 s) and then fails.  The one that
        matters here is the ``accelerator-request-bound`` event: it
        reaches nova-api before compute2 has claimed the instance, so
        Nova routes it to ``instance.host``, still compute1.  In a cloud
        that cast is simply lost (compute2 reads the ARQ as Bound before
        waiting); this drops it the same way."""
        self.dead = getattr(self, 'dead', set())
        self.dead.add(host)
        from nova.compute import rpcapi
        real = rpcapi.ComputeAPI.external_instance_event
        dead = self.dead

        def external_instance_event(api, ctxt, instances, events, host=None):
            if host in dead:
                return None
            return real(api, ctxt, instances, events, host=host)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.rpcapi.ComputeAPI.external_instance_event',
            external_instance_event))

    @staticmethod
    def _recorder(real, calls):
        def bind_many(arq_uuids, *args, **kwargs):
            calls.extend(arq_uuids)
            return real(arq_uuids, *args, **kwargs)
        return bind_many

    # -- observations ----------------------------------------------------

    def guest_on(self, host, server_id):
        conn = self.computes[host].driver._host.get_connection()
        flags = (fakelibvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE |
                 fakelibvirt.VIR_CONNECT_LIST_DOMAINS_INACTIVE)
        if server_id not in [d.UUIDString()
                             for d in conn.listAllDomains(flags)]:
            return None
        return base.hostdev_addresses(
            conn.lookupByUUIDString(server_id).XMLDesc(0))

    def allocations(self, server_id):
        allocs = self.placement.get(
            '/allocations/%s' % server_id).body['allocations']
        return {rp: a['resources'] for rp, a in allocs.items()}

    def assert_on(self, host, server_id):
        """The server's one ARQ, guest and GPU allocation are on ``host``;
        returns the GPU's address."""
        (arq,) = self.arqs_of(server_id)
        self.assertEqual(('Bound', host, server_id),
                         (arq['state'], arq['hostname'],
                          arq['instance_uuid']))
        info = arq['attach_handle_info']
        address = '%s:%s:%s.%s' % (info['domain'], info['bus'],
                                   info['device'], info['function'])
        self.assertEqual(self.rps[host][address], arq['device_rp_uuid'])
        self.assertEqual([address], self.guest_on(host, server_id))
        self.assertEqual({'PGPU': 1},
                         self.allocations(server_id)[arq['device_rp_uuid']])
        return arq, address

    # -- the test --------------------------------------------------------

    def test_evacuate(self):
        # Both hosts' GPUs are in Placement, under their own compute node.
        for host in ('compute1', 'compute2'):
            root = self.placement.get(
                '/resource_providers?name=%s' % host,
                version='1.14').body[
                'resource_providers'][0]['uuid']
            tree = self.placement.get(
                '/resource_providers?in_tree=%s' % root,
                version='1.14').body[
                'resource_providers']
            self.assertEqual(sorted(self.rps[host].values()),
                             sorted(rp['uuid'] for rp in tree
                                    if rp['uuid'] != root))

        # Only compute1 is enabled for the boot.
        self.api.put_service(self.api.get_services(
            host='compute2', binary='nova-compute')[0]['id'],
            {'status': 'disabled'})
        server = self._create_server(
            flavor_id=self.accel_flavor('gpu'), networks='none',
            host='compute1')
        old_arq, old_address = self.assert_on('compute1', server['id'])
        self.api.put_service(self.api.get_services(
            host='compute2', binary='nova-compute')[0]['id'],
            {'status': 'enabled'})

        # compute1 dies.
        self.computes['compute1'].stop()
        self._drop_casts_to('compute1')
        service1 = self.api.get_services(host='compute1',
                                         binary='nova-compute')[0]
        self.api.put_service(service1['id'], {'forced_down': True})

        self.assertIsNone(self.agent2.binder)
        bound = []
        binder = self.accel.binder
        self.useFixture(fixtures.MockPatchObject(
            binder, 'bind_many', side_effect=self._recorder(
                binder.bind_many, bound)))

        server = self._evacuate_server(server, expected_host='compute2')

        arq, address = self.assert_on('compute2', server['id'])
        self.assertNotEqual(old_arq['uuid'], arq['uuid'])
        # The conductor (the embedded service) bound compute2's ARQ.
        self.assertEqual([arq['uuid']], bound)
        gpu_allocs = {rp for rp, res in self.allocations(
            server['id']).items() if 'PGPU' in res}
        # Until compute1 comes back the server holds both GPUs in
        # Placement: Nova keeps the source allocation of an evacuated
        # server until the source compute cleans up.  The old ARQ is gone.
        self.assertEqual({self.rps['compute1'][old_address],
                          self.rps['compute2'][address]}, gpu_allocs)
        self.accel_request('GET', '/v2/accelerator_requests/%s'
                           % old_arq['uuid'], expect=(404,))

        # compute1 comes back: Nova removes the evacuated guest and the
        # source allocation; only compute2's GPU is held.
        self.dead.discard('compute1')
        self.restart_compute_service('compute1')
        self.api.put_service(service1['id'], {'forced_down': False})
        self.assertIsNone(self.guest_on('compute1', server['id']))
        self.assertEqual(
            {self.rps['compute2'][address]},
            {rp for rp, res in self.allocations(server['id']).items()
             if 'PGPU' in res})
        self.assert_on('compute2', server['id'])

        self._delete_server(server)
        self.assertEqual([], self.arqs_of(server['id']))
        self.assertEqual({}, self.allocations(server['id']))
