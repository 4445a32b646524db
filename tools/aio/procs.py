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

"""Processes of the all-in-one cloud: started detached, found again by
``down`` from the run's ``state.json``, stopped by process group.

Each process gets its own session (so its whole group - gunicorn workers,
Erlang helpers - is stopped together) and logs to ``logs/<name>.log``.
A process is recorded with its start time from ``/proc`` so that ``down``
never signals an unrelated process that reused the PID.
"""

import os
import signal
import subprocess
import time


class ProcessFailed(RuntimeError):
    """A command or service failed; ``log`` is the path of its output."""

    def __init__(self, message, log=None):
        super().__init__(message)
        self.log = log


def start_time(pid):
    """Start time of ``pid`` in clock ticks since boot, or None if gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces and parentheses.
    fields = stat[stat.rindex(')') + 2:].split()
    if fields[0] == 'Z':
        return None
    return int(fields[19])


def alive(record):
    """Whether the process of ``record`` (``{'pid', 'start'}``) runs."""
    _reap(record['pid'])
    return start_time(record['pid']) == record['start']


def _reap(pid):
    # Our own child (``up`` and ``down`` in one process): collect it, or
    # it stays a zombie that looks alive.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def spawn(name, argv, log_dir, env=None, cwd=None, user=None):
    """Start ``argv`` detached; returns its record (dict for state.json).

    :param user: run as this system user (for PostgreSQL when root).
    """
    log_path = os.path.join(log_dir, name + '.log')
    with open(log_path, 'ab') as log:
        kwargs = {}
        if user is not None:
            kwargs.update(user=user, group=user, extra_groups=[])
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True, **kwargs)
    for _ in range(50):
        started = start_time(proc.pid)
        if started is not None:
            break
        if proc.poll() is not None:
            raise ProcessFailed('%s exited at once with %s' % (
                name, proc.returncode), log_path)
        time.sleep(0.01)
    return {'name': name, 'pid': proc.pid, 'start': started,
            'log': log_path, 'argv': list(argv)}


def stop(record, timeout=20):
    """SIGTERM the process group of ``record``, SIGKILL after ``timeout``.

    :returns: True if something was running.
    """
    if not alive(record):
        _kill_group(record['pid'], signal.SIGKILL)  # leftovers of the group
        return False
    _kill_group(record['pid'], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(record):
            break
        time.sleep(0.1)
    # Whatever is left of the group (a worker that ignored SIGTERM).
    _kill_group(record['pid'], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while alive(record) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv, log_path, env=None, cwd=None, timeout=600, user=None,
        check=True):
    """Run a command to completion, appending its output to ``log_path``.

    :returns: its output (str).
    :raises ProcessFailed: non-zero exit (with ``check``) or timeout.
    """
    kwargs = {}
    if user is not None:
        kwargs.update(user=user, group=user, extra_groups=[])
    try:
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, **kwargs)
    except subprocess.TimeoutExpired as e:
        raise ProcessFailed('%s timed out after %ss' % (argv[0], timeout),
                            log_path) from e
    with open(log_path, 'a') as log:
        log.write('$ %s\n%s%s' % (' '.join(argv), proc.stdout, proc.stderr))
    if check and proc.returncode != 0:
        raise ProcessFailed('%s failed (%d): %s' % (
            ' '.join(argv), proc.returncode,
            (proc.stderr or proc.stdout).strip()[-2000:]), log_path)
    return proc.stdout


def tail(path, lines=40):
    try:
        with open(path, 'rb') as f:
            text = f.read().decode('utf-8', 'replace')
    except OSError:
        return ''
    return '\n'.join(text.splitlines()[-lines:])
