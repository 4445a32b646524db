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

"""The driver side of ``benchmarks.nova_boot``: one child process per
size, started once the machine is quiet, with the load sampled
meanwhile; the child writes its result before the harness's teardown
and is stopped then.
"""

import json
import os
import subprocess
import tempfile
import threading
import time

from benchmarks import common
from benchmarks import run as bench_run
from tools import machine

#: Seconds to wait at most for a quiet machine before a size.
QUIET_WAIT = 300


def write_atomic(path, data):
    """Write ``data`` as JSON to ``path`` (str) at once: a reader sees
    the whole file or none."""
    with open(path + '.part', 'w') as f:
        json.dump(data, f)
    os.replace(path + '.part', path)


def _load_sampler(into, stop):
    while not stop.wait(5):
        into.append(os.getloadavg()[0])


def _wait_quiet(log):
    """Wait up to ``QUIET_WAIT`` s for the 1-minute load average to drop
    to ``benchmarks.run.busy_above`` (half the cores)."""
    limit = bench_run.busy_above(machine.machine_info())
    end = time.monotonic() + QUIET_WAIT
    while os.getloadavg()[0] > limit and time.monotonic() < end:
        time.sleep(5)
    log('load %.1f (quiet at %.1f)' % (os.getloadavg()[0], limit))


def run_size(hosts, args, log):
    """``measure`` in a child process of its own, once the machine is
    quiet or ``QUIET_WAIT`` has passed, with the 1-minute load average
    sampled every 5 s meanwhile; returns its result dict."""
    _wait_quiet(log)
    out = tempfile.NamedTemporaryFile(suffix='.json', delete=False).name
    loads, stop = [os.getloadavg()[0]], threading.Event()
    sampler = threading.Thread(target=_load_sampler, args=(loads, stop),
                               daemon=True)
    sampler.start()
    t0 = time.monotonic()
    os.unlink(out)
    with open(out + '.log', 'wb') as fh:
        child = subprocess.Popen(
            [common.PY, '-m', 'benchmarks.nova_boot', '--size', str(hosts),
             '--boots', str(args.boots), '--concurrent',
             str(args.concurrent), '--rounds', str(args.rounds), '--out',
             out], cwd=common.REPO, stdout=fh, stderr=subprocess.STDOUT)
        # The result is in before the harness's teardown (500 nova-compute
        # services take over 30 minutes to stop and measure nothing).
        while child.poll() is None and not os.path.exists(out):
            time.sleep(1)
        if child.poll() is None:
            child.kill()
        rc = child.wait()
    stop.set()
    loads.append(os.getloadavg()[0])
    try:
        with open(out) as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        result = {'hosts': hosts, 'errors': ['no result (rc %d): %s; log '
                                             '%s.log' % (rc, e, out)]}
    result['load'] = {'start': loads[0], 'end': loads[-1],
                      'max': max(loads), 'mean': sum(loads) / len(loads)}
    result['seconds'] = time.monotonic() - t0
    log('%d hosts: %.0f s, load %.1f -> %.1f (max %.1f), errors %d'
        % (hosts, result['seconds'], loads[0], loads[-1], max(loads),
           len(result['errors'])))
    return result
