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
memory and CPU time (psutil, from ``/proc``) and its Prometheus
metrics."""

from prometheus_client import parser as prom_parser
import psutil
import requests

PLACEMENT_CALLS = 'accel_placement_request_seconds_count'


def _tree(pid):
    """Process ``pid`` and its live descendants (``psutil.Process``
    list); empty when it is gone."""
    try:
        proc = psutil.Process(pid)
        return [proc] + proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def rss_mib(pid):
    """Resident memory (RSS) of process ``pid`` and its live
    descendants, MiB (float)."""
    total = 0
    for proc in _tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2.0 ** 20


def cpu_seconds(pid, tree=False):
    """User + system CPU seconds process ``pid`` used so far (float).

    :param tree: also count the children it reaped and its live
        descendants (a server's workers, PostgreSQL's backends); a
        process that is gone then counts 0.0.
    :raises psutil.NoSuchProcess: without ``tree``, ``pid`` is gone.
    """
    if not tree:
        times = psutil.Process(pid).cpu_times()
        return times.user + times.system
    total = 0.0
    for proc in _tree(pid):
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += sum((times.user, times.system, times.children_user,
                      times.children_system))
    return total


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
