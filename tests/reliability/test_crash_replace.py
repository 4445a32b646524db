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

"""SIGKILL of accel-backend while failed devices are replaced under
their servers (issue 53): the accelerator side of
``nova_accel.hotplug.replace``.

Real processes: Placement (gunicorn, SQLite), RabbitMQ and
``accel-backend`` serving its own host as an agent (``[binding] mode =
agents``: the binder's threads bind after the PATCH's commit), over a
generated sysfs tree of 16 GPUs, and a Nova stub in this process that
answers each event request after a second.

8 servers hold a GPU each; their GPUs are tainted ``NoExecute`` (as a
health fault or a drain does); then, as nova-compute's replacement does
for each ARQ, one PATCH unbinds it (its handle is quarantined) and
another binds it to a free GPU.  The process is killed while those
PATCHes are sent and bound: some ARQs are unbound and not yet bound
again (``Unbound``), some ``BindStarted``, some ``Bound``.  After the
restart the compute side's next look does what the replacement's
rebind step does (bind again an ARQ that is neither ``Bound`` nor
binding on its new device).  Checked: every ARQ ends ``Bound`` on its
new GPU with a handle of its own and a ``completed`` event for the
rebind, every failed GPU's handle stays ``quarantined`` and reserved in
Placement (never offered again as it is), and the database invariants
hold.
"""

import threading
import time
import uuid

import requests
from testtools import content

from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability import test_crash
from tests.waiting import wait_for
from tools.fixtures import rabbitmq

GPUS = 16
SERVERS = 8
TAINTS = {'OpenStack-API-Version': 'accelerator 2.5'}


def _patch_bind(accel, arq, rp, instance):
    accel.request('PATCH', '/v2/accelerator_requests', {arq: [
        {'op': 'add', 'path': '/hostname', 'value': rel_fixtures.HOST},
        {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
        {'op': 'add', 'path': '/instance_uuid', 'value': instance}]},
        expect=(202,))


def _patch_unbind(accel, arq):
    accel.request('PATCH', '/v2/accelerator_requests/%s' % arq, {arq: [
        {'op': 'remove', 'path': p} for p in (
            '/hostname', '/device_rp_uuid', '/instance_uuid')]},
        expect=(202,))


@reliability.slow
class TestKillWhileReplacing(test_crash.CrashTestBase):

    gpus = GPUS

    def test_kill_while_rebinding_replacements(self):
        rabbit = self.useFixture(rabbitmq.RabbitMQServer())
        accel = self.start_accel(binding={'workers': 4, 'mode': 'agents'},
                                 DEFAULT={'transport_url': rabbit.url})
        deps = self.reported_with_a_profile(accel)
        old, new = deps[:SERVERS], deps[SERVERS:2 * SERVERS]
        servers = self._servers_on(accel, old)
        # The servers' GPUs fail.
        for dep in old:
            accel.request('POST', '/v2/deployables/%s/taints' % dep['uuid'],
                          {'key': 'failed', 'effect': 'NoExecute',
                           'reason': 'fell off the bus'},
                          expect=(201,), headers=TAINTS)
        wanted = {arq: dep['rp_uuid'] for arq, dep in zip(servers, new)}
        sent, at_kill = self._replace_and_kill(accel, wanted, servers)

        self.nova.delay = 0.0
        t0 = time.monotonic()
        accel.start()
        retried = self._next_look(accel, wanted, servers)

        def recovered():
            views = accel.request('GET', '/v2/accelerator_requests')['arqs']
            return (all(v['state'] == 'Bound' and
                        v['device_rp_uuid'] == wanted[v['uuid']]
                        for v in views) and not accel.pending_events())
        wait_for('recovery', recovered, 60, log=accel.all_logs)
        recovery = time.monotonic() - t0

        self._check_replaced(accel, wanted, servers, old)
        self.figures = {'servers': SERVERS, 'states_at_kill': at_kill,
                        'replacements_sent_before_kill': sent,
                        'rebinds_retried': retried,
                        'recovery_s': round(recovery, 2)}
        self.addDetail('figures', content.json_content(self.figures))
        test_crash.record_result('kill_while_replacing', self.figures)

    def _servers_on(self, accel, deps):
        """One Bound ARQ per deployable of ``deps``, each for a server of
        its own; returns ``{arq: instance}``."""
        servers = {}
        for dep in deps:
            arq = accel.request('POST', '/v2/accelerator_requests',
                                {'device_profile_name': 'a100'},
                                expect=(201,))['arqs'][0]['uuid']
            servers[arq] = str(uuid.uuid4())
            _patch_bind(accel, arq, dep['rp_uuid'], servers[arq])
        wait_for('first binds', lambda: self.states(accel) == {
            'Bound': len(deps)} and not accel.pending_events(), 60,
            log=accel.log_text)
        return servers

    def _replace_and_kill(self, accel, wanted, servers):
        """Replace each ARQ's device (unbind, bind to ``wanted``) as
        nova-compute does, one after the other, with Nova answering
        events after a second; kill the process under it.

        :returns: ``(replacements sent before the kill, {state: count}
            at the kill)``.
        """
        self.nova.delay = 1.0
        sent = []

        def replace_all():
            try:
                for arq, rp in wanted.items():
                    _patch_unbind(accel, arq)
                    _patch_bind(accel, arq, rp, servers[arq])
                    sent.append(arq)
            except (requests.ConnectionError, AssertionError):
                return      # killed under it
        thread = threading.Thread(target=replace_all)
        thread.start()
        wait_for('some replacements under way', lambda: len(sent) >= 3,
                 60, interval=0.05, log=accel.log_text)
        accel.kill()
        thread.join(60)
        return len(sent), self.states(accel)

    @staticmethod
    def _next_look(accel, wanted, servers):
        """The compute side's next look, as the replacement's rebind
        step does it: bind again each ARQ that is neither Bound nor
        binding on its new device; returns how many."""
        retried = 0
        for arq, rp in wanted.items():
            view = accel.request('GET', '/v2/accelerator_requests/%s' % arq)
            if (view['device_rp_uuid'] == rp and
                    view['state'] in ('Bound', 'BindStarted')):
                continue
            if view['state'] not in ('Initial', 'Unbound'):
                _patch_unbind(accel, arq)
            _patch_bind(accel, arq, rp, servers[arq])
            retried += 1
        return retried

    def _check_replaced(self, accel, wanted, servers, old):
        """Each ARQ Bound on its new GPU with a handle of its own and a
        rebind event; the failed GPUs quarantined and reserved."""
        views = {a['uuid']: a for a in accel.request(
            'GET', '/v2/accelerator_requests')['arqs']}
        self.assertEqual(len(wanted), len({v['attach_handle_uuid']
                                           for v in views.values()}))
        events = self.nova.events_by_tag()
        for arq in wanted:
            self.assertEqual(servers[arq], views[arq]['instance_uuid'])
            # The first bind's event, and the rebind's.
            self.assertGreaterEqual(events[arq].count('completed'), 2,
                                    events[arq])
        self.assertEqual([], accel.consistency_problems())
        with accel.db() as conn:
            states = conn.execute(
                'SELECT h.state FROM attach_handles h JOIN deployables d '
                'ON h.deployable_id = d.id WHERE d.rp_uuid IN (%s)' % (
                    ','.join('?' * len(old))),
                [d['rp_uuid'] for d in old]).fetchall()
        self.assertEqual(['quarantined'] * len(old), [s for s, in states])
        view = self.placement_view()
        self.assertEqual([1] * len(old), [
            view[d['rp_uuid']][1]['PGPU']['reserved'] for d in old])

    @staticmethod
    def states(accel):
        """``{ARQ state: count}``, read from the database (an ARQ
        unbound and not yet bound again is ``Unbound``)."""
        with accel.db() as conn:
            return dict(conn.execute(
                'SELECT state, COUNT(*) FROM accelerator_requests '
                'GROUP BY state').fetchall())
