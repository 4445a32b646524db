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

"""The unit tier starts no processes: no test module under ``tests/unit``
uses the standard library's process APIs or the project's own process
starters.  Tests that need a child process, a console script or a real
server belong to ``tests/functional``.

The check reads the source (``ast``), so it sees what a module asks for
directly: a process started deep inside code under test (the ``command``
cleaning method, say) is the test writer's to notice.  Servers on threads
of this process (wsgi-intercept, ``http.server`` in a thread) are not
processes and stay allowed.
"""

import ast
import os

import testtools

UNIT = os.path.dirname(os.path.abspath(__file__))

#: Modules whose import is a process API (stdlib and pexpect).
PROCESS_MODULES = ('subprocess', 'multiprocessing', 'pty', 'pexpect',
                   'concurrent.futures.process')
#: The project's modules that start processes (``tools.fixtures``' servers
#: and ``tools.launch``'s command lines).
PROJECT_STARTERS = ('tools.fixtures.process', 'tools.fixtures.accel_backend',
                    'tools.fixtures.cyborg', 'tools.fixtures.databases',
                    'tools.fixtures.haproxy',
                    'tools.fixtures.placement', 'tools.fixtures.rabbitmq',
                    'tools.launch', 'tools.nested.node')
#: ``os`` functions that start or replace a process, and the prefixes of
#: their families (``execv``, ``spawnlp``, ``posix_spawnp``...).
OS_FUNCTIONS = ('fork', 'forkpty', 'system', 'popen')
OS_PREFIXES = ('spawn', 'exec', 'posix_spawn')
#: Names that start processes wherever they come from.
NAMES = ('ProcessPoolExecutor', 'NovaStubProcess', 'create_subprocess_exec',
         'create_subprocess_shell')


def _banned_module(name):
    return any(name == m or name.startswith(m + '.')
               for m in PROCESS_MODULES + PROJECT_STARTERS)


def _os_function(name):
    return name in OS_FUNCTIONS or name.startswith(OS_PREFIXES)


def violations(source, filename='<test>'):
    """What starts a process in ``source`` (Python text).

    :returns: ``['<line>: <what>', ...]``, in line order; empty when the
        module starts none.
    """
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, 'import %s' % a.name)
                      for a in node.names if _banned_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                full = '%s.%s' % (node.module, a.name)
                if (_banned_module(node.module) or _banned_module(full) or
                        node.module == 'os' and _os_function(a.name) or
                        a.name in NAMES):
                    found.append((node.lineno, 'from %s import %s' % (
                        node.module, a.name)))
        elif isinstance(node, ast.Attribute):
            base = node.value
            if (isinstance(base, ast.Name) and base.id == 'os' and
                    _os_function(node.attr) or node.attr in NAMES):
                found.append((node.lineno, '.%s' % node.attr))
        elif isinstance(node, ast.Name) and node.id in NAMES:
            found.append((node.lineno, node.id))
    return ['%d: %s' % f for f in sorted(set(found))]


class UnitTierTest(testtools.TestCase):

    def test_no_unit_test_module_starts_a_process(self):
        bad = {}
        for dirpath, dirs, files in os.walk(UNIT):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(dirpath, name)
                    with open(path) as f:
                        found = violations(f.read(), path)
                    if found:
                        bad[os.path.relpath(path, UNIT)] = found
        self.assertEqual({}, bad, 'move these tests to tests/functional')

    def test_each_process_api_is_found(self):
        planted = '\n'.join([
            'import subprocess',
            'import multiprocessing.pool',
            'from concurrent.futures import ProcessPoolExecutor',
            'from os import fork',
            'from tools.fixtures import databases',
            'import tools.launch.gunicorn',
            'os.system("true")',
            'os.execv("/bin/true", [])',
            'os.posix_spawnp("true", ["true"], {})',
            'pid = os.fork()',
            'nova_stub.NovaStubProcess()',
            'asyncio.create_subprocess_exec("true")',
        ])
        self.assertEqual(
            ['1: import subprocess', '2: import multiprocessing.pool',
             '3: from concurrent.futures import ProcessPoolExecutor',
             '4: from os import fork', '5: from tools.fixtures import '
             'databases', '6: import tools.launch.gunicorn', '7: .system',
             '8: .execv', '9: .posix_spawnp', '10: .fork',
             '11: .NovaStubProcess', '12: .create_subprocess_exec'],
            violations(planted))

    def test_threads_and_other_os_calls_are_allowed(self):
        allowed = '\n'.join([
            'import os', 'import threading', 'import http.server',
            'from tools.fixtures import nova_stub',
            'from wsgi_intercept import interceptor',
            'os.getpid()', 'os.path.join("a", "b")', 'os.kill',
            'nova_stub.NovaStub()', 'execute = os.environ',
            'from concurrent.futures import ThreadPoolExecutor',
        ])
        self.assertEqual([], violations(allowed))
