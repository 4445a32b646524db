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

"""What ``pip install nova-accel`` installs is what the shipped code
imports: every third-party module the shipped packages
(``[options.packages.find] include`` of ``setup.cfg``) import, at module
level or inside a function, comes from a distribution ``install_requires``
names, except those the host provides (``HOST_PROVIDED``).  And the
database drivers of the documented ``[database] connection`` URLs have
their extras.

Every test environment has Nova and the test requirements, so a module
imported but not declared works in every test and fails only on an
operator's host (``oslo_context`` and ``oslo_serialization`` were such
modules); this reads the imports with ``ast`` and maps each top-level
module to the distributions that provide it in this environment with
``importlib.metadata.packages_distributions()`` (Python 3.10).
"""

import ast
import configparser
import importlib.metadata
import os
import re
import sys

import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

#: Top-level modules the shipped code imports that ``install_requires``
#: does not name on purpose, with the reason.
HOST_PROVIDED = {
    'nova': 'openstack-nova: nova_accel plugs into the Nova it is '
            'installed beside (Nova 34, the compute driver and the '
            'nova-accel command run in the Nova services\' Python), and '
            'pip must neither install a second Nova nor upgrade that one; '
            'accel_backend imports it only where it is importable '
            '(accel_backend.agent.discovery.nova_pci)',
    'libvirt': 'libvirt-python: Nova\'s libvirt driver, which '
               'accel.LibvirtDriver extends (nova_accel.virt.libvirt), '
               'needs it on a compute node and Nova 34 does not declare it '
               '(Debian\'s python3-libvirt, or pip with the libvirt '
               'headers); a controller or an accel_backend host never '
               'imports it, and pip must not have to build it there',
    'osc_lib': 'python-openstackclient (the nova-accel[osc] extra): the '
               'openstack accelerator device taint commands '
               '(nova_accel.osc) are loaded by the openstack program that '
               'runs them (entry points openstack.accelerator.v2), which '
               'brings osc-lib; no service imports them',
    'tempest': 'tempest: nova_accel_tempest_plugin is loaded by the tempest '
               'that runs it (entry point tempest.test_plugins), in the '
               'tempest environment; a controller or compute node needs no '
               'tempest',
}

#: SQLAlchemy's driver module of each documented ``[database] connection``
#: URL (doc/source/install/index.rst), by the extra that installs it.
DRIVER_EXTRAS = {
    'postgresql': 'psycopg2',  # postgresql+psycopg2://
    'mysql': 'pymysql',  # mysql+pymysql://
}


def _normalize(name):
    """A distribution name as PEP 503 compares them (str -> str)."""
    return re.sub(r'[-_.]+', '-', name).lower()


def _setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    return cfg


def _requirement_names(value):
    """Normalized distribution names of a ``setup.cfg`` requirement list
    (one requirement a line, ``#`` comment lines allowed) -> set of str."""
    names = set()
    for line in value.splitlines():
        line = line.strip()
        if line and not line.startswith('#'):
            names.add(_normalize(
                re.match(r'[A-Za-z0-9][A-Za-z0-9._-]*', line).group(0)))
    return names


def _shipped_packages(cfg):
    """Top-level packages of the wheel (tuple of str)."""
    return tuple(
        line.strip() for line in
        cfg['options.packages.find']['include'].splitlines()
        if line.strip() and '.' not in line)


def imported_modules(packages):
    """Top-level third-party modules imported by the Python files of
    ``packages`` (directories under the repository root).

    Absolute imports only (a relative one stays in its package); the
    standard library (``sys.stdlib_module_names``) and ``packages``
    themselves are left out.

    :returns: ``{module: ['<path>:<line>', ...]}``.
    """
    found = {}
    for package in packages:
        for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
            for name in sorted(files):
                if not name.endswith('.py'):
                    continue
                path = os.path.join(dirpath, name)
                with open(path) as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        names = [alias.name for alias in node.names]
                    elif isinstance(node, ast.ImportFrom) and not node.level:
                        names = [node.module]
                    else:
                        continue
                    for top in {n.split('.')[0] for n in names}:
                        if (top in sys.stdlib_module_names or
                                top in packages):
                            continue
                        found.setdefault(top, []).append('%s:%d' % (
                            os.path.relpath(path, ROOT), node.lineno))
    return found


class DeclaredRequirementsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.cfg = _setup_cfg()
        self.providers = importlib.metadata.packages_distributions()

    def test_every_imported_distribution_is_declared(self):
        declared = _requirement_names(
            self.cfg['options']['install_requires'])
        modules = imported_modules(_shipped_packages(self.cfg))
        missing = []
        for module, where in sorted(modules.items()):
            if module in HOST_PROVIDED:
                continue
            dists = self.providers.get(module)
            if not dists:
                missing.append('%s (imported at %s): no installed '
                               'distribution provides it' % (module,
                                                             where[0]))
            elif not declared & {_normalize(d) for d in dists}:
                missing.append('%s (module %s, imported at %s)' % (
                    ' or '.join(sorted(set(dists))), module, where[0]))
        if missing:
            self.fail('imported by the shipped code but not in setup.cfg '
                      'install_requires:\n  ' + '\n  '.join(missing))

    def test_host_provided_modules_are_imported(self):
        # An entry nothing imports any more would let a later import of
        # that name through unchecked.
        modules = imported_modules(_shipped_packages(self.cfg))
        self.assertEqual([], sorted(set(HOST_PROVIDED) - set(modules)))

    def test_database_drivers_have_extras(self):
        extras = self.cfg['options.extras_require']
        for extra, module in sorted(DRIVER_EXTRAS.items()):
            self.assertIn(extra, extras)
            dists = {_normalize(d) for d in self.providers.get(module, ())}
            self.assertTrue(
                dists & _requirement_names(extras[extra]),
                'extra %s does not install the %s module (%s)' % (
                    extra, module, sorted(dists)))
        # import-cyborg reads a MySQL Cyborg database: the mysql driver.
        self.assertLessEqual(_requirement_names(extras['mysql']),
                             _requirement_names(extras['cyborg-import']))
