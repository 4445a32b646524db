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

"""``accel_backend.wsgi.api:application`` under a real gunicorn, as the
install guide tells operators to run it: the configuration from
``OS_ACCEL_BACKEND_CONFIG_DIR``, two worker processes, and behind a
TLS-terminating proxy (``X-Forwarded-Proto``, ``[oslo_middleware]
enable_proxy_headers_parsing``) links that say ``https://``; a browser
on the ``[cors] allowed_origin`` is let in, another is not."""

import os
import shutil
import subprocess
import sys

import fixtures
import requests
import testtools

from accel_backend.db import api as db_api
from tests import waiting
from tools import launch
from tools.launch import gunicorn as launch_gunicorn

APP = 'accel_backend.wsgi.api:application'
CONFIG = """[DEFAULT]
host = wsgi-test
transport_url = fake://
[api]
auth_strategy = noauth
# gunicorn binds 127.0.0.1 here, which accel_backend cannot see.
allow_remote_noauth = true
[database]
connection = sqlite:///%(tmp)s/accel.sqlite
[oslo_middleware]
enable_proxy_headers_parsing = true
[cors]
allowed_origin = https://dashboard.example.org
[placement]
auth_type = admin_token
token = admin
endpoint = http://placement.invalid
[nova]
auth_type = admin_token
token = admin
endpoint = http://nova.invalid/v2.1
"""


class WSGIApplicationTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        with open(os.path.join(self.tmp, 'accel-backend.conf'), 'w') as f:
            f.write(CONFIG % {'tmp': self.tmp})
        self.log = os.path.join(self.tmp, 'gunicorn.log')

    def serve(self):
        """gunicorn with two workers; returns its base URL."""
        port = launch.free_port()
        gunicorn = shutil.which('gunicorn', path=os.path.dirname(
            sys.executable)) or 'gunicorn'
        env = dict(os.environ, OS_ACCEL_BACKEND_CONFIG_DIR=self.tmp)
        with open(self.log, 'wb') as log:
            proc = subprocess.Popen(
                launch_gunicorn.argv(gunicorn, APP, port, workers=2),
                env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.terminate)
        url = 'http://127.0.0.1:%d' % port

        def up():
            if proc.poll() is not None:
                raise AssertionError('gunicorn exited: %s' % self.text())
            try:
                return requests.get(url + '/v2', timeout=5).ok
            except (requests.ConnectionError, requests.Timeout):
                return False  # not listening yet, or a worker booting
        waiting.wait_for('gunicorn serving %s' % APP, up, 60)
        return url, proc

    def text(self):
        with open(self.log) as f:
            return f.read()

    def test_serves_the_api_with_the_documented_configuration(self):
        db = db_api.Database('sqlite:///%s/accel.sqlite' % self.tmp)
        db.sync()
        db.dispose()
        url, _ = self.serve()
        resp = requests.get(url + '/v2', timeout=10)
        self.assertEqual('v2.0', resp.json()['id'])
        self.assertEqual(url + '/v2/', resp.json()['links'][0]['href'])
        proxied = requests.get(url + '/v2', timeout=10, headers={
            'X-Forwarded-Proto': 'https'}).json()
        self.assertEqual('https://127.0.0.1:%s/v2/' % url.rsplit(':', 1)[1],
                         proxied['links'][0]['href'])
        self.assertEqual(200, requests.get(
            url + '/v2/device_profiles', timeout=10,
            headers={'X-Auth-Token': 'admin'}).status_code)
        # A browser on the configured origin, and on another one.
        preflight = requests.options(url + '/v2/device_profiles', headers={
            'Origin': 'https://dashboard.example.org',
            'Access-Control-Request-Method': 'POST',
            'Access-Control-Request-Headers': 'X-Auth-Token'}, timeout=10)
        self.assertEqual('https://dashboard.example.org',
                         preflight.headers['Access-Control-Allow-Origin'])
        self.assertIn('POST', preflight.headers[
            'Access-Control-Allow-Methods'])
        other = requests.get(url + '/v2', timeout=10, headers={
            'Origin': 'https://elsewhere.example.org'})
        self.assertNotIn('Access-Control-Allow-Origin', other.headers)
        health = requests.get(url + '/healthcheck', timeout=10)
        self.assertEqual((200, 'database OK'),
                         (health.status_code, health.text.strip()))

    def test_refuses_a_database_that_was_never_synced(self):
        port = launch.free_port()
        gunicorn = shutil.which('gunicorn', path=os.path.dirname(
            sys.executable)) or 'gunicorn'
        env = dict(os.environ, OS_ACCEL_BACKEND_CONFIG_DIR=self.tmp)
        proc = subprocess.run(
            launch_gunicorn.argv(gunicorn, APP, port), env=env,
            capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL)
        self.assertNotEqual(0, proc.returncode)
        self.assertIn('run accel-backend-manage db sync', proc.stdout +
                      proc.stderr)
