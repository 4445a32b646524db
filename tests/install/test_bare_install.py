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

Every console script the installed distribution declares
(``console_scripts`` entry points, read in the venv) is run: ``--help`` of
each one that needs no Nova must work (it imports the whole command, the
threading backend of oslo.service included, which needs
``oslo.service[threading]``); ``nova-accel``, which needs Nova, must say so
in one line on stderr and exit 2, no traceback.  ``accel-backend-manage db
sync`` then ``accel-backend-status upgrade check`` run on a SQLite
database.  Before the dependencies were complete every script crashed at
import here, while every test environment, which has Nova, hid it.

Then the ``postgresql`` extra goes into the same venv, and ``db sync``
against a PostgreSQL URL where nothing listens fails on the connection,
not on a missing driver (``ModuleNotFoundError: psycopg2`` was what the
documented URL gave after a plain ``pip install nova-accel``).
"""

import json
import os
import subprocess

import test_layouts

#: Console scripts that need Nova (they exit 2 where it is missing).
NEEDS_NOVA = ('nova-accel',)

CONSOLE_SCRIPTS = (
    'import importlib.metadata as md, json; print(json.dumps(sorted('
    'e.name for e in md.distribution("nova-accel").entry_points '
    'if e.group == "console_scripts")))')


def _status(argv):
    """Run ``argv``; returns the CompletedProcess (exit status and
    output), whatever the status."""
    return subprocess.run(argv, capture_output=True, text=True,
                          timeout=test_layouts.TIMEOUT,
                          stdin=subprocess.DEVNULL)


class BareInstallTest(test_layouts._Layout):

    def test_console_scripts_start_without_nova(self):
        venv = self.venv('bare')
        self.pip(venv, self.wheel)
        python = os.path.join(venv, 'bin', 'python')
        self.assertIn('absent', test_layouts._run([python, '-c', (
            'import importlib.util; print("present" if '
            'importlib.util.find_spec("nova") else "absent")')]))
        scripts = json.loads(test_layouts._run([python, '-c',
                                                CONSOLE_SCRIPTS]))
        self.assertIn('accel-backend-manage', scripts)
        self.assertIn('nova-accel', scripts)
        for script in scripts:
            argv = [os.path.join(venv, 'bin', script), '--help']
            if script not in NEEDS_NOVA:
                self.assertIn('usage: %s' % script, test_layouts._run(argv))
                continue
            proc = _status(argv)
            self.assertEqual(2, proc.returncode, proc.stderr)
            self.assertNotIn('Traceback', proc.stderr)
            self.assertEqual(('', 1), (proc.stdout,
                                       len(proc.stderr.splitlines())),
                             proc.stderr)
            self.assertIn('Nova', proc.stderr)
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

        # The documented PostgreSQL URL: its driver imports once the extra
        # is installed, and the command fails on the connection.
        self.pip(venv, self.wheel + '[postgresql]')
        pg_conf = os.path.join(self.tmp, 'accel-backend-pg.conf')
        with open(pg_conf, 'w') as f:
            f.write('[database]\nconnection = '
                    'postgresql+psycopg2://user:pw@127.0.0.1:1/x\n')
        proc = _status([manage, '--config-file', pg_conf, 'db', 'sync'])
        self.assertEqual(1, proc.returncode, proc.stdout + proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertNotIn('ModuleNotFoundError', proc.stderr)
        self.assertIn('psycopg2.OperationalError', proc.stderr)
