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

"""accel_backend is laid out by role, and its imports keep to the roles.

The rooms (the contributor guide's "Where things live"):

``accel_backend.api``
    the WSGI application, its middleware, route table, handlers, schemas,
    policies and microversions: what ``accel-backend-api`` runs;
``accel_backend.conductor``
    binding, events to Nova, the audits and the agents' database work it
    serves: what ``accel-backend-conductor`` runs;
``accel_backend.agent``
    discovery, cleaning and the Placement report of one compute node:
    what ``accel-backend-agent`` runs, without database credentials;
``accel_backend.db``, ``accel_backend.objects``
    rows and their transactions;
``accel_backend.common``
    the device model the agent reports and the conductor stores (pools,
    AER verdicts, HGX boards, provider records), pure rules only.

Each role talks to another through that role's RPC client module
(``conductor.rpcapi``, ``agent.rpcapi``), as Nova's services do through
``nova/conductor/rpcapi.py`` and ``nova/compute/rpcapi.py``.  The rules
below read imports from the syntax trees (``test_import_graph``); each
crossing that the layout still has is listed in ``KNOWN`` with what it
takes, and a listed crossing that is gone fails too, so the list shrinks
with the code.
"""

import ast
import os

import testtools

from tests.unit import test_import_graph as graph

PKG = 'accel_backend'

#: role -> (roles it must not import, modules of them it may import).
RULES = {
    'api': (('agent',), ('accel_backend.agent.rpcapi',)),
    'agent': (('db', 'objects', 'conductor', 'api'),
              ('accel_backend.conductor.rpcapi',)),
    'db': (('api', 'conductor', 'agent', 'objects'), ()),
    'objects': (('api', 'conductor', 'agent'), ()),
    'common': (('api', 'conductor', 'agent', 'db', 'objects'), ()),
    'conductor': (('api', 'agent'), ('accel_backend.agent.rpcapi',)),
}

#: Crossings of ``RULES`` the code still has: ``(importer, imported)``.
KNOWN_CROSSINGS = set()

#: Imports of our own modules inside functions:
#: ``(module, imported module)``.
KNOWN_LAZY = set()

#: Most levels of the package graph of accel_backend (a package and the
#: packages it imports, down to one that imports none of ours).
MAX_LEVELS = 7


def _role(module):
    parts = module.split('.')
    if parts[0] != PKG or len(parts) < 2:
        return None
    return parts[1]


def crossings(modules=None):
    """``{(importer, imported)}`` breaking ``RULES``.

    :param modules: ``{module: {modules it imports}}``; the code's own
        graph (``test_import_graph.module_graph``) when None.
    """
    if modules is None:
        modules, _ = graph.module_graph()
    found = set()
    for module, targets in modules.items():
        rule = RULES.get(_role(module))
        if not rule:
            continue
        banned, allowed = rule
        for target in targets:
            if _role(target) in banned and target not in allowed:
                found.add((module, target))
    return found


def lazy_imports():
    """``{(module, imported)}``: imports of our modules in a function."""
    found = set()
    for module, path in graph._modules().items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    names = ['%s.%s' % (node.module, a.name)
                             for a in node.names]
                else:
                    continue
                for name in names:
                    if name.split('.')[0] in graph.TOPS:
                        found.add((module, name))
    return found


def levels():
    """``(levels, chain)``: the longest chain of the package graph of
    accel_backend, a package's imports of its own subpackages and of its
    parents left out (containment, not layering)."""
    pkgs = graph.package_graph()
    edges = {a: {b for b in bs if b.startswith(PKG) and
                 not b.startswith(a + '.') and not a.startswith(b + '.')}
             for a, bs in pkgs.items() if a.startswith(PKG)}
    memo = {}

    def chain(node, seen):
        if node in memo:
            return memo[node]
        if node in seen:
            raise AssertionError('package cycle: %s' % ' -> '.join(
                seen[seen.index(node):] + (node,)))
        best = max((chain(n, seen + (node,)) for n in edges.get(node, ())),
                   key=len, default=())
        memo[node] = (node,) + best
        return memo[node]

    longest = max((chain(n, ()) for n in edges), key=len)
    return len(longest), longest


def module_cycles():
    """Strongly connected sets of modules (more than one) of the three
    top packages."""
    modules, _ = graph.module_graph()
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in modules.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return out


class TestRoleLayout(testtools.TestCase):

    def test_roles_exist(self):
        for role in ('api', 'conductor', 'agent', 'db', 'objects',
                     'common'):
            self.assertTrue(os.path.isfile(os.path.join(
                graph.ROOT, PKG, role, '__init__.py')), role)

    def test_no_new_crossing_of_roles(self):
        self.assertEqual([], sorted(crossings() - KNOWN_CROSSINGS))

    def test_known_crossings_still_exist(self):
        self.assertEqual([], sorted(KNOWN_CROSSINGS - crossings()))

    def test_no_new_import_inside_a_function(self):
        self.assertEqual([], sorted(lazy_imports() - KNOWN_LAZY))

    def test_known_lazy_imports_still_exist(self):
        self.assertEqual([], sorted(KNOWN_LAZY - lazy_imports()))

    def test_no_module_cycle(self):
        self.assertEqual([], module_cycles())

    def test_at_most_seven_levels(self):
        count, chain = levels()
        self.assertLessEqual(count, MAX_LEVELS, ' -> '.join(chain))

    def test_rules_catch_a_crossing(self):
        # The rules read the edges they are given: an API handler reaching
        # into discovery, or an agent module into the database, is
        # reported; the RPC client modules are not.
        found = crossings({
            'accel_backend.api.handlers.arq': {
                'accel_backend.agent.discovery.sysfs',
                'accel_backend.agent.rpcapi'},
            'accel_backend.agent.placement.report': {
                'accel_backend.db.api', 'accel_backend.conductor.rpcapi'},
        })
        self.assertEqual({
            ('accel_backend.api.handlers.arq',
             'accel_backend.agent.discovery.sysfs'),
            ('accel_backend.agent.placement.report',
             'accel_backend.db.api')}, found)
