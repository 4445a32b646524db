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

"""Engine, sessions and schema sync.

One ``Database`` per service process, built from the ``[database]``
options of oslo.db (``oslo_db/options.py``, oslo.db 18).  A database
server's engine is oslo.db's (``oslo_db.sqlalchemy.engines.create_engine``,
the factory its enginefacade builds engines with), so every option below
takes effect; SQLite's is SQLAlchemy's with oslo.db's exception filters
(``_sqlite_engine`` says why).  Database errors arrive translated either
way (``oslo_db.exception.DBDeadlock``, ``DBDuplicateEntry``,
``DBConnectionError``...):

``connection``, ``connection_parameters``
    the SQLAlchemy URL and extra query parameters.
``max_pool_size``, ``max_overflow``, ``pool_timeout``,
``connection_recycle_time``
    the connection pool (also for SQLite files, see ``_sqlite_engine``).
``max_retries``, ``retry_interval``
    attempts (and seconds between them) to reach the database at start.
``connection_debug``, ``connection_trace``
    SQL logging (0-100) and a Python stack trace in each statement.
``mysql_sql_mode``, ``mysql_wsrep_sync_wait``, ``sqlite_synchronous``
    per-connection settings of those backends (SQLite always runs with
    foreign keys on: the schema's cascades need them).
``db_max_retries``, ``db_retry_interval``, ``db_inc_retry_interval``,
``db_max_retry_interval``, ``use_db_reconnect``
    ``oslo_db.api.wrap_db_retry`` around the writers that can meet a
    deadlock (``Database.write``); ``use_db_reconnect`` also retries them
    after a lost connection.

Not offered, and refused at start when set (``DatabaseOptionUnsupported``):
``slave_connection`` and ``asyncio_connection``/``asyncio_slave_connection``
(every reader here must see the writes just committed; there is no asyncio
code).  ``backend`` must be ``sqlalchemy``; ``synchronous_reader`` only
matters with a ``slave_connection``.

We use the engine factory rather than enginefacade's transaction context
because accel_backend works on its own ``ConfigOpts`` (a test runs it in
Nova's process) and the context reads every option not configured on it
from oslo.config's global ``CONF`` (``enginefacade._TransactionFactory.
_start``, oslo.db 18): Nova's ``[database]`` would leak in.

A database server's pooled connections are checked as oslo.db builds
every engine to check them: SQLAlchemy's pessimistic ``pool_pre_ping``
(``oslo_db/sqlalchemy/engines.py``, oslo.db 18), one ``SELECT 1`` at each
checkout, so a connection the server closed or lost (restart,
``pg_terminate_backend``, an idle timeout) is replaced before a
transaction gets it.

SQLite (the embedded default) is opened in WAL mode with a busy timeout so
the API threads and the binding workers can share it.
"""

import contextlib
import logging
import os

from oslo_config import cfg
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db import options as db_options
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

from accel_backend.db import migration
from accel_backend.db import models
from accel_backend import exception

MIGRATIONS_DIR = migration.MIGRATIONS_DIR

#: ``[database]`` options handed to ``engines.create_engine`` as they are.
ENGINE_OPTIONS = (
    'mysql_sql_mode', 'mysql_wsrep_sync_wait',
    'connection_recycle_time', 'connection_debug', 'max_pool_size',
    'max_overflow', 'pool_timeout', 'sqlite_synchronous',
    'connection_trace', 'max_retries', 'retry_interval',
    'connection_parameters')
#: ``[database]`` options that would ask for a second engine we do not have.
UNSUPPORTED_OPTIONS = ('slave_connection', 'asyncio_connection',
                       'asyncio_slave_connection')
#: SQLite busy timeout, seconds: how long a writer waits for the lock.
SQLITE_BUSY_TIMEOUT = 30


def _sqlite_pragmas(synchronous):
    """The ``connect`` listener of a SQLite engine: busy timeout, WAL,
    foreign keys, and ``synchronous = OFF`` when ``[database]
    sqlite_synchronous`` is false (as oslo.db does for its SQLite
    engines)."""
    def on_connect(dbapi_conn, _record):
        cur = dbapi_conn.cursor()
        cur.execute('PRAGMA busy_timeout=%d' % (SQLITE_BUSY_TIMEOUT * 1000))
        cur.execute('PRAGMA journal_mode=WAL')
        cur.execute('PRAGMA foreign_keys=ON')
        if not synchronous:
            cur.execute('PRAGMA synchronous=OFF')
        cur.close()
    return on_connect


#: ``Session.info`` key: this transaction holds SQLite's write lock.
WRITE_LOCKED = 'accel.sqlite_write_locked'


def write_lock(session):
    """Take SQLite's write lock at the start of a read-then-write
    transaction; nothing on other databases, nor when the transaction
    already holds it (``Database.write`` begins with ``BEGIN
    IMMEDIATE``, an earlier call took it).

    A read-then-write transaction on SQLite (WAL) fails with "database is
    locked" when another connection wrote after its first read; a write
    that matches nothing takes the lock up front, so every read after it
    sees the current rows.  PostgreSQL and MySQL lock the rows read
    ``FOR UPDATE`` instead.

    :param session: a ``Session`` inside ``Database.transaction``.
    """
    if (session.info.get(WRITE_LOCKED) or
            session.get_bind().dialect.name != 'sqlite'):
        return
    session.execute(sa.update(models.AttachHandle)
                    .where(models.AttachHandle.id == -1)
                    .values(in_use=models.AttachHandle.in_use)
                    .execution_options(synchronize_session=False))
    session.info[WRITE_LOCKED] = True


def _defaults():
    return {opt.name: opt.default for opt in db_options.database_opts}


def _server_engine(connection, opts):
    """oslo.db's engine for a database server (PostgreSQL, MySQL), with
    every ``ENGINE_OPTIONS`` option.

    :raises oslo_db.exception.DBConnectionError: not reachable.
    """
    kwargs = {name: opts[name] for name in ENGINE_OPTIONS}
    # oslo.db's thread_checkin sleeps 0 s at every connection check-in so
    # that eventlet's green threads get a turn; there is no eventlet here,
    # and on native threads it gives the GIL away at the end of every
    # transaction, which made short transactions clearly slower (the
    # contributor guide's "Design measurements").
    kwargs['thread_checkin'] = False
    try:
        return engines.create_engine(connection, **kwargs)
    except sa.exc.OperationalError as e:
        # A refused connection oslo.db 18 does not recognise (libpq 14's
        # "connection to server ... failed"): not retried, but reported as
        # what it is.
        raise db_exc.DBConnectionError(e) from e


def _sqlite_engine(url, opts):
    """The engine of a SQLite database (the embedded default).

    A plain SQLAlchemy engine with oslo.db's public exception filters
    (``oslo_db.sqlalchemy.exc_filters.register_engine``), so errors arrive
    translated as on the server engines.  Not oslo.db's own SQLite engine,
    for two reasons:

    * oslo.db 18 gives SQLite files a NullPool: every transaction opened
      a connection, set the pragmas and closed it, and closing the last
      connection of a WAL database checkpoints the log, which made every
      transaction clearly slower than on a pooled connection (the
      contributor guide's "Design measurements").  Here connections are
      pooled, sized by ``max_pool_size``, ``max_overflow`` and
      ``pool_timeout``; one only ever serves one thread at a time
      (``check_same_thread=False`` lets it change threads) and the pool's
      rollback on return ends its read snapshot.  ``:memory:`` keeps one
      static connection.
    * oslo.db 18 makes every SQLite transaction start with ``BEGIN``, so
      a transaction's first read fixes its WAL snapshot and its first
      write then fails at once with "database is locked"
      (``SQLITE_BUSY_SNAPSHOT``, which the busy timeout does not wait out)
      when another connection committed in between.  Here transactions
      start at their first write, as pysqlite does by default; the writers
      that read first take the write lock up front (``write_lock``;
      ``Database.write`` begins with ``BEGIN IMMEDIATE``).

    ``connection_debug`` sets SQLAlchemy's engine logging as oslo.db
    does; ``connection_trace`` and the MySQL options do not apply.

    :param url: ``sqlalchemy.engine.URL`` of a ``sqlite`` database.
    :param opts: the ``[database]`` options (mapping).
    """
    args = {'connect_args': {'check_same_thread': False,
                             'timeout': SQLITE_BUSY_TIMEOUT}}
    if url.database in (None, '', ':memory:'):
        args['poolclass'] = sa.pool.StaticPool
    else:
        args.update(
            poolclass=sa.pool.QueuePool,
            pool_size=opts['max_pool_size'] or 5,
            max_overflow=(50 if opts['max_overflow'] is None
                          else opts['max_overflow']),
            pool_timeout=opts['pool_timeout'] or 30)
    if opts['connection_recycle_time']:
        args['pool_recycle'] = opts['connection_recycle_time']
    engine = sa.create_engine(url, **args)
    event.listen(engine, 'connect',
                 _sqlite_pragmas(opts['sqlite_synchronous']))
    exc_filters.register_engine(engine)
    debug = opts['connection_debug'] or 0
    if debug >= 50:
        logging.getLogger('sqlalchemy.engine').setLevel(
            logging.DEBUG if debug >= 100 else logging.INFO)
    return engine


class Database:
    """Owns the SQLAlchemy engine and hands out transactions.

    :param connection: SQLAlchemy URL (str), e.g. ``sqlite:////path/db``
        or ``postgresql+psycopg2://user:pw@host/db``.
    :param options: the ``[database]`` group of a ``ConfigOpts`` (or any
        mapping of those option names); missing names take oslo.db's
        defaults.
    :raises DatabaseOptionUnsupported: an option of
        ``UNSUPPORTED_OPTIONS`` is set or ``backend`` is not
        ``sqlalchemy``.
    :raises oslo_db.exception.DBConnectionError: the database could not be
        reached in ``max_retries`` attempts ``retry_interval`` seconds
        apart (no attempt when ``max_retries`` is 0; one only when oslo.db
        does not recognise the driver's refusal, as libpq 14's).
    """

    def __init__(self, connection, options=None):
        opts = _defaults()
        if options is not None:
            for name in opts:
                try:
                    opts[name] = options[name]
                except (KeyError, cfg.NoSuchOptError):
                    pass
        for name in UNSUPPORTED_OPTIONS:
            if opts.get(name):
                raise exception.DatabaseOptionUnsupported(
                    option=name, reason='accel_backend reads and writes '
                    'through [database] connection only')
        if opts['backend'] != 'sqlalchemy':
            raise exception.DatabaseOptionUnsupported(
                option='backend', reason='only "sqlalchemy" exists')
        url = sa.engine.make_url(connection)
        self.sqlite = sqlite = url.get_backend_name() == 'sqlite'
        if sqlite and url.database and url.database != ':memory:':
            os.makedirs(os.path.dirname(os.path.abspath(url.database)),
                        exist_ok=True)
        if sqlite:
            self.engine = _sqlite_engine(url, opts)
        else:
            self.engine = _server_engine(connection, opts)
        self._sessionmaker = orm.sessionmaker(bind=self.engine,
                                              expire_on_commit=False)
        self._retry = oslo_db_api.wrap_db_retry(
            max_retries=opts['db_max_retries'],
            retry_interval=opts['db_retry_interval'],
            inc_retry_interval=opts['db_inc_retry_interval'],
            max_retry_interval=opts['db_max_retry_interval'],
            retry_on_disconnect=opts['use_db_reconnect'],
            retry_on_deadlock=True)

    @classmethod
    def from_conf(cls, conf):
        """The ``Database`` of ``conf``'s ``[database]`` group
        (``accel_backend.conf``)."""
        return cls(conf.database.connection, options=conf.database)

    @contextlib.contextmanager
    def transaction(self):
        """Yield a ``Session`` inside one transaction.

        Commits when the block ends normally, rolls back on any exception
        (which is re-raised).
        """
        with self._sessionmaker() as session:
            with session.begin():
                yield session

    def write(self, fn, *args, **kwargs):
        """Run ``fn(session, *args, **kwargs)`` in one transaction, again
        in a new one when the database reports a deadlock (or, with
        ``use_db_reconnect``, a lost connection), as the ``[database]
        db_*`` options say.

        ``fn`` must be safe to run again: everything it did in a failed
        attempt was rolled back.  On SQLite the transaction begins with
        ``BEGIN IMMEDIATE``: it holds the database's write lock from its
        first statement, so ``write_lock`` (and the row locks of
        ``objects.arq``) cost nothing in it.

        :returns: what ``fn`` returns.
        :raises oslo_db.exception.DBDeadlock: still deadlocked after
            ``db_max_retries`` retries; anything else ``fn`` raises.
        """
        def attempt():
            with self.transaction() as session:
                if self.sqlite:
                    # The write lock first, as one statement of the
                    # driver's: no read of this transaction can go stale
                    # (see ``write_lock``), for far less CPU than the
                    # no-op UPDATE of ``write_lock`` (the contributor
                    # guide's "Design measurements").
                    session.connection().exec_driver_sql('BEGIN IMMEDIATE')
                    session.info[WRITE_LOCKED] = True
                return fn(session, *args, **kwargs)
        return self._retry(attempt)()

    def sync(self, branches=migration.BRANCHES):
        """Create or upgrade the schema: this code's migrations of
        ``branches`` (``'expand'``, ``'contract'``; both by default, expand
        first), as ``accel_backend.db.migration.upgrade``."""
        migration.upgrade(self.engine, branches)

    def schema_revisions(self):
        """``(current, head)``: the database's alembic revisions (a tuple
        of str, empty for an empty database) and the head revision of
        each branch in this code (``{branch: str}``)."""
        with self.engine.connect() as conn:
            current = migration.database_heads(conn)
        return current, migration.code_heads()

    def check_schema(self):
        """Refuse a database this code cannot run on: not expanded to
        this release, or contracted by a later one
        (``accel_backend.db.migration.check``).

        :returns: ``{branch: the database's revision or None}``.
        :raises SchemaOutOfDate: not expanded to this release.
        :raises SchemaContractedAhead: contracted by a later release.
        :raises SchemaRevisionUnknown: at a revision of no release.
        """
        with self.engine.connect() as conn:
            return migration.check(migration.database_heads(conn))

    def dispose(self):
        """Close every pooled connection."""
        self.engine.dispose()
