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

"""The ARQ state table (``accel_common.arq_states``): every pair of states,
the writers of accel_backend going through it, and no second copy of the
state names anywhere else."""

import ast
import itertools
import os

import testtools

from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_common import arq_states
from nova_accel import cyborg_client

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))

# Written out independently of the module: Cyborg's seven state names
# (openstack-cyborg 17.0.0, cyborg/common/constants.py) and the transitions
# accel_backend makes, with the status of the accelerator-request-bound
# event each sends Nova.
CYBORG_STATES = {'Initial', 'BindStarted', 'Bound', 'Unbound', 'BindFailed',
                 'UnbindFailed', 'Deleting'}
EXPECTED = {
    ('Initial', 'BindStarted'): None,
    ('Unbound', 'BindStarted'): None,
    ('BindStarted', 'Bound'): 'completed',
    ('BindStarted', 'BindFailed'): 'failed',
    ('Bound', 'BindFailed'): 'failed',
    ('BindStarted', 'Unbound'): None,
    ('Bound', 'Unbound'): None,
    ('BindFailed', 'Unbound'): None,
}


class TestTable(testtools.TestCase):

    def test_states_are_cyborgs(self):
        self.assertEqual(CYBORG_STATES, set(arq_states.STATES))
        self.assertEqual(len(arq_states.STATES), len(CYBORG_STATES))

    def test_every_pair(self):
        pairs = list(itertools.product(arq_states.STATES, repeat=2))
        self.assertEqual(49, len(pairs))
        for source, target in pairs:
            if (source, target) in EXPECTED:
                self.assertEqual(EXPECTED[(source, target)],
                                 arq_states.check(source, target),
                                 '%s -> %s' % (source, target))
            else:
                err = self.assertRaises(arq_states.InvalidTransition,
                                        arq_states.check, source, target)
                self.assertEqual((source, target), (err.source, err.target))
                self.assertIn('%s cannot change to %s' % (source, target),
                              str(err))

    def test_unknown_states_refused(self):
        self.assertRaises(arq_states.InvalidTransition, arq_states.check,
                          'Bound', 'Bogus')
        self.assertRaises(arq_states.InvalidTransition, arq_states.check,
                          'Bogus', 'Bound')

    def test_derived_sets(self):
        self.assertEqual({'Initial', 'Unbound'},
                         set(arq_states.BINDABLE_STATES))
        self.assertEqual({'BindStarted', 'Bound', 'BindFailed'},
                         set(arq_states.UNBINDABLE_STATES))
        self.assertEqual({'UnbindFailed', 'Deleting'},
                         set(arq_states.NEVER_ENTERED))
        self.assertEqual({'Bound', 'BindFailed', 'Deleting'},
                         set(arq_states.RESOLVED_STATES))
        self.assertEqual('accelerator-request-bound', arq_states.EVENT_NAME)

    def test_path_from_initial(self):
        # What import-cyborg walks a new ARQ along.
        self.assertEqual([], arq_states.path('Initial'))
        self.assertEqual(['BindStarted', 'Bound'], arq_states.path('Bound'))
        self.assertEqual(['BindStarted', 'BindFailed'],
                         arq_states.path('BindFailed'))
        self.assertEqual(['BindStarted', 'Unbound'],
                         arq_states.path('Unbound'))
        for state in arq_states.NEVER_ENTERED:
            self.assertRaises(arq_states.InvalidTransition, arq_states.path,
                              state)
        for state in arq_states.STATES:
            if state in arq_states.NEVER_ENTERED:
                continue
            steps = ['Initial'] + arq_states.path(state)
            for source, target in zip(steps, steps[1:]):
                arq_states.check(source, target)

    def test_nova_side_uses_the_table(self):
        self.assertEqual(set(arq_states.RESOLVED_STATES),
                         set(cyborg_client.RESOLVED_STATES))


class TestTransitionWriter(testtools.TestCase):
    """``objects.arq.transition``, which every writer of ``state`` calls."""

    def test_every_pair(self):
        for source, target in itertools.product(arq_states.STATES,
                                                repeat=2):
            arq = models.ARQ(uuid='a', state=source, pending_event='stale')
            if (source, target) in EXPECTED:
                event = arq_obj.transition(arq, target)
                self.assertEqual(EXPECTED[(source, target)], event)
                self.assertEqual((target, event),
                                 (arq.state, arq.pending_event))
            else:
                self.assertRaises(arq_states.InvalidTransition,
                                  arq_obj.transition, arq, target)
                self.assertEqual((source, 'stale'),
                                 (arq.state, arq.pending_event),
                                 'refused %s -> %s changed the ARQ' % (
                                     source, target))


def _string_constants(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


class TestOneSource(testtools.TestCase):
    """No module but the table spells a state name or the event name: not
    the product, nor the benchmarks and tools that drive it (a renamed or
    added state must reach them too).  Tests spell the wire values on
    purpose and are not scanned."""

    PACKAGES = ('accel_backend', 'nova_accel', 'nova_accel_tempest_plugin',
                'benchmarks', 'tools')

    def test_no_copies(self):
        names = CYBORG_STATES | {'accelerator-request-bound'}
        copies = []
        for package in self.PACKAGES:
            for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
                for name in files:
                    if not name.endswith('.py'):
                        continue
                    path = os.path.join(dirpath, name)
                    copies.extend(
                        '%s:%d %r' % (os.path.relpath(path, ROOT), line, v)
                        for line, v in _string_constants(path)
                        if v in names)
        self.assertEqual([], copies)
