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

"""The attach handle state table (``accel_common.handle_states``): every
transition and trigger, the writer every module goes through, ``in_use``
never disagreeing with the state, and a scan of the code for any other
writer."""

import itertools
import os
import textwrap

import hypothesis
from hypothesis import strategies as st
import testtools

from accel_backend.db import models
from accel_backend.objects import device as device_obj
from accel_common import handle_states as hs
from tests.unit.accel_common import handle_scan

scan = handle_scan.scan

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))

# Written out independently of the module: the transitions of the
# lifecycle between tenants and what makes each.
STATES = ('available', 'bound', 'dirty', 'cleaning', 'clean_failed',
          'quarantined')
NOT_BOUND = ('available', 'dirty', 'cleaning', 'clean_failed',
             'quarantined')
EXPECTED = {(None, 'available', 'discover')}
EXPECTED |= {('available', 'bound', t) for t in ('claim', 'import')}
EXPECTED |= {(s, 'bound', 'reclaim') for s in NOT_BOUND}
EXPECTED |= {(s, t, 'release') for s in STATES
             for t in ('dirty', 'available')}
EXPECTED |= {('dirty', 'cleaning', 'start_cleaning'),
             ('cleaning', 'cleaning', 'start_cleaning'),
             ('cleaning', 'available', 'cleaned'),
             ('cleaning', 'clean_failed', 'cleaning_failed'),
             ('cleaning', 'clean_failed', 'cleaning_hung'),
             ('clean_failed', 'dirty', 'retry'),
             ('quarantined', 'dirty', 'lift')}
# A failed device's handle, released under a NoExecute taint.
EXPECTED |= {(s, 'quarantined', 'quarantine') for s in STATES
             if s != 'quarantined'}
TRIGGERS = ('discover', 'claim', 'import', 'reclaim', 'release',
            'start_cleaning', 'cleaned', 'cleaning_failed', 'cleaning_hung',
            'retry', 'quarantine', 'lift')


class TestTable(testtools.TestCase):

    def test_names(self):
        self.assertEqual(STATES, hs.STATES)
        self.assertEqual(TRIGGERS, hs.TRIGGERS)
        self.assertEqual(('bound',), hs.IN_USE_STATES)
        self.assertEqual(('available',), hs.CLAIMABLE_STATES)
        self.assertEqual(('dirty', 'cleaning'), hs.TO_CLEAN_STATES)
        self.assertEqual({'dirty', 'cleaning', 'clean_failed',
                          'quarantined'}, set(hs.OUT_OF_SERVICE_STATES))

    def test_every_transition_and_trigger(self):
        cases = list(itertools.product((None,) + STATES, STATES, TRIGGERS))
        self.assertEqual(7 * 6 * 12, len(cases))
        for source, target, trigger in cases:
            if (source, target, trigger) in EXPECTED:
                hs.check(source, target, trigger)
                continue
            err = self.assertRaises(hs.InvalidHandleTransition, hs.check,
                                    source, target, trigger)
            self.assertEqual((source, target, trigger),
                             (err.source, err.target, err.trigger))
            self.assertIn('cannot change to %s on %s' % (target, trigger),
                          str(err))

    def test_message_lists_what_is_allowed(self):
        err = self.assertRaises(hs.InvalidHandleTransition, hs.check,
                                'dirty', 'bound', 'claim')
        self.assertEqual(
            'attach handle state dirty cannot change to bound on claim '
            '(allowed from dirty: cleaning on start_cleaning, bound on '
            'reclaim, dirty on release, available on release, quarantined '
            'on quarantine)',
            str(err))

    def test_sources(self):
        for target, trigger in itertools.product(STATES, TRIGGERS):
            want = tuple(s for s in STATES
                         if (s, target, trigger) in EXPECTED)
            if want:
                self.assertEqual(want, hs.sources(target, trigger))
            else:
                self.assertRaises(hs.InvalidHandleTransition, hs.sources,
                                  target, trigger)

    def test_columns(self):
        for state in STATES:
            self.assertEqual({'state': state, 'in_use': state == 'bound',
                              'state_reason': 'why'},
                             hs.columns(state, 'why'))
        self.assertRaises(hs.InvalidHandleTransition, hs.columns, 'bogus')


class TestWriter(testtools.TestCase):
    """``objects.device.transition``/``update_values``/``new_handle``, the
    writers every module calls."""

    def test_every_transition(self):
        for source, target, trigger in itertools.product(STATES, STATES,
                                                         TRIGGERS):
            handle = models.AttachHandle(state=source,
                                         in_use=source == 'bound',
                                         state_reason='old')
            if (source, target, trigger) in EXPECTED:
                device_obj.transition(handle, target, trigger, 'new')
                self.assertEqual((target, target == 'bound', 'new'),
                                 (handle.state, handle.in_use,
                                  handle.state_reason))
            else:
                self.assertRaises(hs.InvalidHandleTransition,
                                  device_obj.transition, handle, target,
                                  trigger)
                self.assertEqual((source, source == 'bound', 'old'),
                                 (handle.state, handle.in_use,
                                  handle.state_reason))

    def test_update_values(self):
        for target, trigger in itertools.product(STATES, TRIGGERS):
            if any((s, target, trigger) in EXPECTED for s in STATES):
                values = device_obj.update_values(target, trigger, 'r')
                self.assertEqual(target == 'bound', values['in_use'])
                self.assertEqual((target, 'r'), (values['state'],
                                                 values['state_reason']))
            else:
                self.assertRaises(hs.InvalidHandleTransition,
                                  device_obj.update_values, target, trigger)

    def test_new_handle_is_available(self):
        handle = device_obj.new_handle(uuid='u', attach_type='PCI',
                                       attach_info={})
        self.assertEqual(('available', False, None),
                         (handle.state, handle.in_use, handle.state_reason))

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(st.lists(st.tuples(st.sampled_from(STATES),
                                         st.sampled_from(TRIGGERS)),
                               max_size=30))
    def test_in_use_never_disagrees(self, steps):
        """Whatever the writers are asked, in any order, ``in_use`` is
        true exactly in the in-use states."""
        handle = device_obj.new_handle(uuid='u', attach_type='PCI',
                                       attach_info={})
        for target, trigger in steps:
            try:
                device_obj.transition(handle, target, trigger)
            except hs.InvalidHandleTransition:
                pass
            self.assertEqual(handle.state in hs.IN_USE_STATES,
                             handle.in_use)
            self.assertEqual(handle.in_use, device_obj.handle_in_use(handle))


# -- the scan (``handle_scan``) -------------------------------------------

class TestScanner(testtools.TestCase):
    """The scan finds planted writes (and leaves other states alone)."""

    PLANTED = [
        'handle.in_use = False',
        'h.state = handle_states.DIRTY',
        'stale.state, stale.state_reason = handle_states.CLEANING, None',
        'handle.state = target',
        'x.state = "clean_failed"',
        'from accel_common.handle_states import BOUND\nx.state = BOUND',
        'sa.update(models.AttachHandle).where(c).values(state=s)',
        'sa.update(models.AttachHandle).values({"state": s})',
        'stmt.values(in_use=True)',
        'sa.update(_HANDLES).values(in_use=True, '
        'state=handle_states.BOUND)',
        'models.AttachHandle(uuid=u, in_use=False, state="available")',
        'AttachHandle(state=s)',
        'setattr(handle, "in_use", True)',
        'handle_states.CLAIM',
        'ok = [h for h in hs if not h.in_use]',
        'session.execute("UPDATE attach_handles SET state = \'dirty\'")',
    ]

    BENIGN = [
        'arq.state = arq_states.BOUND',
        'self._scope.state = self._LOADED',
        'row.state, row.reason, row.code = state, reason, code',
        'sa.update(models.ARQ).where(models.ARQ.attach_handle_id == i)'
        '.values(state=arq_states.UNBOUND)',
        'sa.update(models.AttachHandle).where(models.AttachHandle.id == -1)'
        '.values(in_use=models.AttachHandle.in_use)',
        'device_obj.transition(handle, hs.DIRTY, hs.RELEASE)',
        'self._in_use = {}',
    ]

    def _source(self, snippet):
        return textwrap.dedent('''
            from accel_backend.objects import device as device_obj
            from accel_common import handle_states
        ''') + snippet + '\n'

    def test_planted_writes_found(self):
        for snippet in self.PLANTED:
            self.assertNotEqual([], scan(self._source(snippet)), snippet)

    def test_other_states_left_alone(self):
        for snippet in self.BENIGN:
            self.assertEqual([], scan(self._source(snippet)), snippet)

    def test_writers_may_write_and_claim_may_claim(self):
        write = self._source('handle.state = handle_states.DIRTY')
        self.assertEqual([], scan(write, os.path.join(
            'accel_backend', 'objects', 'device.py')))
        self.assertNotEqual([], scan(write, os.path.join(
            'accel_backend', 'conductor', 'claim.py')))
        claim = self._source('device_obj.update_values(handle_states.BOUND, '
                             'handle_states.CLAIM)')
        self.assertEqual([], scan(claim, os.path.join(
            'accel_backend', 'conductor', 'claim.py')))
        self.assertNotEqual([], scan(claim, os.path.join(
            'accel_backend', 'conductor', 'audit.py')))


class TestOneWriter(testtools.TestCase):
    """No module but the table and ``objects.device`` writes (or reads)
    a handle's ``state``/``in_use``, and none but ``conductor.claim``
    claims."""

    def test_no_other_writer(self):
        found = []
        for package in handle_scan.PACKAGES:
            for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
                rel_dir = os.path.relpath(dirpath, ROOT)
                if rel_dir.startswith(handle_scan.SKIP):
                    continue
                for name in sorted(files):
                    if not name.endswith('.py'):
                        continue
                    rel = os.path.join(rel_dir, name)
                    with open(os.path.join(ROOT, rel)) as f:
                        found.extend('%s:%d %s' % (rel, line, what)
                                     for line, what in scan(f.read(), rel))
        self.assertEqual([], found)
