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

"""The harness of the devstack plugin's tests (``tests.aio.test_devstack``,
``tests.devstack_checkout``).

``devstack/settings`` and ``devstack/plugin.sh`` are sourced by bash for
each devstack phase, as devstack does, with the devstack functions they
call replaced by the stand-ins of ``devstack_stubs.sh`` (the ini functions
write real files), or, with ``devstack_dir``, by a devstack checkout's
own; the tests then read the files the plugin wrote and the calls it made
outside the machine (Keystone, databases, pip, systemctl).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from tests.aio import ini_tool

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class DevstackPluginTestCase(unittest.TestCase):
    """Runs the plugin in a single-node devstack of nova-accel's API and
    tempest (``self.env``: devstack's variables), in a temporary folder."""

    #: A devstack checkout whose own functions replace the stand-ins of
    #: ``devstack_stubs.sh`` (``tests.devstack_checkout``); None: the
    #: stand-ins.
    devstack_dir = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='devstack-test-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.calls = os.path.join(self.tmp, 'calls')
        bindir = os.path.join(self.tmp, 'bin')
        os.makedirs(bindir)
        # Programs the plugin runs (not devstack functions).
        for prog in ('accel-backend', 'accel-backend-agent',
                     'accel-backend-manage', 'systemctl', 'tox'):
            path = os.path.join(bindir, prog)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\necho "%s $*" >> %s\n' % (
                    prog, self.calls))
            os.chmod(path, 0o755)
        self.conf_dir = os.path.join(self.tmp, 'etc', 'accel-backend')
        self.nova_conf = os.path.join(self.tmp, 'nova.conf')
        self.nova_cpu_conf = os.path.join(self.tmp, 'nova-cpu.conf')
        self.tempest_conf = os.path.join(self.tmp, 'tempest.conf')
        self.systemd_dir = os.path.join(self.tmp, 'systemd')
        self.vars_file = os.path.join(self.tmp, 'vars')
        self.constraints = os.path.join(self.tmp, 'upper-constraints.txt')
        with open(self.constraints, 'w') as f:
            f.write('oslo.config===10.0.0\n')
        os.makedirs(os.path.join(self.tmp, 'opt', 'tempest'))
        self.env = {
            'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
            'STUB_DIR': HERE, 'STUB_CALLS': self.calls,
            'STUB_VARS': self.vars_file,
            'NOVA_ACCEL_REPO': REPO,
            'DEST': os.path.join(self.tmp, 'opt'),
            'DATA_DIR': os.path.join(self.tmp, 'data'),
            'SERVICE_HOST': '192.0.2.10',
            # A user other than root, that ``install -d -o`` can give
            # the directories to: the test's own, nobody when that is root.
            'STACK_USER': 'nobody' if os.geteuid() == 0 else
            subprocess.check_output(['id', '-un'], text=True).strip(),
            'NOVA_CONF_DIR': self.tmp,
            'NOVA_CONF': self.nova_conf,
            'NOVA_CPU_CONF': self.nova_cpu_conf,
            'TEMPEST_CONFIG_DIR': self.tmp,
            'TEMPEST_CONFIG': self.tempest_conf,
            'TEMPEST_VENV_UPPER_CONSTRAINTS': self.constraints,
            # stackrc's, for a devstack run as root: the test's recorder.
            'SYSTEMD_DIR': self.systemd_dir,
            'SYSTEMCTL': os.path.join(bindir, 'systemctl'),
            'KEYSTONE_SERVICE_URI': 'http://192.0.2.10/identity',
            # stackrc's, from which lib/keystone builds the URI above.
            'SERVICE_PROTOCOL': 'http',
            'SERVICE_PASSWORD': 'secretpw',
            'SERVICE_PROJECT_NAME': 'service',
            'SERVICE_DOMAIN_NAME': 'Default',
            'REGION_NAME': 'RegionOne',
            'ACCEL_BACKEND_CONF_DIR': self.conf_dir,
            'HOME': self.tmp,
            # devstack's $PYTHON: the Python with Nova and this bundle (the
            # test's own, where tox installed the shim already).
            'PYTHON': sys.executable,
            # A single-node devstack with nova-accel's API and tempest.
            'ENABLED_SERVICES': 'key,n-api,n-cpu,n-cond,n-sch,placement-api,'
                                'rabbit,mysql,tempest,accel-api',
        }
        if self.devstack_dir:
            self.env['NOVA_ACCEL_DEVSTACK_DIR'] = self.devstack_dir
        self.vars = {}

    def devstack(self, *phases, before=(), after=(), **env):
        """Run the plugin for each phase (``'stack post-config'``...) in
        one bash, as devstack does: the bash lines of ``before`` (what
        local.conf's localrc holds), the source phase (the settings), then
        each plugin.sh phase, then the bash lines of ``after``.  The
        variables of devstack the settings change land in ``self.vars``.
        """
        lines = self.prologue() + list(before) + ['run_phase source']
        lines += ['run_plugins %s' % phase for phase in phases]
        lines += list(after)
        lines += ['for v in ENABLED_SERVICES TEMPEST_PLUGINS; do',
                  '    printf "%s=%s\\n" "$v" "${!v-}"',
                  'done > "$STUB_VARS"']
        full_env = dict(self.env, **env)
        proc = subprocess.run(['bash', '-c', '\n'.join(lines)],
                              env=full_env, capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        with open(self.vars_file) as f:
            self.vars = dict(line.rstrip('\n').split('=', 1) for line in f)
        return self.recorded()

    @staticmethod
    def prologue():
        # devstack runs with errexit, and with nounset only when asked
        # (stack.sh: NOUNSET), which its functions do not survive.
        return ['set -e',
                '[[ -n "${NOVA_ACCEL_DEVSTACK_DIR:-}" ]] || set -u',
                'NOVA_ACCEL_DIR=$NOVA_ACCEL_REPO',
                'source "$STUB_DIR/devstack_stubs.sh"']

    def run_bash(self, *lines, **env):
        """Run ``lines`` after the stubs, in the test's environment."""
        proc = subprocess.run(
            ['bash', '-c', '\n'.join(self.prologue() + list(lines))],
            env=dict(self.env, **env), capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)

    def recorded(self):
        if not os.path.exists(self.calls):
            return []
        with open(self.calls) as f:
            return [line.rstrip('\n') for line in f]

    def unit(self, service):
        """The systemd unit run_process wrote for ``service``: its
        ``[Service]`` options (dict), or None when there is none."""
        path = os.path.join(self.systemd_dir, 'devstack@%s.service' % service)
        if not os.path.exists(path):
            return None
        return dict(ini_tool.read(path).get('Service', []))

    def ini(self, path):
        self.assertTrue(os.path.exists(path), path)
        return ini_tool.read(path)

    @staticmethod
    def value(ini, section, key):
        values = [v for k, v in ini.get(section, []) if k == key]
        return values[-1] if values else None
