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

"""The import graph of nova_accel, accel_backend and accel_common: no two
packages import each other, no module and a package outside it
import each other, and each half stays out of the other and of
accel_common's way.

Between packages, a package's own modules and its subpackages are one
unit of code: a subpackage importing its parent's ``exception`` module
while the parent's service module imports the subpackage is containment,
not two layers pointing at each other, so pairs on one line of descent
are left out there.  Between a module and a package they are not: a
module of the parent that imports the subpackage must not be imported
back by it (``accel_backend.notifications`` importing
``accel_backend.agent.rpc`` while ``accel_backend.conductor.binder``
imports ``accel_backend.notifications`` was such a cycle).
"""

import ast
import collections
import os

import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TOPS = ('nova_accel', 'accel_backend', 'accel_common')


def _modules():
    mods = {}
    for top in TOPS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(dirpath, name)
                    parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
                    if parts[-1] == '__init__':
                        parts = parts[:-1]
                    mods['.'.join(parts)] = path
    return mods


def _imported(module, path):
    """Dotted names ``module`` imports (every ``import`` statement, lazy
    ones in functions included).  ``from pkg import name`` gives
    ``pkg.name``: the module ``pkg.name`` when there is one, else (a name
    defined in ``pkg``) ``pkg`` once resolved."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    package = module if path.endswith('__init__.py') else \
        module.rpartition('.')[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')[:len(package.split('.')) -
                                          node.level + 1]
                target = '.'.join(base + ([node.module] if node.module
                                          else []))
            else:
                target = node.module
            for alias in node.names:
                yield '%s.%s' % (target, alias.name)


def module_graph():
    """``{module: {modules it imports}}`` over the three top packages (a
    package stands for its ``__init__``), and the set of packages."""
    mods = _modules()
    packages = {m for m, p in mods.items() if p.endswith('__init__.py')}

    def resolve(name):
        while name and name not in mods:
            name = name.rpartition('.')[0]
        return name

    graph = collections.defaultdict(set)
    for module, path in mods.items():
        for name in _imported(module, path):
            target = resolve(name)
            if target and target != module:
                graph[module].add(target)
    return graph, packages


def package_graph():
    """``{package: {packages it imports}}`` over the three top packages."""
    modules, packages = module_graph()

    def package_of(module):
        return module if module in packages else module.rpartition('.')[0]

    graph = collections.defaultdict(set)
    for module, targets in modules.items():
        for target in targets:
            a, b = package_of(module), package_of(target)
            if a != b:
                graph[a].add(b)
    return graph


def _within(module, package):
    return module == package or module.startswith(package + '.')


def _nested(a, b):
    return a.startswith(b + '.') or b.startswith(a + '.')


class TestImportGraph(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.graph = package_graph()

    def test_no_two_packages_import_each_other(self):
        mutual = sorted({tuple(sorted((a, b)))
                         for a, targets in self.graph.items()
                         for b in targets
                         if a in self.graph.get(b, ()) and
                         not _nested(a, b)})
        self.assertEqual([], mutual)

    def test_no_module_and_package_import_each_other(self):
        modules, packages = module_graph()
        cycles = []
        for module, targets in sorted(modules.items()):
            for package in sorted(packages):
                if _within(module, package):
                    continue
                into = sorted(t for t in targets if _within(t, package))
                back = sorted(m for m, imported in modules.items()
                              if _within(m, package) and module in imported)
                if into and back:
                    cycles.append('%s -> %s -> %s' % (
                        module, ', '.join(into), ', '.join(back)))
        self.assertEqual([], cycles)

    def test_hotplug_below_the_drivers(self):
        self.assertIn('nova_accel.hotplug', self.graph['nova_accel.virt'])
        self.assertEqual(
            [], sorted(p for p in self.graph['nova_accel.hotplug']
                       if p.startswith('nova_accel.virt')))

    def test_halves_apart(self):
        for package, targets in self.graph.items():
            top = package.split('.')[0]
            for target in targets:
                other = target.split('.')[0]
                if top == 'accel_common':
                    self.assertEqual('accel_common', other, package)
                elif other != 'accel_common':
                    self.assertEqual(top, other, '%s imports %s' % (
                        package, target))
