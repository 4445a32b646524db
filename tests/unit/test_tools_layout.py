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

"""``tools/`` and ``benchmarks/`` import in one direction only: the
benchmarks may import ``tools`` (its fixtures, launchers, machine facts),
``tools`` never imports ``benchmarks``.  What both need (the servers, the
recorded sysfs trees, the accelerator API client, the machine and version
facts) lives in ``tools``: ``tools.fixtures`` is the one package the
tests, the benchmarks and the tools share.

The check reads every module's syntax tree, so a lazy import inside a
function counts as much as one at the top, and so does
``importlib.import_module`` (or ``__import__``) of a constant name.
"""

import ast
import os

import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
FORBIDDEN = 'benchmarks'


def _is_forbidden(name):
    return name == FORBIDDEN or name.startswith(FORBIDDEN + '.')


def _dynamic_target(node):
    """The constant module name of ``importlib.import_module('x')`` or
    ``__import__('x')``, else None."""
    func = node.func
    called = (func.attr if isinstance(func, ast.Attribute) else
              func.id if isinstance(func, ast.Name) else None)
    if called not in ('import_module', '__import__') or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def benchmark_imports(source, filename='<source>'):
    """Where a ``tools`` module's source imports ``benchmarks``.

    :param source: the module's text (str).
    :param filename: for the syntax error's message (str).
    :returns: ``[(line, dotted name)]`` in source order (``from pkg import
        name`` gives ``pkg.name``): every ``import``
        and ``from ... import`` statement wherever it is (module level,
        function, class, ``try``), and every ``importlib.import_module``
        or ``__import__`` call with a constant name, that names
        ``benchmarks`` or a module under it.  Relative imports stay
        inside ``tools`` and are left out.
    :raises SyntaxError: ``source`` is not Python.
    """
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = ['%s.%s' % (node.module, alias.name)
                     for alias in node.names]
        elif isinstance(node, ast.Call):
            target = _dynamic_target(node)
            names = [target] if target else []
        found.extend((node.lineno, n) for n in names if _is_forbidden(n))
    return sorted(found)


def tools_modules():
    """Every Python file under ``tools/`` (paths relative to the
    repository), sorted."""
    out = []
    for dirpath, dirnames, files in os.walk(os.path.join(ROOT, 'tools')):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        out.extend(os.path.relpath(os.path.join(dirpath, name), ROOT)
                   for name in files if name.endswith('.py'))
    return sorted(out)


class TestToolsNeverImportBenchmarks(testtools.TestCase):

    def test_no_tools_module_imports_benchmarks(self):
        offenders = []
        for rel in tools_modules():
            with open(os.path.join(ROOT, rel)) as f:
                source = f.read()
            offenders.extend('%s:%d imports %s' % (rel, line, name)
                             for line, name in benchmark_imports(source,
                                                                 rel))
        self.assertEqual([], offenders,
                         'tools/ must not import benchmarks/: move what '
                         'both need into tools/ (tools.fixtures is the '
                         'package tests, benchmarks and tools share)')

    def test_scan_covers_tools(self):
        # The scan must see the modules that used to import benchmarks,
        # and the fixtures they now share with it.
        mods = tools_modules()
        for rel in ('tools/compare_cyborg.py', 'tools/compare_cyborg_doc.py',
                    'tools/machine.py', 'tools/fixtures/accel_client.py',
                    'tools/fixtures/sysfs.py'):
            self.assertIn(rel, mods)

    def test_scan_finds_every_form(self):
        source = '\n'.join([
            'import os',
            'from benchmarks import common',
            'import benchmarks.run as bench_run',
            'import benchmarks',
            'def f():',
            '    from benchmarks.upstream import start_cyborg',
            '    return start_cyborg',
            'class C:',
            '    try:',
            '        import benchmarks.stats',
            '    except ImportError:',
            '        pass',
            'def g():',
            '    import importlib',
            '    return importlib.import_module("benchmarks.sched")',
            'h = __import__("benchmarks")',
        ])
        self.assertEqual(
            [(2, 'benchmarks.common'), (3, 'benchmarks.run'),
             (4, 'benchmarks'), (6, 'benchmarks.upstream.start_cyborg'),
             (10, 'benchmarks.stats'),
             (15, 'benchmarks.sched'), (16, 'benchmarks')],
            benchmark_imports(source))

    def test_scan_leaves_other_imports(self):
        source = '\n'.join([
            'from tools import fixtures',
            'from tools.fixtures import accel_client',
            'import benchmarkset',
            'from benchmarks_old import x',
            'from . import benchmarks',
            'from .benchmarks import run',
            'import importlib',
            'importlib.import_module(name)',
            'text = "from benchmarks import run"',
        ])
        self.assertEqual([], benchmark_imports(source))

    def test_scan_finds_the_old_compare_cyborg_imports(self):
        # tools/compare_cyborg.py before the shared pieces moved to
        # tools.fixtures and tools.machine.
        source = '\n'.join([
            'from accel_common import arq_states',
            'from benchmarks import common',
            'from benchmarks import run as bench_run',
            'from benchmarks import upstream',
            'from tools import compare_cyborg_cases as cases',
        ])
        self.assertEqual(
            [(2, 'benchmarks.common'), (3, 'benchmarks.run'),
             (4, 'benchmarks.upstream')],
            benchmark_imports(source))
