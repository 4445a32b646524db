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

"""Crash safety while cleaning (``test_crash``'s processes and base): 8
GPUs released at once, 4 being cleaned by a slow command and 4 waiting,
and ``accel-backend`` killed.  While the process is dead Placement offers
none of them; after the restart each is cleaned from the start and offered
again.
"""

import os
import time
import uuid

import fixtures
from testtools import content

from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability.test_crash import CrashTestBase
from tests.reliability.test_crash import record_result
from tests.waiting import wait_for

CLEANING_SCRIPT = '''#!/bin/sh
# A slow cleaning step: logs start/done per PCI address, sleeps the
# seconds in $DELAY_FILE, and gives up when its accel-backend is gone
# (SIGKILL does not take the children along).
echo "start $1" >> "%(log)s"
end=$(( $(date +%%s) + $(cat "%(delay)s") ))
while [ "$(date +%%s)" -lt "$end" ]; do
    kill -0 "$PPID" 2>/dev/null || exit 1
    sleep 0.1
done
echo "done $1" >> "%(log)s"
'''


@reliability.slow
class TestKillWhileCleaning(CrashTestBase):

    gpus = 8

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.clean_log = os.path.join(tmp, 'cleaning.log')
        self.delay_file = os.path.join(tmp, 'delay')
        script = os.path.join(tmp, 'clean.sh')
        with open(script, 'w') as f:
            f.write(CLEANING_SCRIPT % {'log': self.clean_log,
                                       'delay': self.delay_file})
        os.chmod(script, 0o755)
        open(self.clean_log, 'w').close()
        self.set_delay(60)
        self.script = script

    def set_delay(self, seconds):
        with open(self.delay_file, 'w') as f:
            f.write('%d\n' % seconds)

    def cleaning_log(self):
        with open(self.clean_log) as f:
            return [line.split() for line in f if line.strip()]

    def handle_states(self):
        """``{rp_uuid: handle state}``."""
        with self.accel.db() as conn:
            return dict(conn.execute(
                'SELECT d.rp_uuid, h.state FROM attach_handles h JOIN '
                'deployables d ON h.deployable_id = d.id').fetchall())

    def reserved(self):
        """``{rp_uuid: reserved PGPU}`` in Placement."""
        return {rp: inv['PGPU']['reserved']
                for rp, (_, inv, _) in self.placement_view().items()}

    def test_kill_while_cleaning(self):
        accel = self.start_accel(cleaning={
            'methods': 'nvidia_gpu:command,generic_pci:command',
            'command': self.script + ' {address}',
            'poll_interval': 1})
        deps = self.reported_with_a_profile(accel)
        arqs = []
        for dep in deps:
            arq = accel.request('POST', '/v2/accelerator_requests',
                                {'device_profile_name': 'a100'},
                                expect=(201,))['arqs'][0]['uuid']
            accel.request('PATCH', '/v2/accelerator_requests', {arq: [
                {'op': 'add', 'path': '/hostname',
                 'value': rel_fixtures.HOST},
                {'op': 'add', 'path': '/device_rp_uuid',
                 'value': dep['rp_uuid']},
                {'op': 'add', 'path': '/instance_uuid',
                 'value': str(uuid.uuid4())}]}, expect=(202,))
            arqs.append(arq)
        wait_for('all bound', lambda: set(self.handle_states().values()) ==
                 {'bound'} and len(self.nova.events_by_tag()) ==
                 len(arqs), 30, log=accel.log_text)
        # The tenants leave: every device needs cleaning; 4 cleaner
        # workers start on 4 of them (60 s each), 4 wait their turn.
        accel.request('DELETE', '/v2/accelerator_requests?arqs=' +
                      ','.join(arqs), expect=(204,))
        wait_for('cleaning under way', lambda: len(
            self.cleaning_log()) >= 4, 30, log=accel.log_text)
        accel.kill()
        states_at_kill = self.handle_states()
        reserved_at_kill = self.reserved()
        counts = {}
        for state in states_at_kill.values():
            counts[state] = counts.get(state, 0) + 1
        self.assertEqual({'cleaning': 4, 'dirty': self.gpus - 4}, counts)
        # While nobody cleans them, Placement offers none of them.
        self.assertEqual({dep['rp_uuid']: 1 for dep in deps},
                         reserved_at_kill)

        self.set_delay(0)
        started_before = len(self.cleaning_log())
        t0 = time.monotonic()
        accel.start()
        wait_for('all clean', lambda: set(self.handle_states().values()) ==
                 {'available'}, 60, log=accel.all_logs)
        wait_for('Placement reserved released', lambda: set(
            self.reserved().values()) == {0}, 30, log=accel.all_logs)
        recovery = time.monotonic() - t0
        log = self.cleaning_log()
        # Nothing finished before the kill; after the restart every
        # device was cleaned from the start: interrupted ones again.
        self.assertEqual([], [e for e in log[:started_before]
                              if e[0] == 'done'])
        done = [addr for what, addr in log[started_before:]
                if what == 'done']
        self.assertEqual(sorted(self.addresses), sorted(done))
        self.assertEqual([], accel.consistency_problems())
        self.assert_placement_matches_db()
        self.figures = {'devices': self.gpus, 'states_at_kill': counts,
                        'reserved_at_kill': sum(reserved_at_kill.values()),
                        'cleanings_after_restart': len(done),
                        'recovery_s': round(recovery, 2)}
        self.addDetail('figures', content.json_content(self.figures))
        record_result('kill_while_cleaning', self.figures)
