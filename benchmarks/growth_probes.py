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

"""What ``benchmarks.growth`` reads of a running process: its resident
memory and CPU time (``/proc``) and its Prometheus metrics."""

import os

from prometheus_client import parser as prom_parser
import requests

#: The sample counting an agent's Placement calls (``accel_backend
#: .metrics.PLACEMENT_SECONDS``, one observation per call).
PLACEMENT_CALLS = 'accel_placement_request_seconds_count'


def rss_mib(pid):
    """Resident memory (``VmRSS``) of process ``pid`` and its
    descendants, MiB (float)."""
    total = 0
    for p in [pid] + _descendants(pid):
        try:
            with open('/proc/%d/status' % p) as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total / 1024.0


def _descendants(pid):
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            kids = [int(k) for k in f.read().split()]
    except FileNotFoundError:
        return []
    return kids + [d for k in kids for d in _descendants(k)]


def cpu_seconds(pid):
    """User + system CPU seconds process ``pid`` used so far (float)."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def scrape(port):
    """``{metric sample name: summed value}`` of the ``/metrics`` on
    ``port``, or None when it does not answer; ``placement_by_call``:
    ``{'<method> <status>': calls}`` of the Placement calls."""
    try:
        text = requests.get('http://127.0.0.1:%d/metrics' % port,
                            timeout=5).text
    except requests.RequestException:
        return None
    out, calls = {}, {}
    for family in prom_parser.text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0) + s.value
            if s.name == PLACEMENT_CALLS:
                key = '%(method)s %(status)s' % s.labels
                calls[key] = calls.get(key, 0) + int(s.value)
    out['placement_by_call'] = calls
    return out


def by_call(scrapes):
    """``{'<method> <status>': calls}`` summed over ``scrapes`` (what
    :func:`scrape` returned for each host)."""
    out = {}
    for got in scrapes:
        for key, n in got['placement_by_call'].items():
            out[key] = out.get(key, 0) + n
    return out


def memory(cloud):
    """Resident memory, MiB: ``{'agents': [...], 'apis': [...],
    'conductor': x}``."""
    return {'agents': [rss_mib(a.proc.pid)
                       for a in cloud.agents.values()],
            'apis': [rss_mib(a.proc.pid) for a in cloud.apis],
            'conductor': rss_mib(cloud.conductor.proc.pid)}
