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

"""Pieces every measure shares: statistics, child processes, recorded sysfs
trees, the accelerator API client and the commit floor.

The servers themselves (Placement, the Nova stub, ``accel-backend``) are the
fixtures of ``tools.fixtures``, as in the tests.  Everything listens on
127.0.0.1 on free ports and lives in a temporary directory the caller
owns.
"""

import json
import os
import shutil
import sqlite3
import sys
import time
import uuid

import requests

from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

# One set of headers for both accel_backend (noauth) and upstream Cyborg
# (no keystone, identity from headers): the same client code talks to both.
PROJECT_ID = '6b5b2ad1c5b24a0f9d3fb0f8f9a3c001'
USER_ID = 'a3c0e8e2a2b84f0fa5d0c4b1e6f7a002'
ACCEL_HEADERS = {
    'X-Auth-Token': 'admin',
    'X-Roles': 'admin,member,reader',
    'X-Service-Roles': 'service',
    'X-User-Id': USER_ID,
    'X-Project-Id': PROJECT_ID,
    'Content-Type': 'application/json',
    'Accept': 'application/json',
}


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


# -- accel-backend ---------------------------------------------------------

def accel_backend(workdir, placement, stub, name, sysfs, devices=None,
                  connection=None, api_workers=8, binding_workers=4,
                  timeout=180, spec=None):
    """Start ``accel-backend`` (``tools.fixtures.accel_backend``) for a
    measure: host ``name``, files in ``<workdir>/<name>``, the GPUs of
    ``sysfs`` (``make_sysfs``), reporting to ``placement`` (a started
    ``PlacementServer``) under a compute node provider created for it,
    events to ``stub`` (a started ``NovaStub``).

    :param devices: wait (up to ``timeout`` seconds) until that many GPUs
        are stored and reported, so that measuring starts on a quiet
        service; None: only until the API answers.
    :param connection: SQLAlchemy URL; default a SQLite file.
    :param spec: the ``[discovery] device_spec`` (dict); default
        ``GPU_SPEC``.
    :returns: the started fixture (``cleanUp()`` stops it; ``root`` is its
        URL).
    :raises AssertionError: it does not start or report in time.
    """
    backend = accel_fx.AccelBackendServer(
        placement.endpoint, stub.endpoint, sysfs, [spec or GPU_SPEC],
        host=name, workdir=workdir, connection=connection,
        options={'api': {'workers': api_workers},
                 'binding': {'workers': binding_workers},
                 'nova': {'event_retry_timeout': 60}},
        start_timeout=60)
    root_rp = placement.create_provider(name)
    tools_fixtures.start(backend)
    if devices:
        try:
            backend.wait_for_devices(devices, timeout=timeout,
                                     placement=placement,
                                     root_rp=root_rp)
        except BaseException:
            backend.cleanUp()
            raise
    return backend


# -- recorded sysfs trees ----------------------------------------------

GPU_VENDOR, GPU_PRODUCT = '10de', '1eb8'
GPU_SPEC = {'vendor_id': GPU_VENDOR, 'product_id': GPU_PRODUCT,
            'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_T4'],
            'device_type': 'GPU'}


def gpu_address(i):
    """PCI address of fake GPU ``i`` (0..8191): bus and slot vary."""
    return '0000:%02x:%02x.0' % (0x10 + i // 32, i % 32)


def make_sysfs(root, count, numa_nodes=2):
    """Write a sysfs tree of ``count`` T4-like GPUs bound to vfio-pci,
    in the layout of ``tests/fixtures/sysfs`` (plain files, relative
    links), GPU ``i`` on NUMA node ``i % numa_nodes``."""
    os.makedirs(root, exist_ok=True)
    for i in range(count):
        d = os.path.join(root, gpu_address(i))
        os.makedirs(d, exist_ok=True)
        for name, value in (('vendor', '0x' + GPU_VENDOR),
                            ('device', '0x' + GPU_PRODUCT),
                            ('subsystem_vendor', '0x10de'),
                            ('subsystem_device', '0x12a2'),
                            ('class', '0x030200'),
                            ('numa_node', str(i % numa_nodes))):
            with open(os.path.join(d, name), 'w') as f:
                f.write(value + '\n')
        os.symlink('../../../bus/pci/drivers/vfio-pci',
                   os.path.join(d, 'driver'))
        os.symlink('../../../kernel/iommu_groups/%d' % (100 + i),
                   os.path.join(d, 'iommu_group'))
    return root


# -- the accelerator API client -----------------------------------------

class AccelClient:
    """The Cyborg v2 calls Nova makes, as one client for both services.

    Every call returns ``(seconds, response)``.
    """

    def __init__(self, url, version=None):
        self.url = url.rstrip('/')
        self.s = requests.Session()
        self.s.headers.update(ACCEL_HEADERS)
        if version:
            self.s.headers['OpenStack-API-Version'] = 'accelerator ' + version

    def call(self, method, path, body=None, ok=(200, 201, 202, 204)):
        """One request with a JSON-able ``body``; returns ``(seconds,
        response)``.

        :raises RuntimeError: on a status not in ``ok``.
        """
        data = None if body is None else json.dumps(body)
        t0 = time.perf_counter()
        r = self.s.request(method, self.url + path, data=data)
        dt = time.perf_counter() - t0
        if r.status_code not in ok:
            raise RuntimeError('%s %s -> %s %s' % (method, path,
                                                   r.status_code,
                                                   r.text[:300]))
        return dt, r

    def create_profile(self, name, groups):
        return self.call('POST', '/v2/device_profiles',
                         [{'name': name, 'groups': groups}])

    def create_arqs(self, profile):
        dt, r = self.call('POST', '/v2/accelerator_requests',
                          {'device_profile_name': profile})
        return dt, r.json()['arqs']

    def bind(self, bindings):
        """``bindings``: ``{arq_uuid: (hostname, rp_uuid, instance)}``."""
        body = {a: [{'path': '/hostname', 'op': 'add', 'value': h},
                    {'path': '/device_rp_uuid', 'op': 'add', 'value': rp},
                    {'path': '/instance_uuid', 'op': 'add', 'value': i}]
                for a, (h, rp, i) in bindings.items()}
        return self.call('PATCH', '/v2/accelerator_requests', body)

    def list_for_instance(self, instance):
        dt, r = self.call('GET', '/v2/accelerator_requests?instance=%s'
                          % instance)
        return dt, r.json()['arqs']

    def get_arq(self, arq_uuid):
        dt, r = self.call('GET', '/v2/accelerator_requests/%s' % arq_uuid)
        return dt, r.json()

    def delete_instance(self, instance):
        return self.call('DELETE', '/v2/accelerator_requests?instance=%s'
                         % instance)

    def deployables(self):
        return self.call('GET', '/v2/deployables')[1].json()['deployables']


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

    :param client: an ``AccelClient``.
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


def sqlite_version():
    """The SQLite library's version (a string)."""
    return sqlite3.sqlite_version


def which(name):
    """The path of program ``name`` on PATH, or None."""
    return shutil.which(name)
