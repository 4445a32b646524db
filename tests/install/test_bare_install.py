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

"""accel-backend on a controller without Nova (``tox -e install-layouts``,
in CI): the bundle's wheel alone in a fresh venv, its dependencies from
PyPI as ``setup.cfg`` declares them, no Nova and no test requirements.

Every accel_backend console script must start: ``--help`` imports the
whole command (the threading backend of oslo.service included, which needs
``oslo.service[threading]``), and ``accel-backend-manage db sync`` then
``accel-backend-status upgrade check`` run on a SQLite database.  Before
the dependencies were complete every script crashed at import here, while
every test environment, which has Nova, hid it.
"""

import os

import test_layouts

SCRIPTS = ('accel-backend', 'accel-backend-api', 'accel-backend-agent',
           'accel-backend-conductor', 'accel-backend-manage',
           'accel-backend-status')


class BareInstallTest(test_layouts._Layout):

    def test_console_scripts_start_without_nova(self):
        venv = self.venv('bare')
        self.pip(venv, self.wheel)
        python = os.path.join(venv, 'bin', 'python')
        self.assertIn('absent', test_layouts._run([python, '-c', (
            'import importlib.util; print("present" if '
            'importlib.util.find_spec("nova") else "absent")')]))
        for script in SCRIPTS:
            out = test_layouts._run(
                [os.path.join(venv, 'bin', script), '--help'])
            self.assertIn('usage: %s' % script, out)
        conf = os.path.join(self.tmp, 'accel-backend.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = sqlite:///%s\n' %
                    os.path.join(self.tmp, 'accel.sqlite'))
        manage = os.path.join(venv, 'bin', 'accel-backend-manage')
        self.assertIn('Database expanded and contracted', test_layouts._run(
            [manage, '--config-file', conf, 'db', 'sync']))
        status = os.path.join(venv, 'bin', 'accel-backend-status')
        out = test_layouts._run(
            [status, '--config-file', conf, 'upgrade', 'check', '--json'],
            check_codes=(0, 1))
        self.assertIn('"Database schema"', out)
