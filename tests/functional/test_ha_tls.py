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

"""The install guide's load-balanced deployment, disturbed while Nova
binds.

Real processes on this machine: HAProxy (Debian ``haproxy``) terminating
TLS with a CA made for the test, configured from the shipped
``etc/haproxy/accel-backend.cfg.sample``, in front of two API nodes
(gunicorn serving ``accel_backend.wsgi.api:application``); Keystone
(``tools.fixtures.keystone``, under gunicorn as the all-in-one cloud runs
it), PostgreSQL, RabbitMQ, Placement (gunicorn), the Nova stub
(``tools.fixtures.nova_stub``: Nova's external events API), one
``accel-backend-conductor`` and the ``accel-backend-agent`` of three
hosts, configured without database credentials (the fake discovery
driver: one deployable of ``FAKE_TOTAL`` handles each).

The API nodes run ``[api] auth_strategy = keystone`` with the install
guide's accounts and roles (``fixtures.ha_identity``): every client
authenticates with a password against Keystone and finds the API's
``https://`` endpoint in its catalog; servers belong to a project member,
Nova adds its service user's token.  Placement validates Keystone's
tokens too, and accel_backend reaches it as the ``accelerator`` user with
the ``service`` role.  Only the Nova stub takes any token.

The rolling upgrade is under way when the test starts: host ``node3``
runs an agent that serves agent RPC 1.0 only (``fixtures
.previous_agent``) and the API nodes cap what they send it with
``[upgrade_levels] agent = 1.0``.

Through the load balancer, over TLS with the CA verified, binds run all
along (``fixtures.bind_load``: Nova 34's own Cyborg client,
``nova.accelerator.cyborg``, configured through Nova's ``[cyborg]`` and
``[service_user]`` options, and openstacksdk's ``Connection`` with
``cacert``), while the test:

1. kills one API node (SIGKILL to gunicorn and its worker); HAProxy's
   ``httpchk`` on ``/healthcheck`` takes it out, binds go on through the
   other; the node comes back and HAProxy puts it back;
2. kills the conductor (SIGKILL): the API's casts wait in RabbitMQ and
   the restarted conductor binds them and resumes what it left
   ``BindStarted``; then restarts the agents one by one (SIGTERM, start);
3. sends SIGHUP to every API node, the conductor and the agents: they
   reload and go on;
4. finishes the upgrade: ``node3``'s agent becomes the current release,
   then each API node in turn is drained in HAProxy, restarted without
   the cap and put back.  Binds carry the API's request id into the
   conductor's log all along.

Before the load starts, tokens Keystone did not issue are answered 401,
and a bind without Nova's service token 403.  After each step more binds
are ``Bound``.  At the end every acknowledged
bind is ``Bound`` exactly once, on its host, each attach handle held by
one ARQ, and Nova took ``accelerator-request-bound`` ``completed`` for
each ARQ and nothing else (at least once: an event in flight when the
conductor is killed is sent again after its restart).
Links in the answers seen through the load balancer say ``https://``.
"""

import time

import fixtures
from openstack import exceptions as os_exceptions
import requests
import testtools

from tests.functional.fixtures import accel_nodes
from tests.functional.fixtures import bind_load
from tests.functional.fixtures import ha_identity
from tests.functional.fixtures import ha_nodes
from tests import waiting
from tools.fixtures import databases
from tools.fixtures import haproxy as haproxy_fx
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import rabbitmq

HOSTS = ('node1', 'node2', 'node3')
PREVIOUS = 'node3'
APIS = ('api1', 'api2')
#: Attach handles of each host: more than the load binds there.
FAKE_TOTAL = 256
PROFILE = 'ha-fpga'
GROUP = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
CAPPED = {'upgrade_levels': {'agent': '1.0'}}
WAIT = 60
#: Binds that must be Bound after each step (two rounds of every host).
PROGRESS = 6


class TestLoadBalancedTLS(testtools.TestCase):

    def setUp(self):
        super().setUp()
        started = time.monotonic()
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer(wait=False))
        database = self.useFixture(
            databases.PostgreSQLServer()).create_database('accel_ha')
        self.identity = self.useFixture(ha_identity.Identity())
        self.placement = self.useFixture(placement_fx.PlacementServer(
            keystone=self.identity.keystone))
        self.nova = self.useFixture(nova_stub.NovaStub())
        for host in HOSTS:
            self.placement.create_provider(host)
        self.rabbit.wait_ready()
        conf = accel_nodes.MultiNodeConf(
            database, self.rabbit.url, self.placement, self.nova, options={
                'discovery': {'enabled_drivers': 'fake',
                              'fake_total': FAKE_TOTAL},
                'oslo_middleware': {'enable_proxy_headers_parsing': True},
                **self.identity.node_options()})
        conf.db_sync(self.useFixture(fixtures.TempDir()).path)
        self.conductor = self.useFixture(ha_nodes.Conductor(
            conf, 'conductor1'))
        # Agents call the conductor's topic: its queue must exist first.
        self.conductor.wait_started()
        self.agents = {h: self.useFixture(ha_nodes.Agent(
            conf, h, previous=h == PREVIOUS)) for h in HOSTS}
        self.apis = {n: self.useFixture(ha_nodes.GunicornApi(
            conf, n, options=CAPPED)) for n in APIS}
        self.lb = self.useFixture(haproxy_fx.HAProxy(
            {n: api.port for n, api in self.apis.items()}))
        self.identity.register(self.lb.root + '/v2')
        for api in self.apis.values():
            api.wait_ready()
        for proc in [self.conductor] + list(self.agents.values()):
            proc.wait_started()
        self.wait_states(api1='UP', api2='UP')
        self.addOnException(self.attach_logs)
        self.addDetail('setup_seconds', testtools.content.text_content(
            '%.1f' % (time.monotonic() - started)))

    def attach_logs(self, exc_info):
        for name, proc in list(self.apis.items()) + list(
                self.agents.items()) + [('conductor', self.conductor),
                                        ('haproxy', self.lb)]:
            self.addDetail(name + '.log', testtools.content.text_content(
                proc.log_text()[-6000:]))

    # -- clients, through the load balancer ----------------------------

    def nova_client(self):
        """Nova 34's Cyborg client (``ha_identity.Identity.nova_client``)
        verifying the test's CA."""
        return self.identity.nova_client(self.lb.cafile)

    # -- waiting -------------------------------------------------------

    def wait_for(self, what, predicate, timeout=WAIT):
        return waiting.wait_for(what, predicate, timeout, interval=0.2,
                                log=self.failures)

    def failures(self):
        load = getattr(self, 'load', None)
        return 'load failures: %s' % (load and load.failures[-10:])

    def wait_states(self, **want):
        """Wait until HAProxy shows its servers in these states."""
        return self.wait_for('haproxy servers %s' % want, lambda: all(
            self.lb.states().get(n) == s for n, s in want.items()))

    def arqs(self):
        """``{uuid: ARQ dict}`` of every ARQ, read through the load
        balancer (openstacksdk's resource lacks ``attach_handle_uuid``:
        the raw list)."""
        return {a['uuid']: a for a in self.acc.get(
            '/accelerator_requests').json()['arqs']}

    def wait_progress(self, what):
        """Wait until ``PROGRESS`` binds acknowledged from now on are
        ``Bound``; returns them."""
        mark = self.load.mark()

        def bound():
            new = self.load.since(mark)
            if len(new) < PROGRESS:
                return None
            return new if all(
                self.acc.get_accelerator_request(b.arq).state == 'Bound'
                for b in new[:PROGRESS]) else None
        return self.wait_for('%d binds Bound %s' % (PROGRESS, what), bound)

    # -- the test ------------------------------------------------------

    def test_binds_survive_failures_reloads_and_an_upgrade(self):
        self.admin = self.identity.sdk('admin', self.lb.cafile)
        self.acc = self.identity.sdk('demo', self.lb.cafile)
        self.rps = providers = self.wait_for(
            'the fake deployables of %s' % (HOSTS,), self.providers)
        self.check_links()
        self.admin.create_device_profile(name=PROFILE, groups=[GROUP])
        self.check_keystone()
        self.load = self.useFixture(bind_load.BindLoad(
            PROFILE, providers, self.nova_client(), self.acc,
            self.identity.sdk_binder(self.lb.cafile),
            limit=FAKE_TOTAL * len(HOSTS)))
        self.wait_progress('at first')

        # 1. An API node dies; HAProxy takes it out, binds go on.
        killed = time.monotonic()
        self.apis['api1'].kill()
        self.wait_states(api1='DOWN', api2='UP')
        down = time.monotonic()
        self.wait_progress('with api1 dead')
        self.apis['api1'].start(options=CAPPED)
        self.wait_states(api1='UP', api2='UP')

        # 2. The conductor dies and comes back; the agents restart one by
        # one.
        self.conductor.kill()
        self.wait_progress_after_restart(self.conductor)
        for host in HOSTS:
            self.agents[host].stop()
            self.agents[host].start()
            self.wait_progress('after %s restarted' % host)

        # 3. SIGHUP to every process: they reload and go on.
        procs = list(self.apis.values()) + list(self.agents.values()) + [
            self.conductor]
        for proc in procs:
            proc.hup()
        for host, agent in list(self.agents.items()) + [
                ('conductor', self.conductor)]:
            self.wait_for('%s reloaded' % host, lambda a=agent: (
                'SIGHUP: configuration files read again' in a.log_text()))
        for name, api in self.apis.items():
            self.wait_for('%s reloaded' % name,
                          lambda a=api: 'Hang up: Master' in a.log_text())
        self.wait_progress('after SIGHUP')
        self.assertEqual([True] * len(procs), [p.running() for p in procs])
        self.wait_states(api1='UP', api2='UP')

        # 4. The upgrade ends: node3's agent, then the cap, node by node.
        old_log = self.agents[PREVIOUS].log_text()
        self.agents[PREVIOUS].upgrade()
        for name in APIS:
            self.lb.set_state(name, 'maint')
            self.apis[name].stop()
            self.apis[name].start(options={})
            self.lb.set_state(name, 'ready')
            self.wait_states(**{name: 'UP'})
        self.wait_progress('after the upgrade')

        self.load.stop()
        self.check_upgrade(old_log)
        self.check_failures(killed, down)
        self.check_every_bind()

    # -- checks --------------------------------------------------------

    def providers(self):
        """``{host: resource provider UUID}`` of the fake deployables,
        once all three hosts have theirs in Placement with inventory."""
        # Placement answers 400 to ``required`` naming a trait nobody
        # has created yet: until the first agent reports, wait.
        if not self.placement.request(
                'GET', '/traits?name=in:CUSTOM_FAKE_DEVICE')['traits']:
            return None
        reported = {rp['uuid'] for rp in self.placement.request(
            'GET', '/resource_providers?resources=FPGA:1'
            '&required=CUSTOM_FAKE_DEVICE')['resource_providers']}
        # openstacksdk's Deployable has no rp_uuid: the raw list.
        found = {d['name'].split('_', 1)[0]: d['rp_uuid']
                 for d in self.admin.get('/deployables').json()[
                     'deployables']
                 if d['rp_uuid'] in reported}
        return found if sorted(found) == sorted(HOSTS) else None

    def check_links(self):
        """Links say https through the load balancer, http directly; a
        client that does not trust the test's CA is refused (so the
        clients here verify it)."""
        headers = {'X-Auth-Token': self.identity.token('demo')}
        self.assertRaises(requests.exceptions.SSLError, requests.get,
                          self.lb.root + '/v2', headers=headers, timeout=10)
        seen = requests.get(self.lb.root + '/v2', headers=headers,
                            verify=self.lb.cafile, timeout=10).json()
        self.assertEqual([self.lb.root + '/v2/'],
                         [link['href'] for link in seen['links']])
        direct = requests.get(self.apis['api2'].root + '/v2',
                              headers=headers, timeout=10).json()
        self.assertEqual([self.apis['api2'].root + '/v2/'],
                         [link['href'] for link in direct['links']])

    def check_keystone(self):
        """The API nodes take only Keystone's tokens: none, or the token
        noauth would take, is answered 401 (naming Keystone); a bind with
        the user's token but no service token is refused (403)."""
        for headers in ({}, {'X-Auth-Token': 'admin'}):
            resp = requests.get(self.lb.root + '/v2/accelerator_requests',
                                headers=headers, verify=self.lb.cafile,
                                timeout=10)
            self.assertEqual(401, resp.status_code, resp.text)
            self.assertIn(self.identity.keystone.auth_url,
                          resp.headers['WWW-Authenticate'])
        arq = self.acc.create_accelerator_request(
            device_profile_name=PROFILE)
        error = self.assertRaises(
            os_exceptions.HttpException, self.acc.patch_accelerator_request,
            arq.uuid, [{'op': 'add', 'path': '/hostname', 'value': 'node1'},
                       {'op': 'add', 'path': '/device_rp_uuid',
                        'value': self.rps['node1']},
                       {'op': 'add', 'path': '/instance_uuid',
                        'value': arq.uuid}])
        self.assertEqual(403, error.status_code)
        self.acc.delete_accelerator_request(arq.uuid)

    def wait_progress_after_restart(self, conductor):
        """Binds are accepted while the conductor is down; once it is
        back they, and those it left, are bound."""
        mark = self.load.mark()
        self.wait_for('binds acknowledged without a conductor',
                      lambda: len(self.load.since(mark)) >= 2)
        conductor.start()
        self.wait_progress('after the conductor came back')

    def check_upgrade(self, old_log):
        """The 1.0-only agent was never sent what it cannot read; the
        conductor was told each bind's API request id."""
        self.assertNotIn('UnsupportedVersion', old_log)
        self.assertNotIn('UnsupportedVersion', self.conductor.log_text())
        self.assertIn('(API request req-', self.conductor.log_text())

    def check_failures(self, killed, down):
        """Calls failed only between the SIGKILL and HAProxy taking the
        node out (a request the dead node had taken)."""
        late = [f for f in self.load.failures
                if not killed <= f[0] <= down + 1]
        self.assertEqual([], late)
        self.addDetail('load', testtools.content.text_content(
            '%d binds, failures: %s' % (len(self.load.binds),
                                        self.load.failures)))

    def check_every_bind(self):
        """Every acknowledged bind Bound once, on its host's provider,
        one ARQ per attach handle; one event each; nothing else bound."""
        binds = {b.arq: b for b in self.load.binds}
        arqs = self.wait_for('every bind Bound', lambda: (
            lambda got: got if all(got[u]['state'] == 'Bound'
                                   for u in binds)
            else None)(self.arqs()))
        for uuid, bind in binds.items():
            arq = arqs[uuid]
            self.assertEqual(
                (bind.host, self.rps[bind.host], bind.instance),
                (arq['hostname'], arq['device_rp_uuid'],
                 arq['instance_uuid']))
        handles = [arqs[u]['attach_handle_uuid'] for u in binds]
        self.assertEqual(len(binds), len(set(handles)))
        # A create whose answer was lost leaves an Initial ARQ, no more.
        others = {u: a['state'] for u, a in arqs.items()
                  if u not in binds}
        self.assertEqual({'Initial'}, set(others.values()) | {'Initial'})
        self.assertLessEqual(len(others), len(self.load.failures))
        self.nova.wait_tags(list(binds), timeout=WAIT)
        # At least once: an event in flight when the conductor was killed
        # is sent again by the restarted one (Nova ignores the repeat).
        self.assertEqual({u: {'completed'} for u in binds},
                         {u: set(statuses) for u, statuses in
                          self.nova.events_by_tag().items()})
        self.assertEqual(set(binds), {e['tag'] for e in self.nova.sent()})
