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

"""``accel_backend.cmd.runner``: the long-lived commands under real
signals, in a child process running a real cheroot server through
oslo.service's threading backend.

The child's ``Service`` only writes what is called on it to a file: the
runner is what is under test, not the service.
"""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import fixtures
import requests
import testtools

import accel_backend

ROOT = os.path.dirname(os.path.dirname(accel_backend.__file__))

CHILD = textwrap.dedent('''\
    import sys
    import time

    from accel_backend.cmd import runner
    from cheroot import wsgi
    from oslo_config import cfg
    from oslo_log import log as logging

    record_path, mode, port, config_file = sys.argv[1:]
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    conf(['--config-file', config_file])
    logging.setup(conf, 'child')
    record = open(record_path, 'a', buffering=1)
    if mode == 'slowreload':
        def slow(conf, changed):
            record.write('reloading\\n')
            time.sleep(1.5)
        conf.register_mutate_hook(slow)


    class Svc:
        def start(self):
            record.write('start\\n')
            if mode == 'block':
                record.write('blocking\\n')
                time.sleep(600)

        def stop(self):
            record.write('stop\\n')


    def app(environ, start_response):
        start_response('200 OK', [])
        return [b'ok' if environ['PATH_INFO'] == '/'
                else str(conf.debug).encode()]


    server = None if port == 'none' else wsgi.Server(
        ('127.0.0.1', int(port)), app, numthreads=2)
    status = runner.run(conf, runner.Command(Svc(), 'child started',
                                             server=server))
    record.write('returned %d\\n' % status)
    sys.exit(status)
''')


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class RunnerTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.record = os.path.join(self.tmp, 'record')
        self.log = os.path.join(self.tmp, 'log')
        self.config = os.path.join(self.tmp, 'child.conf')
        self.configure(False)

    def configure(self, debug):
        """The child's configuration file: ``[DEFAULT] debug``."""
        with open(self.config, 'w') as f:
            f.write('[DEFAULT]\ndebug = %s\n' % debug)

    def spawn(self, mode='serve', port=None):
        script = os.path.join(self.tmp, 'child.py')
        with open(script, 'w') as f:
            f.write(CHILD)
        env = dict(os.environ, PYTHONPATH=ROOT)
        with open(self.log, 'wb') as log:
            proc = subprocess.Popen(
                [sys.executable, script, self.record, mode,
                 'none' if port is None else str(port), self.config],
                env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def text(self, path):
        if not os.path.exists(path):
            return ''
        with open(path) as f:
            return f.read()

    def wait_for(self, path, marker, proc, timeout=60, count=1):
        deadline = time.monotonic() + timeout
        while self.text(path).count(marker) < count:
            if proc.poll() is not None or time.monotonic() > deadline:
                self.fail('no %r in %s (rc %s):\n%s' % (
                    marker, path, proc.poll(), self.text(self.log)))
            time.sleep(0.05)

    def stopped(self, proc, sig, timeout=20):
        proc.send_signal(sig)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail('still running %ss after signal %d:\n%s' % (
                timeout, sig, self.text(self.log)))

    def test_sigterm_stops_server_then_service(self):
        port = _free_port()
        proc = self.spawn(port=port)
        self.wait_for(self.log, 'child started', proc)
        self.assertEqual(
            b'ok', requests.get('http://127.0.0.1:%d/' % port, timeout=10)
            .content)
        self.assertEqual(0, self.stopped(proc, signal.SIGTERM))
        # oslo.service exits from the handler: run() does not return.
        self.assertEqual('start\nstop\n', self.text(self.record))
        self.assertIn('Graceful shutdown', self.text(self.log))
        self.assertRaises(requests.ConnectionError, requests.get,
                          'http://127.0.0.1:%d/' % port, timeout=5)

    def test_sighup_reloads_mutable_options_and_goes_on(self):
        # What logrotate's postrotate does: the process must survive it,
        # with the mutable options (oslo.log's debug) read again.
        port = _free_port()
        url = 'http://127.0.0.1:%d/debug' % port
        proc = self.spawn(port=port)
        self.wait_for(self.log, 'child started', proc)
        self.assertEqual(b'False', requests.get(url, timeout=10).content)
        self.configure(True)
        for count in (1, 2):
            proc.send_signal(signal.SIGHUP)
            self.wait_for(self.log, 'mutable options updated', proc,
                          count=count)
        self.assertIsNone(proc.poll())
        self.assertEqual(b'True', requests.get(url, timeout=10).content)
        self.assertEqual('start\n', self.text(self.record))
        # The signal handlers are in place again: SIGTERM is graceful.
        self.assertEqual(0, self.stopped(proc, signal.SIGTERM))
        self.assertEqual('start\nstop\n', self.text(self.record))

    def test_sighup_during_a_reload_is_held_not_fatal(self):
        # Two logrotate runs close together: the second SIGHUP comes
        # while the first reload reads the files (a slow mutate hook).
        port = _free_port()
        proc = self.spawn(mode='slowreload', port=port)
        self.wait_for(self.log, 'child started', proc)
        self.configure(True)
        proc.send_signal(signal.SIGHUP)
        self.wait_for(self.record, 'reloading', proc)
        proc.send_signal(signal.SIGHUP)
        # Read once more for the held signal, then serving again.
        self.wait_for(self.log, 'mutable options updated', proc, count=2)
        self.assertIsNone(proc.poll())
        self.assertEqual(b'True', requests.get(
            'http://127.0.0.1:%d/debug' % port, timeout=10).content)
        self.assertEqual(0, self.stopped(proc, signal.SIGTERM))

    def test_sigterm_during_start_exits_without_stopping_service(self):
        proc = self.spawn(mode='block')
        self.wait_for(self.record, 'blocking', proc)
        self.assertEqual(0, self.stopped(proc, signal.SIGTERM))
        self.assertEqual('start\nblocking\n', self.text(self.record))
        self.assertIn('Stopped before the start completed',
                      self.text(self.log))

    def test_port_in_use_stops_started_service_and_fails(self):
        with socket.socket() as taken:
            taken.bind(('127.0.0.1', 0))
            taken.listen()
            proc = self.spawn(port=taken.getsockname()[1])
            rc = proc.wait(timeout=60)
        self.assertNotEqual(0, rc)
        self.assertEqual('start\nstop\n', self.text(self.record))
        self.assertIn('OSError', self.text(self.log))


class BackendTest(testtools.TestCase):

    def test_cmd_package_selects_threading_before_oslo_messaging(self):
        # Importing oslo.messaging resolves oslo.service's backend; without
        # accel_backend.cmd choosing first it is eventlet.
        out = subprocess.run(
            [sys.executable, '-c',
             'import accel_backend.cmd, oslo_messaging\n'
             'from oslo_service import backend\n'
             'print(backend.get_backend_type().value)'],
            env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
            text=True, timeout=120, check=True)
        self.assertEqual('threading', out.stdout.strip())
