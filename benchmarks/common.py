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

"""Pieces every measure shares: statistics and the floors (an HTTP round
trip and a commit).

The servers themselves (Placement, the Nova stub, ``accel-backend``), the
recorded sysfs trees they discover (``tools.fixtures.sysfs``) and the
accelerator API client (``tools.fixtures.accel_client``) are in
``tools.fixtures``, which the tests and ``tools.compare_cyborg`` share:
the benchmarks import ``tools``, never the other way round.  Everything
listens on 127.0.0.1 on free ports and lives in a temporary directory the
caller owns.
"""

import os
import shutil
import sqlite3
import sys
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable


# -- statistics --------------------------------------------------------

#: The databases the measures run on, in the order reports list them.
DATABASES = ('sqlite', 'postgresql')


def percentile(values, pct):
    """Linear-interpolated percentile (``pct`` in 0..100) of a non-empty
    list; None for an empty one."""
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * pct / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summary(values_s):
    """``{n, p50, p95, p99, min, max}`` in milliseconds from seconds."""
    ms = [v * 1000.0 for v in values_s]
    return {'n': len(ms), 'p50': percentile(ms, 50),
            'p95': percentile(ms, 95), 'p99': percentile(ms, 99),
            'min': min(ms) if ms else None, 'max': max(ms) if ms else None,
            'samples_ms': ms}


def ratio(a, b):
    """``a / b``, or None when either is missing or zero."""
    return None if not a or not b else a / b


def not_measured(res):
    """Whether a measure's result is ``{'not_measured': reason, ...}``."""
    return isinstance(res, dict) and 'not_measured' in res


# -- floors ----------------------------------------------------------------

class SQLiteCommitFloor:
    """One INSERT + COMMIT on a SQLite file with accel_backend's pragmas
    (WAL, foreign keys, busy timeout)."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False)
        for p in ('journal_mode=WAL', 'foreign_keys=ON',
                  'busy_timeout=30000'):
            self.db.execute('PRAGMA ' + p)
        self.db.execute('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY '
                        'KEY, v TEXT)')
        self.db.commit()

    def once(self):
        """One INSERT + COMMIT; returns its seconds."""
        t0 = time.perf_counter()
        self.db.execute('INSERT INTO t (v) VALUES (?)', (str(uuid.uuid4()),))
        self.db.commit()
        return time.perf_counter() - t0

    def close(self):
        self.db.close()


def primitive_samples(client, floor, samples, into=None):
    """Sample the two primitives of every path's floor, alternately: one
    HTTP round trip to the server behind ``client`` answering a trivial
    route (``GET /v2``: the same stack, cheroot, no database), and one
    commit of ``floor`` (same engine and driver as the service).

    :param client: an ``tools.fixtures.accel_client.AccelClient``.
    :param floor: an object with ``once()`` returning a commit's seconds
        (``SQLiteCommitFloor``, ``roundtrip.PostgresCommitFloor``).
    :param samples: how many of each (int).
    :param into: ``{'http': [...], 'commit': [...]}`` to append to (a
        measure that samples between its trials), or None for new lists.
    :returns: ``into`` (seconds).
    :raises RuntimeError: ``GET /v2`` does not answer 200.
    """
    into = {'http': [], 'commit': []} if into is None else into
    for _ in range(samples):
        into['http'].append(client.call('GET', '/v2', ok=(200,))[0])
        into['commit'].append(floor.once())
    return into


def primitives(client, floor, samples=200):
    """``primitive_samples`` summarized: ``{'http': summary, 'commit':
    summary}`` (milliseconds, as ``summary``)."""
    return {k: summary(v) for k, v in primitive_samples(
        client, floor, samples).items()}


def which(name):
    """The path of program ``name`` on PATH, or None."""
    return shutil.which(name)
