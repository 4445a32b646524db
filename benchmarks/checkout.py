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

"""Measure 9: one write transaction on PostgreSQL through an engine built
by oslo.db (``oslo_db.sqlalchemy.engines.create_engine``, whose pool
pings the server with ``SELECT 1`` at every checkout) and through
accel_backend's (``accel_backend.db.api.Database``: the pool checks its
connections without a round trip while they are in use,
``accel_backend.db.liveness``).

Both engines talk to the same throwaway PostgreSQL server
(``tools.fixtures.databases``, durable as in measure 2) and database.  A
sample is one transaction taken from the pool: an INSERT of one row and
its COMMIT, the shape of each transaction on the bind path; samples
alternate one by one, so both see the same machine.  Both sides wait for
the COMMIT's answer.
"""

import time
import uuid

from oslo_db.sqlalchemy import engines
import sqlalchemy as sa

from accel_backend.db import api as db_api
from benchmarks import common
from tools import fixtures as tools_fixtures
from tools.fixtures import databases

SAMPLES = {False: 2000, True: 200}
WARMUP = 100
_INSERT = sa.text('INSERT INTO checkout_t (v) VALUES (:v)')


def _transaction(engine):
    t0 = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(_INSERT, {'v': str(uuid.uuid4())})
    return time.perf_counter() - t0


def compare(url, samples, warmup=WARMUP):
    """Time ``samples`` transactions per side on the database at ``url``.

    :param url: SQLAlchemy URL of a PostgreSQL database (str).
    :returns: ``{'pre_ping': summary, 'accel_backend': summary,
        'ratio_p50': pre_ping / accel_backend, 'samples': n, 'rows': rows
        written}`` (summaries in milliseconds,
        ``benchmarks.common.summary``).
    """
    oslo_engine = engines.create_engine(url, thread_checkin=False)
    ours = db_api.Database(url)
    sides = (('pre_ping', oslo_engine), ('accel_backend', ours.engine))
    times = {name: [] for name, _ in sides}
    try:
        with ours.engine.begin() as conn:
            conn.execute(sa.text('CREATE TABLE checkout_t (id SERIAL '
                                 'PRIMARY KEY, v TEXT)'))
        for i in range(warmup + samples):
            for name, engine in sides:
                dt = _transaction(engine)
                if i >= warmup:
                    times[name].append(dt)
        with ours.engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT count(*) FROM checkout_t')).scalar()
    finally:
        oslo_engine.dispose()
        ours.dispose()
    out = {name: common.summary(t) for name, t in times.items()}
    out['ratio_p50'] = common.ratio(out['pre_ping']['p50'],
                                    out['accel_backend']['p50'])
    out.update(samples=samples, rows=rows)
    return out


def measure(env, samples=None):
    """Measure 9 on a PostgreSQL server started for it.

    :param env: ``benchmarks.run.Env`` (``quick``, ``versions``).
    :param samples: transactions per side (default 2,000; 200 with
        ``--quick``).
    :returns: as ``compare``.
    :raises AssertionError: PostgreSQL is missing or does not start.
    """
    server = tools_fixtures.start(databases.PostgreSQLServer(durable=True))
    try:
        env.versions.setdefault('postgresql', server.server_version())
        return compare(server.create_database('accel_checkout'),
                       samples or SAMPLES[env.quick])
    finally:
        server.cleanUp()
