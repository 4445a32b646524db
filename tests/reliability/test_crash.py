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

"""Crash safety: SIGKILL ``accel-backend`` mid-work, restart, nothing lost.

Real processes: Placement (gunicorn, SQLite), ``accel-backend`` (SQLite)
over a generated sysfs tree of 64 GPUs, and a Nova stub in this process.

* Kill while binding: 72 ARQs are bound with one PATCH each (64 to a GPU
  each, 8 to a provider that does not exist); Nova answers events slowly.
  With ``[binding] mode = agents`` (the binder's threads bind after the
  PATCH's commit, as an agent does) at the kill some ARQs are Bound with
  their event pending and most are still BindStarted; with ``mode =
  local`` (each PATCH binds in its own transaction) every ARQ is resolved
  and most events are pending.  After the restart every ARQ is Bound or
  BindFailed as it should be, no device is bound twice, every event is
  delivered and Placement still matches the database.
* Kill while reporting: the first report of the 64 GPUs goes through a
  slow proxy and the process is killed half way (some providers created
  without inventory or traits).  After the restart every provider has its
  inventory and traits.
* Kill while cleaning: ``test_crash_cleaning``.

The measured figures (time to recover, counts) go to the test details
and, with ``ACCEL_RELIABILITY_RESULTS=<file>``, to a JSON file
(RELIABILITY.md quotes them).
"""

import json
import os
import time
import uuid

import fixtures
import testtools
from testtools import content

from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.waiting import wait_for
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import rabbitmq

GPUS = 64
BAD = 8
FINAL = ('Bound', 'BindFailed')


def record_result(name, values):
    """Add ``values`` (dict) under ``name`` to the results file, if any."""
    path = os.environ.get('ACCEL_RELIABILITY_RESULTS')
    if not path:
        return
    data = {}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    data[name] = values
    with open(path, 'w') as f:
        json.dump(data, f, indent=1, sort_keys=True)


class CrashTestBase(testtools.TestCase):

    #: GPUs in the generated sysfs tree.
    gpus = GPUS

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(placement_fx.PlacementServer())
        self.nova = self.useFixture(nova_stub.NovaStub(
            every_server_exists=True))
        self.compute_rp = self.placement.create_provider(rel_fixtures.HOST)
        self.sysfs = self.useFixture(fixtures.TempDir()).path
        self.addresses = rel_fixtures.write_many_gpus(self.sysfs,
                                                      self.gpus)
        self.figures = {}
        self.addOnException(self._attach_logs)

    def _attach_logs(self, exc_info):
        accel = getattr(self, 'accel', None)
        if accel is not None:
            self.addDetail('accel-backend.log',
                           content.text_content(accel.all_logs()[-200000:]))

    def start_accel(self, placement_endpoint=None, **options):
        self.accel = self.useFixture(rel_fixtures.AccelProcess(
            placement_endpoint or self.placement.endpoint,
            self.nova.endpoint, self.sysfs, [rel_fixtures.MANY_GPUS_SPEC],
            options=options))
        return self.accel

    def placement_view(self):
        return rel_fixtures.placement_children(self.placement,
                                               self.compute_rp)

    def complete_providers(self):
        """UUIDs of the children that have their inventory and traits
        (one Placement query, cheap enough to poll)."""
        try:
            rps = self.placement.request(
                'GET', '/resource_providers?in_tree=%s&resources=PGPU:1'
                '&required=OWNER_CYBORG,CUSTOM_A100' % self.compute_rp,
                microversion='1.18')['resource_providers']
        except AssertionError as e:
            if 'No such trait' in str(e):   # not reported yet
                return set()
            raise
        return {rp['uuid'] for rp in rps}

    def reported_with_a_profile(self, accel):
        """Wait until the ``gpus`` GPUs are stored and reported to
        Placement, then create the device profile ``a100`` (one
        ``PGPU``); returns the deployables (list of dicts)."""
        deps = accel.wait_for_devices(self.gpus, timeout=60)
        wait_for('first report', lambda: len(self.complete_providers()) ==
                 self.gpus, 60, interval=0.5, log=accel.log_text)
        accel.request('POST', '/v2/device_profiles', [
            {'name': 'a100', 'groups': [{'resources:PGPU': '1'}]}],
            expect=(201,))
        return deps

    def assert_placement_matches_db(self):
        deps = self.accel.request('GET', '/v2/deployables')['deployables']
        self.assertEqual(self.gpus, len(deps))
        view = self.placement_view()
        self.assertEqual(sorted(d['rp_uuid'] for d in deps), sorted(view))
        for dep in deps:
            name, inv, traits = view[dep['rp_uuid']]
            self.assertEqual(dep['name'], name)
            self.assertEqual(
                {'total': 1, 'reserved': 0, 'min_unit': 1, 'max_unit': 1,
                 'step_size': 1, 'allocation_ratio': 1.0},
                inv['PGPU'])
            self.assertLessEqual({'OWNER_CYBORG', 'CUSTOM_A100'}, traits)


@reliability.slow
class TestKillWhileBinding(CrashTestBase):

    def test_kill_while_binding_in_binder_threads(self):
        # The process serves its own host as an agent: BindStarted is
        # committed by the PATCH, the binder's threads bind after it.
        rabbit = self.useFixture(rabbitmq.RabbitMQServer())
        accel = self.start_accel(binding={'workers': 4, 'mode': 'agents'},
                                 DEFAULT={'transport_url': rabbit.url})
        at_kill = self.kill_while_binding(accel, 'kill_while_binding')
        self.assertGreater(at_kill.get('BindStarted', 0), 0, at_kill)

    def test_kill_while_delivering_events(self):
        # Embedded default: each PATCH binds in its own transaction, so
        # at the kill every ARQ is resolved and events are pending.
        accel = self.start_accel(binding={'workers': 4})
        at_kill = self.kill_while_binding(accel, 'kill_while_delivering')
        self.assertEqual(0, at_kill.get('BindStarted', 0), at_kill)
        self.assertGreater(self.figures['pending_events_at_kill'], 0)

    def kill_while_binding(self, accel, name):
        """Bind, kill, restart, check; :returns: the ARQ states at the
        kill (``{state: count}``)."""
        arqs, wanted = self._bind_all_slowly(accel)

        def states():
            with accel.db() as conn:
                return dict(conn.execute(
                    'SELECT state, COUNT(*) FROM accelerator_requests '
                    'GROUP BY state').fetchall())
        wait_for('some bindings done', lambda: states().get('Bound', 0) +
                 states().get('BindFailed', 0) >= 4, 30, log=accel.log_text)
        accel.kill()
        at_kill = states()
        pending_at_kill = len(accel.pending_events())
        accepted_at_kill = len(self.nova.received())

        self.nova.delay = 0.0
        t0 = time.monotonic()
        accel.start()

        def recovered():
            st = states()
            return (st.get('Bound', 0) == GPUS and
                    st.get('BindFailed', 0) == BAD and
                    not accel.pending_events() and
                    len(self.nova.events_by_tag()) == len(arqs))
        wait_for('recovery', recovered, 60, log=accel.all_logs)
        recovery = time.monotonic() - t0

        events = self._check_recovered(accel, arqs, wanted)
        duplicates = sum(len(v) - 1 for v in events.values())
        self.figures = {
            'arqs': len(arqs), 'states_at_kill': at_kill,
            'pending_events_at_kill': pending_at_kill,
            'events_accepted_before_kill': accepted_at_kill,
            'recovery_s': round(recovery, 2),
            'events_delivered': sum(len(v) for v in events.values()),
            'duplicate_events': duplicates}
        self.addDetail('figures', content.json_content(self.figures))
        record_result(name, self.figures)
        return at_kill

    def _bind_all_slowly(self, accel):
        """Create ``GPUS + BAD`` ARQs and PATCH each to bind, the last
        ``BAD`` to providers that do not exist, with Nova answering each
        event request after a second.

        :returns: ``(arqs, wanted)``: the ARQ UUIDs in order, and
            ``{arq: (rp uuid, instance uuid)}``.
        """
        deps = self.reported_with_a_profile(accel)
        arqs = [accel.request('POST', '/v2/accelerator_requests',
                              {'device_profile_name': 'a100'},
                              expect=(201,))['arqs'][0]['uuid']
                for _ in range(GPUS + BAD)]
        # Each ARQ to its own GPU; the last BAD to a provider that does
        # not exist (they must end BindFailed with a "failed" event).
        wanted = {}
        for i, arq in enumerate(arqs):
            rp = deps[i]['rp_uuid'] if i < GPUS else str(uuid.uuid4())
            wanted[arq] = (rp, str(uuid.uuid4()))
        # Nova takes a second per event request: binding tasks (bind,
        # then deliver) queue up behind the 4 workers, events behind
        # the delivery threads.
        self.nova.delay = 1.0
        for arq, (rp, instance) in wanted.items():
            accel.request('PATCH', '/v2/accelerator_requests', {arq: [
                {'op': 'add', 'path': '/hostname',
                 'value': rel_fixtures.HOST},
                {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
                {'op': 'add', 'path': '/instance_uuid', 'value': instance},
            ]}, expect=(202,))
        return arqs, wanted

    def _check_recovered(self, accel, arqs, wanted):
        """After the restart: each ARQ bound as asked (``Bound`` with its
        own handle and a ``completed`` event, or ``BindFailed`` with a
        ``failed`` one), the database consistent and Placement matching.

        :returns: Nova's events by tag (``{arq: [status, ...]}``).
        """
        views = {a['uuid']: a for a in accel.request(
            'GET', '/v2/accelerator_requests')['arqs']}
        events = self.nova.events_by_tag()
        handles = []
        for arq, (rp, instance) in wanted.items():
            view = views[arq]
            self.assertEqual((rp, instance), (view['device_rp_uuid'],
                                              view['instance_uuid']))
            if arq in arqs[:GPUS]:
                self.assertEqual('Bound', view['state'])
                handles.append(view['attach_handle_uuid'])
                self.assertEqual({'completed'}, set(events[arq]))
            else:
                self.assertEqual('BindFailed', view['state'])
                self.assertIsNone(view['attach_handle_uuid'])
                self.assertEqual({'failed'}, set(events[arq]))
        self.assertEqual(GPUS, len(set(handles)))
        self.assertEqual([], accel.consistency_problems())
        self.assert_placement_matches_db()
        return events


@reliability.slow
class TestKillWhileReporting(CrashTestBase):

    def test_kill_during_first_report(self):
        proxy = self.useFixture(rel_fixtures.FaultProxy(
            self.placement.endpoint))
        # About 5 Placement calls per device: slow enough to kill half
        # way through the 64.
        proxy.delay = 0.03
        accel = self.start_accel(placement_endpoint=proxy.endpoint)

        def halfway():
            rps = self.placement.request(
                'GET', '/resource_providers?in_tree=%s' % self.compute_rp
            )['resource_providers']
            return 8 <= len(rps) - 1 < GPUS - 8 and rps
        at_kill = wait_for('report half done', halfway, 60, interval=0.02,
                           log=accel.log_text)
        accel.kill()
        after_kill = self.placement_view()
        half_written = sum(1 for _, inv, traits in after_kill.values()
                           if not inv or 'OWNER_CYBORG' not in traits)
        proxy.delay = 0.0
        t0 = time.monotonic()
        api_up = accel.start()
        wait_for('report complete', lambda: len(
            self.complete_providers()) == GPUS, 60, interval=0.2,
            log=accel.all_logs)
        recovery = time.monotonic() - t0
        self.assertEqual(GPUS, len(self.placement_view()))
        self.assert_placement_matches_db()
        self.assertEqual([], accel.consistency_problems())
        self.figures = {'providers_at_kill': len(after_kill),
                        'seen_before_kill': len(at_kill) - 1,
                        'half_written_at_kill': half_written,
                        'recovery_s': round(recovery, 2),
                        'api_up_after_restart_s': round(api_up, 2),
                        'report_done_after_restart_s': round(
                            proxy.log[-1][3] - t0, 2),
                        'placement_requests': len(proxy.log)}
        self.addDetail('figures', content.json_content(self.figures))
        record_result('kill_while_reporting', self.figures)
