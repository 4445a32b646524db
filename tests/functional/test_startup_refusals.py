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

"""A process that refuses to start says why where an operator looks:

* on standard error, which systemd's journal keeps, and in the log file
  of ``[DEFAULT] log_file`` when one is set (the console scripts run as
  their own processes, as a unit runs them);
* the API refuses ``[api] auth_strategy = noauth`` where other hosts can
  reach it, with one rule (``accel_backend.conf.noauth.refusal``) for the
  cheroot server and the WSGI application, and ``[api]
  allow_remote_noauth`` as the operator's explicit opt-in.
"""

import os
import subprocess
import sys

import fixtures
import testtools

from accel_backend import conf as conf_mod
from accel_backend.conf import noauth
from accel_backend.db import api as db_api

#: Enough for the API and conductor roles to get to their start checks.
CONFIG = """[DEFAULT]
host = refusal-test
state_path = %(tmp)s
transport_url = fake://
%(default)s
[api]
%(api)s
[database]
connection = sqlite:///%(tmp)s/accel.sqlite
[placement]
auth_type = admin_token
token = admin
endpoint = http://placement.invalid
[nova]
auth_type = admin_token
token = admin
endpoint = http://nova.invalid/v2.1
"""

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')


class _Processes(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.log = os.path.join(self.tmp, 'accel.log')

    def write_conf(self, default='', api='', extra=''):
        path = os.path.join(self.tmp, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(CONFIG % {'tmp': self.tmp, 'default': default,
                              'api': api} + extra)
        return path

    def sync(self):
        db = db_api.Database('sqlite:///%s/accel.sqlite' % self.tmp)
        db.sync()
        db.dispose()

    def python(self, args, env=None):
        """``python args`` from the checkout; returns the
        ``CompletedProcess`` (text)."""
        return subprocess.run(
            [sys.executable] + args, cwd=ROOT, capture_output=True,
            text=True, timeout=120, stdin=subprocess.DEVNULL,
            env=dict(os.environ, **(env or {})))

    def log_text(self):
        with open(self.log) as f:
            return f.read()


class RefusalOnStderrAndLogTest(_Processes):
    """With ``[DEFAULT] log_file`` oslo.log writes only the file: the
    refusal must reach standard error too (issue 51)."""

    def refuse(self, module, conf):
        proc = self.python(['-m', module, '--config-file', conf])
        self.assertNotEqual(0, proc.returncode, proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        return proc.stderr

    def test_conductor_and_api_refuse_a_database_never_synced(self):
        conf = self.write_conf(default='log_file = %s' % self.log)
        # accel_backend.cmd.runner.main, accel_backend.cmd.server.main.
        for module, prog in (
                ('accel_backend.cmd.conductor', 'accel-backend-conductor'),
                ('accel_backend.cmd.api', 'accel-backend-api')):
            err = self.refuse(module, conf)
            why = ('%s refuses to start: the database schema is at '
                   'revision none, this release needs ' % prog)
            self.assertIn(why, err)
            self.assertIn('run accel-backend-manage db sync', err)
            self.assertIn(why, self.log_text())

    def test_an_invalid_option_of_the_service(self):
        # oslo.config checks a value when it is read, after
        # logging.setup: here while the service is built.
        self.sync()
        conf = self.write_conf(default='log_file = %s' % self.log,
                               extra='[binding]\nworkers = many\n')
        err = self.refuse('accel_backend.cmd.conductor', conf)
        why = ('accel-backend-conductor refuses to start: Value for option '
               'workers from LocationInfo')
        self.assertIn(why, err)
        self.assertIn(why, self.log_text())

    def test_an_invalid_option_of_the_command(self):
        # Read by the command itself (accel_backend.cmd.one_line_errors).
        conf = self.write_conf(default='log_file = %s' % self.log,
                               api='host_ip = not an address')
        err = self.refuse('accel_backend.cmd.api', conf)
        # (<program>: is api.py under python -m.)
        why = ('api.py: configuration error: Value for option host_ip '
               'from LocationInfo')
        self.assertIn(why, err)
        self.assertIn(why, self.log_text())

    def test_noauth_refusal_of_the_cheroot_server(self):
        conf = self.write_conf(default='log_file = %s' % self.log,
                               api='auth_strategy = noauth')
        err = self.refuse('accel_backend.cmd.api', conf)
        why = ('accel-backend-api refuses to start: [api] auth_strategy = '
               'noauth is for local use only, and [api] host_ip = 0.0.0.0 '
               'serves other hosts')
        self.assertIn(why, err)
        self.assertIn(why, self.log_text())


class WSGINoauthTest(_Processes):
    """``accel_backend.wsgi.api:application`` as gunicorn or uwsgi load
    it: the module import builds it (``init_application``)."""

    LOAD = ('from accel_backend.wsgi import api; '
            'print("application", callable(api.application))')

    def load(self, api):
        self.write_conf(default='log_file = %s' % self.log, api=api)
        return self.python(['-c', self.LOAD],
                           env={'OS_ACCEL_BACKEND_CONFIG_DIR': self.tmp})

    def test_noauth_is_refused_without_the_opt_in(self):
        self.sync()
        proc = self.load('auth_strategy = noauth')
        self.assertNotEqual(0, proc.returncode)
        why = ('accel_backend.wsgi.api refuses to start: [api] '
               'auth_strategy = noauth is for local use only, and under a '
               'WSGI server accel_backend cannot tell which addresses the '
               'server listens on; set auth_strategy = keystone, or [api] '
               'allow_remote_noauth = true')
        # Standard error (the WSGI server's error log), and the log file
        # (where oslo.log's excepthook also sends the exception).
        self.assertIn(why, proc.stderr)
        self.assertIn(why, self.log_text())
        self.assertIn('oslo_config.cfg.Error: ' + why, self.log_text())
        self.assertNotIn('application True', proc.stdout)

    def test_noauth_with_the_opt_in_builds_the_application(self):
        self.sync()
        proc = self.load('auth_strategy = noauth\n'
                         'allow_remote_noauth = true')
        self.assertEqual((0, 'application True\n'),
                         (proc.returncode, proc.stdout), proc.stderr)


class NoauthRuleTest(testtools.TestCase):
    """``accel_backend.conf.noauth.refusal``, the rule of both API servers."""

    def conf(self, **api):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'a.conf')
        with open(path, 'w') as f:
            f.write('[api]\n' + ''.join('%s = %s\n' % kv
                                        for kv in api.items()))
        return conf_mod.new_conf(['--config-file', path])

    def test_rule(self):
        keystone = self.conf()
        noauth_conf = self.conf(auth_strategy='noauth')
        allowed = self.conf(auth_strategy='noauth',
                            allow_remote_noauth='true')
        for host in ('0.0.0.0', '10.0.0.5', '::', 'api.example.org', None):
            self.assertIsNone(noauth.refusal(keystone, host))
            self.assertIsNone(noauth.refusal(allowed, host))
            self.assertIn('allow_remote_noauth = true',
                          noauth.refusal(noauth_conf, host))
        for host in ('127.0.0.1', '127.0.0.2', '::1', 'localhost'):
            self.assertIsNone(noauth.refusal(noauth_conf, host))
