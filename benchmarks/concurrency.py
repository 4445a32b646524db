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

"""Measure 4: 200 concurrent binds competing for 50 devices, on SQLite and
on PostgreSQL.

An ``accel-backend`` process (embedded: each PATCH binds in its own
transaction) over 50 single-GPU resource providers (one attach handle
each), on a SQLite file, then on a throwaway PostgreSQL server.  200
ARQs are created first (not timed); then 200 threads, released together
by a barrier, each send one ``PATCH`` binding one ARQ (to device
``i % 50``, so four ARQs want each device) for its own instance.
Throughput counts from the release to the last ``PATCH`` answer and to
the last event received by the Nova stub.

Afterwards the database is read directly: no attach handle may be held by
two ARQs, no device RP may have two ``Bound`` ARQs, every loser must be
``BindFailed`` and must have had a ``failed`` event; on PostgreSQL the
server must have counted no deadlock (``pg_stat_database.deadlocks``).
"""

import os
import threading
import time

import requests
import sqlalchemy as sa

from accel_common import arq_states
from benchmarks import common
from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import databases
from tools.fixtures import sysfs as sysfs_fx

DEVICES = 50
BINDS = 200
# --quick: the same 4 ARQs per device, on 20 devices.
QUICK_DEVICES, QUICK_BINDS = 20, 80


def _db_checks(connection):
    eng = sa.create_engine(connection)
    with eng.connect() as c:
        q = lambda sql: c.execute(sa.text(sql)).all()  # noqa: E731
        states = dict(q('SELECT state, COUNT(*) FROM accelerator_requests '
                        'GROUP BY state'))
        handle_twice = q('SELECT attach_handle_id, COUNT(*) FROM '
                         'accelerator_requests WHERE attach_handle_id IS '
                         'NOT NULL GROUP BY attach_handle_id HAVING '
                         'COUNT(*) > 1')
        rp_twice = q("SELECT device_rp_uuid, COUNT(*) FROM "
                     "accelerator_requests WHERE state = 'Bound' GROUP BY "
                     "device_rp_uuid HAVING COUNT(*) > 1")
        in_use = q('SELECT COUNT(*) FROM attach_handles WHERE in_use')[0][0]
        by_arq = dict(q('SELECT uuid, state FROM accelerator_requests'))
    eng.dispose()
    return states, handle_twice, rp_twice, in_use, by_arq


def _deadlocks(connection):
    """Deadlocks PostgreSQL counted in the database of ``connection``."""
    eng = sa.create_engine(connection)
    try:
        with eng.connect() as c:
            return c.execute(sa.text(
                'SELECT deadlocks FROM pg_stat_database WHERE datname = '
                'current_database()')).scalar()
    finally:
        eng.dispose()


def measure(env):
    """``{'sqlite': result, 'postgresql': result}``; a database that
    could not be measured has ``{'not_measured': reason}``."""
    devices, binds = ((QUICK_DEVICES, QUICK_BINDS) if env.quick
                      else (DEVICES, BINDS))
    results = {'sqlite': _measure(env, devices, binds, 'conc', None)}
    server = None
    try:
        server = tools_fixtures.start(databases.PostgreSQLServer(
            durable=True))
        env.versions['postgresql'] = server.server_version()
        results['postgresql'] = _measure(
            env, devices, binds, 'concpg', server.create_database('accel_cc'))
    except Exception as e:
        results['postgresql'] = {'not_measured': 'failed: %s' % e}
    finally:
        if server is not None:
            server.cleanUp()
    return results


def _measure(env, devices, binds, name, connection):
    """One database's race: ``binds`` ARQs of a one-GPU profile bound at
    once over ``devices`` single-GPU providers of an ``accel-backend`` on
    ``connection`` (None: a SQLite file); the result dict of ``measure``."""
    sysfs = sysfs_fx.make_sysfs(os.path.join(env.workdir, 'sysfs-' + name),
                                devices)
    backend = accel_fx.start_reporting(
        env.workdir, env.placement, env.stub, name, sysfs, devices,
        connection=connection)
    try:
        client = accel_client.AccelClient(backend.root)
        rps = sorted(d['rp_uuid'] for d in client.deployables())
        client.create_profile('conc-gpu', [{'resources:PGPU': '1'}])
        arqs = [client.create_arqs('conc-gpu')[1][0]['uuid']
                for _ in range(binds)]
        race = _race(env, backend, rps, arqs, devices)
        return _verdict(env, backend, connection, arqs, devices, race)
    finally:
        backend.cleanUp()


def _race(env, backend, rps, arqs, devices):
    """Bind ARQ ``i`` of ``arqs`` to provider ``rps[i % devices]`` from
    one thread each, all released by one barrier.

    :returns: ``(mark, t0, done, errors, resets)``: the Nova stub's mark
        taken before the race, the barrier's release time
        (``time.perf_counter``), ``(end, latency)`` per ARQ (None where
        it failed), the errors and the connection resets seen.
    """
    binds = len(arqs)
    # A fresh client (new TCP connection) per request: cheroot keeps
    # only a few idle keep-alive connections, so connections opened
    # before the race would be reset.
    clients = [accel_client.AccelClient(backend.root) for _ in range(binds)]
    mark = env.stub.mark()
    start = {}
    barrier = threading.Barrier(
        binds, action=lambda: start.setdefault('t', time.perf_counter()))
    done, errors = [None] * binds, []

    resets = []

    def bind(i):
        barrier.wait()
        t_first = time.perf_counter()
        # accel_backend's bind PATCH is idempotent, so a request whose
        # connection was reset is sent again on a new connection.
        for attempt in range(5):
            try:
                clients[i].bind({arqs[i]: (
                    backend.host, rps[i % devices],
                    'c0ffee00-0000-4000-8000-%012d' % i)})
                done[i] = (time.perf_counter(),
                           time.perf_counter() - t_first)
                return
            except requests.ConnectionError as e:
                resets.append(str(e))
                clients[i] = accel_client.AccelClient(backend.root)
                time.sleep(0.1 * 2 ** attempt)
            except Exception as e:
                errors.append(str(e))
                return
        errors.append('gave up after 5 connection resets')

    threads = [threading.Thread(target=bind, args=(i,))
               for i in range(binds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return mark, start['t'], done, errors, resets


def _verdict(env, backend, connection, arqs, devices, race):
    """The events, the database's rows and the timings after ``race``
    (``_race``'s answer), as ``measure``'s result dict with its ``ok``."""
    mark, t0, done, errors, resets = race
    binds = len(arqs)
    seen = env.stub.wait_tags(arqs, since=mark, timeout=60,
                              partial=True)
    patch_end = max(d[0] for d in done if d)
    event_end = max(t for t, _ in seen.values())
    no_event = [a for a in arqs if a not in seen]
    states, handle_twice, rp_twice, in_use, by_arq = _db_checks(
        backend.connection)
    deadlocks = (_deadlocks(backend.connection)
                 if connection is not None else 0)
    losers = [a for a in arqs if by_arq.get(a) != arq_states.BOUND]
    losers_ok = [a for a in losers
                 if by_arq.get(a) == arq_states.BIND_FAILED and
                 a in seen and seen[a][1].get('status') ==
                 arq_states.EVENT_FAILED]
    winners_ok = [a for a in arqs if by_arq.get(a) == arq_states.BOUND and
                  a in seen and seen[a][1].get('status') ==
                  arq_states.EVENT_COMPLETED]
    out = {
        'binds': binds, 'devices': devices,
        'patch_errors': sorted(set(errors))[:3],
        'patch_error_count': len(errors),
        'arqs_without_event': len(no_event),
        'connection_resets': len(resets),
        'reset_examples': sorted(set(resets))[:2],
        'patch_latency': common.summary([d[1] for d in done if d]),
        'all_patches_s': patch_end - t0,
        'all_events_s': event_end - t0,
        'patch_throughput_per_s': binds / (patch_end - t0),
        'bind_throughput_per_s': binds / (event_end - t0),
        'states': states,
        'handles_bound_twice': len(handle_twice),
        'rps_bound_twice': len(rp_twice),
        'handles_in_use': in_use,
        'bound': states.get(arq_states.BOUND, 0),
        'losers': len(losers),
        'losers_bindfailed_with_failed_event': len(losers_ok),
        'winners_bound_with_completed_event': len(winners_ok),
        'deadlocks': deadlocks,
    }
    out['ok'] = (out['handles_bound_twice'] == 0 and not deadlocks and
                 out['rps_bound_twice'] == 0 and
                 out['bound'] == devices and in_use == devices and
                 len(losers_ok) == len(losers) == binds - devices and
                 len(winners_ok) == devices and not errors)
    return out
