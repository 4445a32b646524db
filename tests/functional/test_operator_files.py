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

"""The systemd units and the logrotate file of ``etc/`` work on the
nodes the install guide (``doc/source/install/index.rst``) describes,
checked with the real tools: ``logrotate`` (Debian's package logrotate)
rotates the shipped file's logs on every kind of node, the units start
the programs of the venv the guide installs and pass ``systemd-analyze
verify`` (Debian's package systemd; it needs no running systemd).  Both
are in bindep.txt's test profile."""

import configparser
import os
import re
import shutil
import stat
import subprocess

import fixtures
import testtools

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
ETC = os.path.join(ROOT, 'etc')
GUIDE = os.path.join(ROOT, 'doc', 'source', 'install', 'index.rst')
LOG_DIR = '/var/log/accel-backend/'
#: Who owns the log directory, as the units' LogsDirectory= makes it: the
#: unit's User= (accel-backend on API and conductor nodes, an unprivileged
#: uid here) or root (the agent, the embedded service).
NOBODY = 65534


def _tool(name):
    path = shutil.which(name, path=os.environ.get('PATH', '') +
                        ':/usr/sbin:/sbin')
    if path is None:
        raise AssertionError('%s is missing: install the test profile of '
                             'bindep.txt' % name)
    return path


def _units():
    directory = os.path.join(ETC, 'systemd')
    return {name: os.path.join(directory, name)
            for name in sorted(os.listdir(directory))}


def _exec_start(path):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path)
    return parser['Service']['ExecStart'].split()[0]


class LogrotateTest(testtools.TestCase):

    def rotate(self, owner):
        """Run logrotate on the shipped file, its path moved to a
        directory owned by ``owner`` (uid) with mode 0755; returns the
        directory's names after the run."""
        tmp = self.useFixture(fixtures.TempDir()).path
        logs = os.path.join(tmp, 'log')
        os.mkdir(logs, 0o755)
        with open(os.path.join(logs, 'accel-backend-agent.log'), 'w') as f:
            f.write('a record\n')
        os.chown(os.path.join(logs, 'accel-backend-agent.log'), owner, -1)
        os.chown(logs, owner, -1)
        with open(os.path.join(ETC, 'logrotate.d', 'accel-backend')) as f:
            shipped = f.read()
        self.assertEqual(1, shipped.count(LOG_DIR))
        conf = os.path.join(tmp, 'accel-backend')
        with open(conf, 'w') as f:
            f.write(shipped.replace(LOG_DIR, logs + '/'))
        # logrotate ignores a configuration file others may write.
        os.chmod(conf, 0o644)
        proc = subprocess.run(
            [_tool('logrotate'), '--verbose', '--force',
             '--state', os.path.join(tmp, 'state'), conf],
            capture_output=True, text=True, timeout=60)
        out = proc.stdout + proc.stderr
        self.assertEqual(0, proc.returncode, out)
        self.assertNotIn('error:', out)
        self.assertNotIn('skipping', out)
        return sorted(os.listdir(logs))

    def test_rotates_where_the_log_directory_is_the_runners(self):
        # The agent's and the embedded service's nodes: root's directory
        # (or, not as root, the tests' user's).
        self.assertEqual(['accel-backend-agent.log.1'],
                         self.rotate(os.getuid()))

    def test_rotates_in_a_directory_of_the_service_user(self):
        # The API and conductor nodes: the accel-backend user's directory;
        # logrotate runs as root (cron/systemd timer), chown needs root.
        if os.getuid() != 0:
            self.assertRaises(PermissionError, self.rotate, NOBODY)
            return
        self.assertEqual(['accel-backend-agent.log.1'],
                         self.rotate(NOBODY))


class SystemdUnitsTest(testtools.TestCase):

    def test_units_start_the_programs_of_the_guides_venv(self):
        with open(GUIDE) as f:
            guide = f.read()
        venvs = re.findall(r'python3 -m venv (\S+)', guide)
        self.assertEqual(1, len(venvs), venvs)
        venv = venvs[0]
        self.assertIn('# %s/bin/pip install ' % venv, guide)
        units = _units()
        self.assertEqual(4, len(units))
        for unit, path in units.items():
            program = unit[:-len('.service')]
            self.assertEqual('%s/bin/%s' % (venv, program),
                             _exec_start(path), unit)
            self.assertRegex(guide, r'``(systemd/)?%s``' % re.escape(unit))
            self.assertIn('``%s``' % program, guide)

    def test_systemd_analyze_verify(self):
        # verify checks that ExecStart is executable: the shipped units
        # with only that path moved to a stand-in program.
        analyze = _tool('systemd-analyze')
        tmp = self.useFixture(fixtures.TempDir()).path
        for unit, path in _units().items():
            binary = _exec_start(path)
            stand_in = os.path.join(tmp, os.path.basename(binary))
            with open(stand_in, 'w') as f:
                f.write('#!/bin/sh\n')
            os.chmod(stand_in, stat.S_IRWXU)
            with open(path) as f:
                text = f.read()
            self.assertEqual(1, text.count(binary + ' '), unit)
            copy = os.path.join(tmp, unit)
            with open(copy, 'w') as f:
                f.write(text.replace(binary + ' ', stand_in + ' '))
            proc = subprocess.run([analyze, 'verify', copy],
                                  capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual((0, ''), (proc.returncode, proc.stderr + (
                proc.stdout)), unit)
