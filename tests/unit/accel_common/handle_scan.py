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

"""A scan of Python source for writes of attach handle states (and
reads of ``in_use``) outside the modules that may make them, for
``test_handle_states``."""

import ast
import os
import re

from accel_common import handle_states as hs

#: Production packages scanned (alembic migrations are the schema's
#: history and are left out).
PACKAGES = ('accel_backend', 'accel_common', 'nova_accel')
SKIP = (os.path.join('accel_backend', 'db', 'migrations'),)
#: The writers of a handle's state (the table and its helpers).
WRITERS = {os.path.join('accel_common', 'handle_states.py'),
           os.path.join('accel_backend', 'objects', 'device.py')}
#: The only claimer of handles.
CLAIMERS = {os.path.join('accel_common', 'handle_states.py'),
            os.path.join('accel_backend', 'conductor', 'claim.py')}
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
            self.found.append((node.lineno, 'claims outside conductor.claim'))
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
