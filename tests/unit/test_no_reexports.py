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

"""No module of nova_accel or accel_backend gives a name of accel_common
a second name: a top-level ``X = <accel_common module>.Y`` (issue 52 found
24 such, ``BOUND = arq_states.BOUND`` and the like).  Users import the
name from its home in accel_common.
"""

import ast
import os

import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PACKAGES = ('accel_backend', 'accel_common', 'nova_accel')

#: ``(path from the repository root, name)`` still re-exported, with why.
ALLOWED = {
    ('accel_backend/agent/placement/client.py', name):
        'accel_backend.agent.placement is being reworked in '
        'parallel; its users '
        '(placement/report.py) move to placement_errors with it'
    for name in ('INVENTORY_INUSE', 'CONCURRENT_UPDATE', 'error_code')}


def reexports(source, filename='<snippet>'):
    """``[(line, name, text)]``: the top-level assignments of ``source``
    that bind a name to an attribute of an accel_common module."""
    tree = ast.parse(source, filename)
    common = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and \
                node.module == 'accel_common':
            common.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            common.update(a.asname for a in node.names
                          if a.asname and a.name.startswith('accel_common.'))
    found = []
    for node in tree.body:
        if (isinstance(node, ast.Assign) and
                isinstance(node.value, ast.Attribute) and
                isinstance(node.value.value, ast.Name) and
                node.value.value.id in common):
            found.extend((node.lineno, target.id, ast.unparse(node))
                         for target in node.targets
                         if isinstance(target, ast.Name))
    return found


def scan(root=ROOT):
    """``{(path, name): line}`` of every re-export under ``root``."""
    found = {}
    for package in PACKAGES:
        for dirpath, _, files in os.walk(os.path.join(root, package)):
            for name in sorted(files):
                if not name.endswith('.py'):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, '/')
                with open(path, encoding='utf-8') as f:
                    for line, bound, _text in reexports(f.read(), path):
                        found[(rel, bound)] = line
    return found


class ReexportTest(testtools.TestCase):

    def test_planted(self):
        source = '\n'.join((
            'from accel_common import arq_states',
            'import accel_common.handle_states as hs',
            'from accel_backend import utils',
            'BOUND = arq_states.BOUND',
            'DIRTY = hs.DIRTY',
            'OTHER = utils.OTHER',
            'STATES = (arq_states.BOUND,)',
            'def f():',
            '    local = arq_states.BOUND',
        ))
        self.assertEqual([(4, 'BOUND'), (5, 'DIRTY')],
                         [(line, name) for line, name, _ in
                          reexports(source)])

    def test_none_in_our_packages(self):
        self.assertEqual([], sorted(
            '%s:%d %s' % (path, line, name)
            for (path, name), line in scan().items()
            if (path, name) not in ALLOWED))

    def test_every_allowed_entry_is_still_needed(self):
        found = scan()
        self.assertEqual([], sorted(k for k in ALLOWED if k not in found))
