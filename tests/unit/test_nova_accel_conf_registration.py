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

"""nova_accel registers its options in ``nova_accel/conf`` alone, as Nova
registers Nova's in ``nova/conf``, and every module that reads a
``[nova_accel]`` option imports ``nova_accel.conf`` (read from the source,
no import: ``tests/functional/test_nova_accel_conf_imports.py`` imports
each such module in a fresh interpreter)."""

import ast
import os
import textwrap

import fixtures
import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
#: Calls that register options or groups.  ``register_cli_opt(s)`` is
#: left out: a command registers its sub-commands in its ``main``, as
#: ``nova-manage`` does (Nova 34, ``nova/cmd/manage.py``).
REGISTERING = frozenset(('register_opt', 'register_opts', 'register_group'))


def _sources(root):
    """``(module path relative to root, AST)`` of each .py file under
    ``root/nova_accel``."""
    top = os.path.join(root, 'nova_accel')
    for dirpath, _, files in sorted(os.walk(top)):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(dirpath, name)
                with open(path) as f:
                    yield os.path.relpath(path, root), ast.parse(f.read())


def registrations_outside_conf(root=ROOT):
    """``['<path>:<line> <call>']`` of every option registration in
    ``root/nova_accel`` outside ``nova_accel/conf``."""
    conf_dir = os.path.join('nova_accel', 'conf') + os.sep
    found = []
    for rel, tree in _sources(root):
        if rel.startswith(conf_dir):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and \
                    isinstance(node.func, ast.Attribute) and \
                    node.func.attr in REGISTERING:
                found.append('%s:%d %s' % (rel, node.lineno, node.func.attr))
    return found


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield '%s.%s' % (node.module, alias.name)


def _reads_options(tree):
    """True when the module reads ``<something>.nova_accel.<option>``."""
    return any(isinstance(node, ast.Attribute) and
               isinstance(node.value, ast.Attribute) and
               node.value.attr == 'nova_accel'
               for node in ast.walk(tree))


def option_readers(root=ROOT):
    """``{module path: imports nova_accel.conf (bool)}`` of the modules
    of ``root/nova_accel`` that read ``[nova_accel]`` options."""
    return {rel: 'nova_accel.conf' in set(_imports(tree))
            for rel, tree in _sources(root)
            if not rel.startswith(os.path.join('nova_accel', 'conf')) and
            _reads_options(tree)}


class RegistrationScanTest(testtools.TestCase):

    def plant(self, files):
        """A tree with ``files`` (``{relative path: source}``)."""
        root = self.useFixture(fixtures.TempDir()).path
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(textwrap.dedent(text))
        return root

    def test_no_registration_outside_conf(self):
        self.assertEqual([], registrations_outside_conf())

    def test_planted_registration_is_found(self):
        root = self.plant({
            'nova_accel/conf/__init__.py': '''
                CONF.register_group(GROUP)
                CONF.register_opts(OPTS, group=GROUP)
                ''',
            'nova_accel/virt/new.py': '''
                import nova_accel.conf
                CONF = nova_accel.conf.CONF
                def main():
                    CONF.register_cli_opt(command)
                nova_accel.conf.register_opts(CONF)
                CONF.register_opt(cfg.StrOpt('x'), group='nova_accel')
                ''',
        })
        self.assertEqual(
            [os.path.join('nova_accel', 'virt', 'new.py') + ':6 '
             'register_opts',
             os.path.join('nova_accel', 'virt', 'new.py') + ':7 '
             'register_opt'],
            registrations_outside_conf(root))

    def test_every_reader_imports_the_conf_package(self):
        readers = option_readers()
        self.assertIn(os.path.join('nova_accel', 'virt', 'hostdev.py'),
                      readers)
        self.assertEqual([], [m for m, ok in readers.items() if not ok])

    def test_planted_reader_without_the_import_is_found(self):
        root = self.plant({
            'nova_accel/good.py': '''
                import nova_accel.conf
                CONF = nova_accel.conf.CONF
                x = CONF.nova_accel.hotplug_topic
                ''',
            'nova_accel/bad.py': '''
                import nova.conf
                CONF = nova.conf.CONF
                x = CONF.nova_accel.hotplug_topic
                ''',
            'nova_accel/other.py': 'x = CONF.cyborg.region_name\n',
        })
        self.assertEqual({os.path.join('nova_accel', 'good.py'): True,
                          os.path.join('nova_accel', 'bad.py'): False},
                         option_readers(root))
