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

"""The compute driver reachable as ``nova.virt.accel`` in each common
install layout of Nova 34, for real (``tox -e install-layouts``, in CI).

Each test builds a fresh environment with openstack-nova 34 from PyPI,
installs this bundle's wheel, runs ``nova-accel-driver-shim install`` with
the environment's Python, and then, in a fresh interpreter, loads the
driver the way nova-compute does (``nova.virt.driver.
load_compute_driver(None, 'accel.FakeDriver')``) and checks that ``nova``
is still Nova (a stray ``nova/`` directory would make it a namespace
package that shadows Nova).

Layouts:

* **wheel**: Nova and the bundle from wheels in one venv (kolla,
  OpenStack-Ansible);
* **editable**: Nova installed editable (``pip install -e``, what devstack's
  ``setup_develop`` does) from its unpacked sdist, and the bundle installed
  by the devstack plugin's ``stack install`` phase (``devstack/plugin.sh``)
  with devstack's ``setup_package`` doing what devstack's does (``pip
  install -e``) and ``$PYTHON`` the venv's;
* **dist-packages**: Nova in one site directory (as a distribution's
  ``dist-packages``) and the bundle in a venv that sees it
  (``--system-site-packages`` style, a ``.pth`` entry here).

A layout where the shim cannot be imported fails; nothing is skipped.
"""

import glob
import os
import shutil
import subprocess
import sys
import tarfile

import fixtures
import testtools

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
NOVA = 'nova==34.0.0'
# SQLAlchemy 2.1 turns deprecation warnings Nova triggers into errors.
PINS = ['SQLAlchemy>=2.0,<2.1']
TIMEOUT = 1200

CHECK = '''
import json, sys
import nova
from nova.virt import driver
drv = driver.load_compute_driver(None, 'accel.FakeDriver')
import nova.virt.accel as shim
print(json.dumps({'nova': nova.__file__, 'driver': type(drv).__module__,
                  'shim': shim.__file__}))
'''


def _run(argv, check_codes=(0,), **kw):
    proc = subprocess.run(argv, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, **kw)
    if proc.returncode not in check_codes:
        raise AssertionError('%s failed (%d):\n%s\n%s' % (
            ' '.join(argv), proc.returncode, proc.stdout[-3000:],
            proc.stderr[-3000:]))
    return proc.stdout


class _Layout(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.wheel = self.build_wheel()

    def copy_tree(self):
        """A copy of the tracked files of the checkout; returns its path."""
        src = os.path.join(self.tmp, 'src')
        if os.path.isdir(src):
            return src
        # Tracked and new files (not ignored ones), as in the work tree.
        files = _run(['git', 'ls-files', '-z', '--cached', '--others',
                      '--exclude-standard'], cwd=REPO).split('\0')
        for rel in filter(None, files):
            if not os.path.lexists(os.path.join(REPO, rel)):
                continue  # deleted, not yet committed
            dest = os.path.join(src, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            # The recorded sysfs trees hold (dangling) symlinks.
            shutil.copy2(os.path.join(REPO, rel), dest,
                         follow_symlinks=False)
        return src

    def build_wheel(self):
        # From a copy of the tracked files: a build/ directory left in the
        # checkout by an older build would leak its files into the wheel.
        src = self.copy_tree()
        out = os.path.join(self.tmp, 'dist')
        _run([sys.executable, '-m', 'pip', 'wheel', '--no-deps',
              '--quiet', '-w', out, src])
        return glob.glob(os.path.join(out, 'nova_accel-*.whl'))[0]

    def venv(self, name, system_site=False):
        path = os.path.join(self.tmp, name)
        argv = [sys.executable, '-m', 'venv', path]
        if system_site:
            argv.append('--system-site-packages')
        _run(argv)
        return path

    @staticmethod
    def pip(venv, *args):
        return _run([os.path.join(venv, 'bin', 'python'), '-m', 'pip',
                     'install', '--quiet', '--disable-pip-version-check'] +
                    list(args))

    def install_shim_and_check(self, venv):
        """Run the install step, check it, and load the driver in a fresh
        interpreter; returns the check's JSON."""
        import json
        shim = os.path.join(venv, 'bin', 'nova-accel-driver-shim')
        out = _run([shim, 'install'])
        self.assertIn('installed', out)
        # Idempotent, and check agrees.
        self.assertIn('already installed', _run([shim, 'install']))
        self.assertIn(': installed', _run([shim, 'check']))
        got = json.loads(_run([os.path.join(venv, 'bin', 'python'), '-c',
                               CHECK], cwd=self.tmp).strip().splitlines()[-1])
        self.assertEqual('nova_accel.virt.fake', got['driver'])
        self.assertTrue(got['nova'].endswith(os.path.join('nova',
                                                          '__init__.py')))
        self.assertEqual(os.path.join(os.path.dirname(got['nova']), 'virt',
                                      'accel', '__init__.py'), got['shim'])
        # remove undoes it; Nova still imports.
        _run([shim, 'remove'])
        proc = subprocess.run([shim, 'check'], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(2, proc.returncode, proc.stdout + proc.stderr)
        _run([os.path.join(venv, 'bin', 'python'), '-c',
              'import nova.virt.driver'])
        return got

    def assert_bundle_ships_no_nova_dir(self, venv):
        site = glob.glob(os.path.join(venv, 'lib', 'python3*',
                                      'site-packages'))[0]
        record = glob.glob(os.path.join(site, 'nova_accel-*.dist-info',
                                        'RECORD'))[0]
        with open(record) as f:
            shipped = [line.split(',')[0] for line in f]
        self.assertEqual([], [p for p in shipped if p.startswith('nova/')])


class WheelLayoutTest(_Layout):

    def test_nova_and_bundle_wheels_in_one_venv(self):
        venv = self.venv('venv')
        self.pip(venv, NOVA, *PINS)
        self.pip(venv, self.wheel)
        self.assert_bundle_ships_no_nova_dir(venv)
        got = self.install_shim_and_check(venv)
        self.assertIn(os.path.join(venv, 'lib'), got['nova'])


class EditableLayoutTest(_Layout):

    def test_nova_editable_from_its_sdist(self):
        sdists = os.path.join(self.tmp, 'sdist')
        _run([sys.executable, '-m', 'pip', 'download', '--quiet',
              '--no-deps', '--no-binary', ':all:', '-d', sdists, NOVA])
        archive = glob.glob(os.path.join(sdists, 'nova-*.tar.gz'))[0]
        with tarfile.open(archive) as tar:
            tar.extractall(self.tmp, filter='data')
        src = glob.glob(os.path.join(self.tmp, 'nova-34.0.0'))[0]
        venv = self.venv('venv')
        self.pip(venv, *PINS)
        self.pip(venv, '-e', src)
        self.devstack_install(venv)
        got = self.install_shim_and_check(venv)
        # The shim lands in the checkout, where Nova is imported from.
        self.assertEqual(os.path.join(src, 'nova', '__init__.py'),
                         got['nova'])

    def devstack_install(self, venv):
        """devstack/plugin.sh ``stack install`` with a real
        setup_package (editable install of the bundle) and $PYTHON."""
        bundle = self.copy_tree()
        python = os.path.join(venv, 'bin', 'python')
        script = '\n'.join([
            'set -eu',
            'function echo_summary { :; }',
            # devstack's (functions-common): any of the named services in
            # $ENABLED_SERVICES.
            'ENABLED_SERVICES=key,n-cpu,accel-api',
            'function is_service_enabled { local s; for s in "$@"; do '
            '[[ ,$ENABLED_SERVICES, =~ ,$s, ]] && return 0; done; '
            'return 1; }',
            # devstack's setup_package -> pip_install -e <dir>.
            'function setup_package { "$PYTHON" -m pip install --quiet '
            '--disable-pip-version-check -e "$1"; }',
            'NOVA_ACCEL_DIR=%s' % bundle,
            'source "$NOVA_ACCEL_DIR/devstack/plugin.sh" stack install'])
        out = _run(['bash', '-c', script],
                   env=dict(os.environ, PYTHON=python, DEST=self.tmp))
        self.assertIn('installed %s' % os.path.join(
            self.tmp, 'nova-34.0.0', 'nova', 'virt', 'accel'), out)


class DistPackagesLayoutTest(_Layout):

    def test_nova_in_another_site_directory(self):
        # Nova where a distribution puts it, the bundle in a venv that
        # sees that directory (as --system-site-packages sees
        # dist-packages).
        dist = os.path.join(self.tmp, 'dist-packages')
        _run([sys.executable, '-m', 'pip', 'install', '--quiet',
              '--disable-pip-version-check', '--target', dist, NOVA] +
             PINS)
        venv = self.venv('venv')
        site = glob.glob(os.path.join(venv, 'lib', 'python3*',
                                      'site-packages'))[0]
        with open(os.path.join(site, 'dist-packages.pth'), 'w') as f:
            f.write(dist + '\n')
        self.pip(venv, self.wheel)
        got = self.install_shim_and_check(venv)
        self.assertEqual(os.path.join(dist, 'nova', '__init__.py'),
                         got['nova'])
