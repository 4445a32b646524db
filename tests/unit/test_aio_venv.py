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

"""``tools.aio.venv``: the cloud's cached venv is rebuilt when the bundle's
own requirements change (it reinstalls the bundle with ``--no-deps``
otherwise, and a new dependency would be missing)."""

import os

import fixtures
import testtools

from tools.aio import venv


class StampTest(testtools.TestCase):

    def write_setup_cfg(self, repo, requires):
        with open(os.path.join(repo, 'setup.cfg'), 'w') as f:
            f.write('[metadata]\nname = x\n\n[options]\n'
                    'install_requires =\n    # a comment\n')
            f.writelines('    %s\n' % r for r in requires)

    def test_bundle_requirements_change_the_stamp(self):
        repo = self.useFixture(fixtures.TempDir()).path
        self.write_setup_cfg(repo, ['cheroot>=10.0', 'jsonschema>=4.0'])
        self.assertEqual(['cheroot>=10.0', 'jsonschema>=4.0'],
                         venv.bundle_requirements(repo))
        before = venv.stamp(repo)
        self.assertEqual(before, venv.stamp(repo))
        self.write_setup_cfg(repo, ['cheroot>=10.0', 'microversion-parse>=1.0',
                                    'jsonschema>=4.0'])
        self.assertNotEqual(before, venv.stamp(repo))

    def test_this_bundle_is_read(self):
        self.assertIn('jsonschema>=4.0', venv.bundle_requirements())


class InstallerTest(testtools.TestCase):

    def test_uv_on_path_installs_compiled_into_the_venv(self):
        bin_dir = self.useFixture(fixtures.TempDir()).path
        uv = os.path.join(bin_dir, 'uv')
        with open(uv, 'w') as f:
            f.write('#!/bin/sh\n')
        os.chmod(uv, 0o755)
        self.useFixture(fixtures.EnvironmentVariable('PATH', bin_dir))
        self.assertEqual([uv, 'pip', 'install', '--quiet',
                          '--compile-bytecode', '--python', '/v/bin/python'],
                         venv.installer('/v'))

    def test_without_uv_the_venvs_pip(self):
        empty = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('PATH', empty))
        self.assertEqual(['/v/bin/python', '-m', 'pip', 'install'],
                         venv.installer('/v')[:4])
