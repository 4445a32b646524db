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

import ast
import itertools
import os
import re
import textwrap

import hypothesis
from hypothesis import strategies as st
import testtools

from accel_backend.db import models
from accel_backend.objects import device as device_obj
from accel_common import handle_states as hs

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))

# Written out independently of the module: the transitions of the
# lifecycle between tenants and what makes each.
STATES = ('available', 'bound', 'dirty', 'cleaning', 'clean_failed')
NOT_BOUND = ('available', 'dirty', 'cleaning', 'clean_failed')
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
             ('clean_failed', 'dirty', 'retry')}
TRIGGERS = ('discover', 'claim', 'import', 'reclaim', 'release',
            'start_cleaning', 'cleaned', 'cleaning_failed', 'cleaning_hung',
            'retry')


class TestTable(testtools.TestCase):

    def test_names(self):
        self.assertEqual(STATES, hs.STATES)
        self.assertEqual(TRIGGERS, hs.TRIGGERS)
        self.assertEqual(('bound',), hs.IN_USE_STATES)
        self.assertEqual(('available',), hs.CLAIMABLE_STATES)
        self.assertEqual(('dirty', 'cleaning'), hs.TO_CLEAN_STATES)
        self.assertEqual({'dirty', 'cleaning', 'clean_failed'},
                         set(hs.OUT_OF_SERVICE_STATES))
        self.assertEqual(hs.OUT_OF_SERVICE_STATES, device_obj.OUT_OF_SERVICE)

    def test_every_transition_and_trigger(self):
        cases = list(itertools.product((None,) + STATES, STATES, TRIGGERS))
        self.assertEqual(6 * 5 * 10, len(cases))
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
            'reclaim, dirty on release, available on release)',
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


# -- the scan -------------------------------------------------------------

#: Production packages scanned (alembic migrations are the schema's
#: history and are left out).
PACKAGES = ('accel_backend', 'accel_common', 'nova_accel')
SKIP = (os.path.join('accel_backend', 'db', 'migrations'),)
#: The writers of a handle's state (the table and its helpers).
WRITERS = {os.path.join('accel_common', 'handle_states.py'),
           os.path.join('accel_backend', 'objects', 'device.py')}
#: The only claimer of handles.
CLAIMERS = {os.path.join('accel_common', 'handle_states.py'),
            os.path.join('accel_backend', 'binding', 'claim.py')}
STATE_MODULES = {'accel_common.handle_states',
                 'accel_backend.objects.device'}
STATE_NAMES = {'AVAILABLE', 'BOUND', 'DIRTY', 'CLEANING', 'CLEAN_FAILED'}
RAW_SQL = re.compile(r'(?i)\b(update\s+attach_handles|insert\s+into\s+'
                     r'attach_handles)\b')


def _aliases(tree):
    """Local names bound to the state modules, and names imported from
    them: ``({alias}, {name})``."""
    modules, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in STATE_MODULES and a.asname:
                    modules.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if '%s.%s' % (node.module, a.name) in STATE_MODULES:
                    modules.add(a.asname or a.name)
                elif node.module in STATE_MODULES:
                    names.add(a.asname or a.name)
    return modules, names


class _Scanner(ast.NodeVisitor):
    """Collects ``(line, what)`` of attach handle state writes."""

    def __init__(self, tree, writer, claimer):
        self.modules, self.names = _aliases(tree)
        self.writer, self.claimer = writer, claimer
        self.found = []

    def _state_value(self, node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and sub.value in hs.STATES:
                return True
            if isinstance(sub, ast.Attribute) and \
                    sub.attr in STATE_NAMES and \
                    isinstance(sub.value, ast.Name) and \
                    sub.value.id in self.modules:
                return True
            if isinstance(sub, ast.Name) and sub.id in self.names and \
                    sub.id in STATE_NAMES:
                return True
        return False

    @staticmethod
    def _handle_ref(node):
        return any('handle' in (getattr(sub, 'id', '') or
                                getattr(sub, 'attr', '') or '').lower()
                   for sub in ast.walk(node))

    @staticmethod
    def _noop(field, value):
        # ``values(in_use=AttachHandle.in_use)``: a write of nothing
        # (``db.api.write_lock`` takes SQLite's lock with it).
        return isinstance(value, ast.Attribute) and value.attr == field

    def _write(self, node, field, owner, value):
        if self.writer or self._noop(field, value):
            return
        if field == 'in_use' or field == 'state' and (
                (owner is not None and self._handle_ref(owner)) or
                self._state_value(value)):
            self.found.append((node.lineno, 'writes %s' % field))

    def _assign(self, node, targets, value):
        for target in targets:
            if isinstance(target, ast.Tuple):
                values = value.elts if isinstance(value, ast.Tuple) and \
                    len(value.elts) == len(target.elts) else \
                    [value] * len(target.elts)
                self._assign(node, target.elts, None)
                for t, v in zip(target.elts, values):
                    if isinstance(t, ast.Attribute):
                        self._write(node, t.attr, t.value, v)
            elif isinstance(target, ast.Attribute) and value is not None:
                self._write(node, target.attr, target.value, value)

    def visit_Assign(self, node):
        self._assign(node, node.targets, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._assign(node, [node.target], node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self._assign(node, [node.target], node.value)
        self.generic_visit(node)

    def _sql_target(self, chain):
        """The table of the ``update()``/``insert()`` a ``values()``
        call continues, or None."""
        for sub in ast.walk(chain):
            if isinstance(sub, ast.Call) and sub.args and getattr(
                    sub.func, 'attr', getattr(sub.func, 'id', None)) in (
                        'update', 'insert'):
                return sub.args[0]
        return None

    def visit_Call(self, node):
        func = node.func
        name = getattr(func, 'attr', getattr(func, 'id', None))
        pairs = [(k.arg, k.value) for k in node.keywords if k.arg]
        if name == 'values' and isinstance(func, ast.Attribute):
            owner = self._sql_target(func.value)
            for arg in node.args:
                if isinstance(arg, ast.Dict):
                    pairs.extend((k.value, v) for k, v in
                                 zip(arg.keys, arg.values)
                                 if isinstance(k, ast.Constant))
            for field, value in pairs:
                if field in ('state', 'in_use'):
                    self._write(node, field, owner, value)
        elif name == 'AttachHandle':
            for field, value in pairs:
                if field in ('state', 'in_use') and not self.writer:
                    self.found.append((node.lineno, 'AttachHandle(%s=)' %
                                       field))
        elif name == 'setattr' and len(node.args) == 3 and isinstance(
                node.args[1], ast.Constant):
            self._write(node, node.args[1].value, node.args[0],
                        node.args[2])
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr == 'CLAIM' and isinstance(node.value, ast.Name) and \
                node.value.id in self.modules and not self.claimer:
            self.found.append((node.lineno, 'claims outside binding.claim'))
        if node.attr == 'in_use' and isinstance(node.ctx, ast.Load) and \
                not self.writer:
            self.found.append((node.lineno, 'reads in_use'))
        self.generic_visit(node)

    def visit_keyword(self, node):
        # ``values(in_use=AttachHandle.in_use)`` reads nothing either.
        if not (node.arg == 'in_use' and self._noop('in_use', node.value)):
            self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and RAW_SQL.search(node.value):
            self.found.append((node.lineno, 'SQL on attach_handles'))


def scan(source, relpath='snippet.py'):
    """``[(line, what)]`` of the handle state writes in ``source`` (str)
    that ``relpath`` may not make."""
    tree = ast.parse(source, relpath)
    scanner = _Scanner(tree, relpath in WRITERS, relpath in CLAIMERS)
    scanner.visit(tree)
    return scanner.found


class TestScanner(testtools.TestCase):
    """The scan finds planted writes (and leaves other states alone)."""

    PLANTED = [
        'handle.in_use = False',
        'h.state = device_obj.DIRTY',
        'stale.state, stale.state_reason = device_obj.CLEANING, None',
        'handle.state = target',
        'x.state = "clean_failed"',
        'from accel_common.handle_states import BOUND\nx.state = BOUND',
        'sa.update(models.AttachHandle).where(c).values(state=s)',
        'sa.update(models.AttachHandle).values({"state": s})',
        'stmt.values(in_use=True)',
        'sa.update(_HANDLES).values(in_use=True, state=device_obj.BOUND)',
        'models.AttachHandle(uuid=u, in_use=False, state="available")',
        'AttachHandle(state=s)',
        'setattr(handle, "in_use", True)',
        'handle_states.CLAIM',
        'ok = [h for h in hs if not h.in_use]',
        'session.execute("UPDATE attach_handles SET state = \'dirty\'")',
    ]

    BENIGN = [
        'arq.state = arq_obj.BOUND',
        'self._scope.state = self._LOADED',
        'row.state, row.reason, row.code = state, reason, code',
        'sa.update(models.ARQ).where(models.ARQ.attach_handle_id == i)'
        '.values(state=arq_obj.UNBOUND)',
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
        write = self._source('handle.state = device_obj.DIRTY')
        self.assertEqual([], scan(write, os.path.join(
            'accel_backend', 'objects', 'device.py')))
        self.assertNotEqual([], scan(write, os.path.join(
            'accel_backend', 'binding', 'claim.py')))
        claim = self._source('device_obj.update_values(handle_states.BOUND, '
                             'handle_states.CLAIM)')
        self.assertEqual([], scan(claim, os.path.join(
            'accel_backend', 'binding', 'claim.py')))
        self.assertNotEqual([], scan(claim, os.path.join(
            'accel_backend', 'audit.py')))


class TestOneWriter(testtools.TestCase):
    """No module but the table and ``objects.device`` writes (or reads)
    a handle's ``state``/``in_use``, and none but ``binding.claim``
    claims."""

    def test_no_other_writer(self):
        found = []
        for package in PACKAGES:
            for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
                rel_dir = os.path.relpath(dirpath, ROOT)
                if rel_dir.startswith(SKIP):
                    continue
                for name in sorted(files):
                    if not name.endswith('.py'):
                        continue
                    rel = os.path.join(rel_dir, name)
                    with open(os.path.join(ROOT, rel)) as f:
                        found.extend('%s:%d %s' % (rel, line, what)
                                     for line, what in scan(f.read(), rel))
        self.assertEqual([], found)
