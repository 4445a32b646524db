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

"""nova-compute of the nested compute node restarted under running
guests, as a service manager restarts it, in two steps: ``prepare``
starts the new process, which imports its modules behind a gate of its
own (``tools.aio.l1_gate``) while the old one still serves;
``restart_compute`` stops the old one and opens the gate.

Measured on 2 cores, the life-cycle scenario of ``tests/nested``: 215 s
from the stop until the new process served when it was started after the
stop (CI's nested tier), 112 s with ``prepare`` called while the guest
boots (the scenario 460 s against 600).
"""

import datetime
import shlex
import time

from tools.aio import nested
from tools.aio import procs


def prepare(cloud, sess):
    """Start the nova-compute that ``restart_compute`` will put in place
    of L1's running one: it imports its modules now, behind a gate of its
    own (``tools.aio.l1_gate``), while the old one still serves.  Its
    import takes about 100 s of Python under TCG: a test that starts it
    while L1 idles (while the control plane schedules a server) saves
    that time from the restart.  Not while a guest boots: two busy vCPUs
    of L1 under TCG slow each other (the life-cycle scenario's guest took
    272 s from ACTIVE to its listing so, against 141 s).

    :param cloud: ``tools.aio.cloud.Cloud`` with a nested compute node.
    :param sess: its ``tools.nested.session.Session``.
    :returns: ``{'name', 'gate', 'log', 'old'}``: the replacement's
        background command name, gate path and log, and the PIDs (ints)
        in L1 of the nova-compute it replaces (its process and the shell
        that started it).
    :raises tools.aio.procs.ProcessFailed: no nova-compute runs in L1.
    """
    _, out = sess.sh('pgrep -f "bin/nova-compute " || true\n', timeout=60)
    old = [int(pid) for pid in out.split() if pid.isdigit()]
    if not old:
        raise procs.ProcessFailed('no nova-compute runs in L1 to restart',
                                  None)
    name = 'nova-compute-restart-%d' % int(time.time() * 1000)
    gate = sess.path(name + '.go')
    paths = nested.write_configs(cloud.layout)
    command = dict(nested.l1_services(cloud.layout, paths, gate=gate))[
        'nova-compute']
    log = sess.spawn(name, command, env=nested.l1_env(cloud.layout))
    return {'name': name, 'gate': gate, 'log': log, 'old': old}


def kill_on_log_line(sess, replacement, line, log='nova-compute'):
    """Have L1 SIGKILL the nova-compute ``replacement`` is to replace the
    moment its log shows ``line``, as a crash at that point would: a
    watcher in L1 follows the log (no round trip through the host), so
    the process dies within milliseconds of writing the line.  Then
    ``restart_compute`` starts the replacement (its stop finds the old
    process gone).

    :param sess: the ``tools.nested.session.Session``.
    :param replacement: ``prepare``'s answer (its ``old`` PIDs).
    :param line: a fixed string (str) of the log line.
    :param log: the background command whose log to follow.
    :returns: the watcher's background command name (``sess.exited``
        says when it has killed).
    """
    name = 'kill-%s-%d' % (log, int(time.time() * 1000))
    pids = ' '.join(str(pid) for pid in replacement['old'])
    # grep quits at the first match; the kill is on the pipeline's right
    # side, so it does not wait for tail, which only ends on its next
    # write (the log's writer is dead by then: a timeout ends it).
    sess.spawn(name, 'timeout 900 tail -n0 -s 0.1 -F logs/%s.log | '
               '{ grep -m1 -F -e %s >/dev/null && kill -KILL %s; }' % (
                   log, shlex.quote(line), pids))
    return name


def alive(sess, pids):
    """The PIDs (ints) of ``pids`` still running in L1."""
    _, out = sess.sh('for p in %s; do kill -0 $p 2>/dev/null && echo $p; '
                     'done; true\n' % ' '.join(str(p) for p in pids),
                     timeout=60)
    return [int(p) for p in out.split() if p.isdigit()]


def restart_compute(cloud, sess, token, say=print, replacement=None):
    """Stop nova-compute in L1 as a service manager does (SIGTERM, then
    SIGKILL after 60 s) and start it again with the same configuration;
    return once it is serving again.

    The new process is ``replacement`` (``prepare``'s answer; one is
    prepared here when None): its ``main()`` runs once the old process is
    gone, as a service manager's restart would run it.

    "Serving" is the service record's ``updated_at`` moving past the
    moment the old process was gone: Nova's ``Service.start`` runs
    ``init_host`` and the first resource update (``pre_start_hook``)
    before its first state report.

    :param cloud: ``tools.aio.cloud.Cloud`` with a nested compute node.
    :param sess: its ``tools.nested.session.Session``.
    :param token: an admin token (str) for the compute API.
    :returns: seconds from the stop until it served again (float).
    :raises tools.aio.procs.ProcessFailed: the new nova-compute exited
        or did not report within ``nested.L1_START_TIMEOUT`` seconds.
    """
    layout = cloud.layout
    if replacement is None:
        replacement = prepare(cloud, sess)
    name = replacement['name']
    start = time.monotonic()
    pids = ' '.join(str(pid) for pid in replacement['old'])
    sess.sh('kill -TERM %(p)s 2>/dev/null || true\n'
            'for i in $(seq 60); do alive=""\n'
            '  for p in %(p)s; do kill -0 $p 2>/dev/null && alive=1; done\n'
            '  [ -z "$alive" ] && exit 0; sleep 1\n'
            'done\n'
            'kill -KILL %(p)s 2>/dev/null || true\n' % {'p': pids},
            timeout=120)
    # Taken once the old process is gone: while it shuts down gracefully
    # it still reports its state.
    stopped = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    say('nested: nova-compute of L1 stopped; starting it again')
    with open(replacement['gate'], 'w') as f:
        f.write('the old nova-compute is gone\n')

    def serving():
        status = sess.exited(name)
        if status is not None:
            raise procs.ProcessFailed(
                'nova-compute in L1 exited with %d' % status,
                replacement['log'])
        got, _ = cloud.http('GET', layout.url(
            'nova_api', '/v2.1/os-services?binary=nova-compute&host=%s' %
            nested.L1_HOST), token=token)
        service, = got['services']
        return service['updated_at'] and datetime.datetime.fromisoformat(
            service['updated_at'].rstrip('Z')) > stopped
    cloud.wait_for('nova-compute of L1 after its restart', serving,
                   timeout=nested.L1_START_TIMEOUT, interval=3)
    took = time.monotonic() - start
    say('nested: nova-compute of L1 serves again %.0f s after its stop' %
        took)
    return took
