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

"""``nova-accel-driver-shim``: idempotent install, refusal to touch what
it did not write, upgrade of the shim nova-accel 0.1.0 shipped, and a
clear error when ``nova`` is not Nova.

Each case runs the tool in a fresh interpreter whose ``nova`` is a
minimal package in a temporary directory (``nova/__init__.py`` and
``nova/virt/driver.py``); tests/install runs it against real Nova 34 in
every install layout.
"""

import os
import subprocess
import sys

import fixtures
import testtools

from nova_accel import driver_shim

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))


class DriverShimTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.site = self.useFixture(fixtures.TempDir()).path
        self.virt = os.path.join(self.site, 'nova', 'virt')
        os.makedirs(self.virt)
        for rel in (('nova', '__init__.py'), ('nova', 'virt', '__init__.py'),
                    ('nova', 'virt', 'driver.py')):
            open(os.path.join(self.site, *rel), 'w').close()
        self.init = os.path.join(self.virt, 'accel', '__init__.py')

    def shim(self, action, site=None):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [site or self.site, REPO]))
        # -S: no site-packages, so the real Nova of this environment is
        # neither found nor touched.
        proc = subprocess.run(
            [sys.executable, '-S', '-m', 'nova_accel.driver_shim', action],
            capture_output=True, text=True, env=env, cwd=site or self.site,
            stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout + proc.stderr

    def read(self):
        with open(self.init) as f:
            return f.read()

    def test_install_is_idempotent_and_removable(self):
        self.assertEqual(2, self.shim('check')[0])
        rc, out = self.shim('install')
        self.assertEqual((0, 'installed %s\n' % os.path.dirname(self.init)),
                         (rc, out))
        self.assertEqual(driver_shim.SHIM, self.read())
        self.assertEqual(0, self.shim('install')[0])
        self.assertIn('already installed', self.shim('install')[1])
        self.assertEqual(0, self.shim('check')[0])
        self.assertEqual(0, self.shim('remove')[0])
        self.assertFalse(os.path.exists(os.path.dirname(self.init)))
        self.assertEqual(2, self.shim('check')[0])

    def test_foreign_package_is_never_touched(self):
        os.makedirs(os.path.dirname(self.init))
        with open(self.init, 'w') as f:
            f.write('# an operator\'s own driver\n')
        for action in ('install', 'remove'):
            rc, out = self.shim(action)
            self.assertEqual(1, rc)
            self.assertIn('not written by nova-accel', out)
        self.assertEqual('# an operator\'s own driver\n', self.read())
        self.assertEqual(2, self.shim('check')[0])

    def test_shim_of_the_0_1_0_wheel_is_upgraded(self):
        os.makedirs(os.path.dirname(self.init))
        with open(self.init, 'w') as f:
            f.write(driver_shim.LEGACY_FIRST_LINE + '\n"""\n')
        self.assertIn('outdated', self.shim('check')[1])
        self.assertEqual(0, self.shim('install')[0])
        self.assertEqual(driver_shim.SHIM, self.read())

    def test_namespace_nova_is_refused(self):
        # A nova/ directory without __init__.py (what a wheel shipping
        # nova/virt/accel leaves beside an editable Nova).
        stray = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(stray, 'nova', 'virt'))
        rc, out = self.shim('install', site=stray)
        self.assertEqual(1, rc)
        self.assertIn('namespace package', out)

    def test_without_nova(self):
        empty = self.useFixture(fixtures.TempDir()).path
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([empty, REPO]))
        # -S: no site-packages, so no installed Nova either.
        proc = subprocess.run(
            [sys.executable, '-S', '-m', 'nova_accel.driver_shim', 'install'],
            capture_output=True, text=True, env=env, cwd=empty,
            stdin=subprocess.DEVNULL)
        self.assertEqual(1, proc.returncode, proc.stdout + proc.stderr)
        self.assertIn('Nova is not importable', proc.stderr)
