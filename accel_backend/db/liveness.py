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

"""Whether a pooled connection to a database server can still be used,
checked when the pool hands it out.

oslo.db 18 builds every engine with SQLAlchemy's ``pool_pre_ping``: a
``SELECT 1`` round trip to the server before each transaction, which
made a transaction from the pool clearly slower (the contributor guide's
"Design measurements"; ``tox -e bench`` times both pools).  A bind PATCH
and the ARQ creation before it are one transaction each, on the path of
the 10 ms goal of create + bind + event.

What the ping finds is found here at no cost or only when it can matter:

* a connection the server closed (restart, ``pg_terminate_backend``,
  an idle timeout, a proxy's): its socket is readable while no request
  is outstanding (the server's FATAL message and FIN), as urllib3
  checks a kept-alive HTTP connection.  ``poll()``, no round trip.
* anything else (the server's host gone without a word, a virtual IP
  moved to another server): ``SELECT 1`` as before, but only on a
  connection idle for ``PING_IDLE_AFTER`` seconds or more.  A connection
  used within that time was answered by the server then; if the server
  vanished since, the transaction fails with ``DBConnectionError`` as
  one already under way would, and SQLAlchemy then discards every
  pooled connection older than the failure, so the next transactions
  reconnect.

A connection found unusable raises ``sqlalchemy.exc.DisconnectionError``
in the pool's ``checkout`` event: the pool closes it and hands out a new
one (SQLAlchemy 2.0, "Disconnect Handling - Pessimistic", custom
checkout events).  SQLite connections are not served by this module:
they have no server and keep oslo.db's in-process ping.
"""

import time

import sqlalchemy as sa
from sqlalchemy import event

from accel_backend import utils

#: Seconds a pooled connection may sit idle and still be handed out
#: without a ``SELECT 1`` (when its socket shows nothing from the server).
PING_IDLE_AFTER = 1.0

_IDLE_SINCE = 'accel.idle_since'


def install(engine):
    """Check ``engine``'s connections at checkout as the module says; the
    engine must be built with ``pool_pre_ping=False``.

    :param engine: a ``sqlalchemy.engine.Engine`` of a database server
        (PostgreSQL, MySQL).
    """
    dialect = engine.dialect

    def idle_from_now(_dbapi_conn, record, *_):
        record.info[_IDLE_SINCE] = time.monotonic()

    def checkout(dbapi_conn, record, _proxy):
        if closed_by_server(dbapi_conn):
            raise sa.exc.DisconnectionError(
                'the database server closed this pooled connection')
        since = record.info.get(_IDLE_SINCE)
        if since is not None and time.monotonic() - since < PING_IDLE_AFTER:
            return
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as e:
            if dialect.is_disconnect(e, dbapi_conn, None):
                raise sa.exc.DisconnectionError(str(e)) from e
            raise

    event.listen(engine, 'connect', idle_from_now)
    event.listen(engine, 'checkin', idle_from_now)
    event.listen(engine, 'checkout', checkout)


def closed_by_server(dbapi_conn):
    """True when an idle DB-API connection is known closed or its socket
    has something from the server (which says nothing unasked to an idle
    client but its goodbye); False when it cannot tell (a driver
    without ``fileno()``).

    :param dbapi_conn: a DB-API connection (psycopg2's has ``closed``
        and ``fileno()``).
    """
    if getattr(dbapi_conn, 'closed', False):
        return True
    fileno = getattr(dbapi_conn, 'fileno', None)
    if fileno is None:
        return False
    try:
        return utils.readable_while_idle(fileno())
    except (OSError, ValueError):
        return True
