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

"""Sizes: no module of the project is longer than ``MAX_MODULE_LINES``
lines and no function (or method) longer than ``MAX_FUNCTION_LINES``,
from its ``def`` (decorators not counted) to its last line, docstring and
comments included.  A longer one is split by responsibility: classes into
modules of their own, steps of a function into named helpers.
"""

import ast
import os

import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TOPS = ('accel_backend', 'accel_common', 'nova_accel', 'tools', 'benchmarks',
        'tests')
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80

#: Modules over the limits on purpose: none.  Do not add to it; split.
ALLOWED = ()


def oversized(source, path='<module>'):
    """What in ``source`` (Python text) is over the limits.

    :param path: the module's path, for the messages.
    :returns: ``['<path>: <n> lines', '<path>:<line> <function>: <n>
        lines', ...]``; empty when all fits.
    """
    found = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append('%s: %d lines' % (path, lines))
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append('%s:%d %s: %d lines' % (
                    path, node.lineno, node.name, length))
    return found


def modules():
    """Relative paths of every Python module under ``TOPS``."""
    for top in TOPS:
        for dirpath, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != '__pycache__')
            for name in sorted(files):
                if name.endswith('.py'):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


class SizesTest(testtools.TestCase):

    def test_every_module_and_function_fits(self):
        found = []
        for path in modules():
            if path in ALLOWED:
                continue
            with open(os.path.join(ROOT, path)) as f:
                found += oversized(f.read(), path)
        self.assertEqual([], found)

    def test_allowed_modules_exist(self):
        # An entry left after its module moved would hide nothing.
        self.assertEqual(
            [], [p for p in ALLOWED if not os.path.exists(
                os.path.join(ROOT, p))])

    def test_long_module_is_found(self):
        source = 'X = 1\n' * (MAX_MODULE_LINES + 1)
        self.assertEqual(['m.py: %d lines' % (MAX_MODULE_LINES + 1)],
                         oversized(source, 'm.py'))
        self.assertEqual([], oversized('X = 1\n' * MAX_MODULE_LINES))

    def test_long_function_is_found(self):
        def function(name, body_lines, indent=''):
            return ''.join(
                ['%sdef %s():\n' % (indent, name)] +
                ['%s    x = %d\n' % (indent, i) for i in range(body_lines)])

        source = (function('fits', MAX_FUNCTION_LINES - 1) +
                  'class C:\n' +
                  function('method', MAX_FUNCTION_LINES, indent='    ') +
                  '    @staticmethod\n' +
                  function('edge', MAX_FUNCTION_LINES - 1, indent='    '))
        self.assertEqual(
            ['m.py:%d method: %d lines' % (MAX_FUNCTION_LINES + 2,
                                           MAX_FUNCTION_LINES + 1)],
            oversized(source, 'm.py'))
