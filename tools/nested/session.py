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

"""A running L1 compute node that the machine drives: services started
in it, commands run in it, while the control plane stays on the machine.

``Session`` boots L1 (``node.NestedNode``) with a job that

* forwards each TCP port of ``forward_ports`` from L1's loopback to the
  machine's (``socat``, L1 ``127.0.0.1:P`` -> slirp ``10.0.2.2:P`` ->
  machine ``127.0.0.1:P``), so the configs, the Keystone catalog and the
  database URLs the control plane uses are valid in L1 unchanged;
* runs every script the machine drops into its ``cmd/`` directory on the
  shared filesystem and answers with ``<n>.out`` and ``<n>.rc`` (9p is
  uncached: both sides see a rename at once);
* powers L1 off when ``session.stop`` appears.

Nothing in L1 outlives the session: ``stop`` (also on error and Ctrl-C
through the context manager) asks L1 to power off and kills QEMU if it
has not within its timeout.  Python in L1 runs about 10 times slower than
on the machine (TCG): timeouts here are generous by design.
"""

import itertools
import os
import shlex
import subprocess
import time
import uuid

from tools.nested import node as node_mod

JOB = r'''mkdir -p cmd logs
for port in %(ports)s; do
    setsid socat TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr \
        TCP:10.0.2.2:$port > logs/forward-$port.log 2>&1 < /dev/null &
done
echo ready > session.ready
while [ ! -e session.stop ]; do
    for f in cmd/*.sh; do
        [ -e "$f" ] || continue
        n=${f%%.sh}
        mv "$f" "$n.run"
        ( /bin/sh "$n.run" > "$n.out" 2>&1 < /dev/null
          echo $? > "$n.rc.tmp"; mv "$n.rc.tmp" "$n.rc" ) &
    done
    sleep 0.3
done
'''


class CommandFailed(node_mod.NestedError):
    """A command in L1 exited non-zero; ``output`` holds what it printed."""

    def __init__(self, message, output):
        super().__init__(message)
        self.output = output


class Session:
    """L1, up until ``stop``.

    :param out: directory shared with L1 (created; kept after the
        session: ``console.log``, ``logs/<name>.log`` of the services).
    :param forward_ports: TCP ports (ints) of the machine's loopback that
        L1 reaches on its own loopback.
    :param node: ``node.NestedNode`` (default: the default layout).
    :param log: callable(str) for progress lines.
    """

    def __init__(self, out, forward_ports=(), node=None, log=print):
        self.out = out
        self.ports = sorted(set(forward_ports))
        self.node = node or node_mod.NestedNode(log=log)
        self.log = log
        self.proc = None
        self.pid = None
        self._ids = itertools.count(1)

    @classmethod
    def attach(cls, out, pid, log=print):
        """The session whose QEMU runs as ``pid`` with shared directory
        ``out``, started by another process (``stop`` is then that
        process's business: this one only runs commands)."""
        session = cls(out, log=log)
        session.pid = pid
        return session

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def path(self, *parts):
        """A path under the shared directory (str)."""
        return os.path.join(self.out, *parts)

    def start(self, timeout=300):
        """Boot L1 and wait for its job to run.

        :param timeout: seconds until L1 must be ready.
        :raises node.NestedError: QEMU missing, memory short, L1 stopped
            or not ready in time (with the end of its console).
        """
        os.makedirs(self.path('cmd'), exist_ok=True)
        os.makedirs(self.path('logs'), exist_ok=True)
        for attempt in range(1, node_mod.BOOT_TRIES + 1):
            t0 = time.monotonic()
            with open(self.path('qemu.log'), 'ab') as qemu_log:
                self.proc = self.node.start(
                    JOB % {'ports': ' '.join(str(p) for p in self.ports)},
                    self.out, stdout=qemu_log)
            self.pid = self.proc.pid
            try:
                # A kernel that stops before its init is booted again
                # (node.BOOT_TRIES).
                if not self.node.wait_for_init(
                        self.proc, self.out,
                        min(node_mod.BOOT_TIMEOUT, timeout), attempt):
                    self.proc = None
                    continue
                while not os.path.exists(self.path('session.ready')):
                    self._check_alive()
                    if time.monotonic() - t0 > timeout:
                        raise node_mod.NestedError(
                            'L1 was not ready within %d s; console ends '
                            'with:\n%s' % (timeout, self.console_tail()))
                    time.sleep(0.5)
            except BaseException:
                self.stop(timeout=0)
                raise
            self.log('nested: L1 is up in %.0f s (forwarding ports %s)' % (
                time.monotonic() - t0, ', '.join(map(str, self.ports)) or
                'none'))
            return

    def alive(self):
        """Whether L1's QEMU runs."""
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and os.path.exists('/proc/%d' % self.pid)

    def _check_alive(self):
        if not self.alive():
            raise node_mod.NestedError(
                'L1 is not running (QEMU status %s); console ends with:\n%s'
                % (None if self.proc is None else self.proc.returncode,
                   self.console_tail()))

    def console_tail(self, lines=30):
        """The last ``lines`` lines of L1's serial console (str)."""
        return node_mod._tail(self.out, 'console.log', lines)

    def sh(self, script, timeout=600, check=True):
        """Run shell ``script`` as root in L1 and wait for it.

        :param timeout: seconds.
        :param check: raise when it exits non-zero.
        :returns: ``(exit status, output)`` (int, str).
        :raises CommandFailed: non-zero exit with ``check``.
        :raises node.NestedError: L1 died or the command ran past
            ``timeout``.
        """
        # Unique across processes and sessions of one process (``attach``):
        # an earlier command's answer must never be taken for this one's.
        n = 'c%04d-%s' % (next(self._ids), uuid.uuid4().hex[:12])
        tmp = self.path('cmd', n + '.tmp')
        with open(tmp, 'w') as f:
            f.write(script)
        os.rename(tmp, self.path('cmd', n + '.sh'))
        rc_path = self.path('cmd', n + '.rc')
        deadline = time.monotonic() + timeout
        while not os.path.exists(rc_path):
            self._check_alive()
            if time.monotonic() > deadline:
                raise node_mod.NestedError(
                    'command %s in L1 ran past %d s: %s' % (
                        n, timeout, script.strip()[:200]))
            time.sleep(0.2)
        with open(rc_path) as f:
            rc = int(f.read().strip() or 255)
        output = node_mod._read(self.path('cmd'), n + '.out')
        if check and rc:
            raise CommandFailed('command in L1 exited %d: %s\n%s' % (
                rc, script.strip()[:200], output[-2000:]), output)
        return rc, output

    def spawn(self, name, command, env=None):
        """Start ``command`` (a shell command line) in L1 in the
        background, in a session of its own; its output goes to
        ``logs/<name>.log`` of the shared directory and, when it ends, its
        exit status to ``logs/<name>.exit`` (``exited``).

        :param env: ``{name: value}`` exported for it.
        :returns: the log's path on the machine.
        """
        exports = ''.join('export %s=%s\n' % (k, shlex.quote(str(v)))
                          for k, v in sorted((env or {}).items()))
        log = 'logs/%s.log' % name
        wrapped = '%s; echo $? > logs/%s.exit' % (command, name)
        self.sh('%ssetsid sh -c %s > %s 2>&1 < /dev/null &\n' % (
            exports, shlex.quote(wrapped), log), timeout=120)
        return self.path(log)

    def exited(self, name):
        """The exit status (int) of the background command ``name`` once
        it has ended, else None."""
        try:
            with open(self.path('logs', name + '.exit')) as f:
                return int(f.read().strip() or 255)
        except OSError:
            return None

    def stop(self, timeout=60):
        """Power L1 off (everything in it stops with it); kill QEMU after
        ``timeout`` seconds.  Idempotent."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with open(self.path('session.stop'), 'w') as f:
                f.write('stop\n')
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
            except KeyboardInterrupt:
                node_mod.kill(self.proc)
                raise
        if self.proc.poll() is None:
            node_mod.kill(self.proc)
        self.proc = None
