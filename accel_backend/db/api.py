"""Engine, sessions and schema sync.

One ``Database`` per service process.  SQLite (the embedded default) is
opened in WAL mode with a busy timeout so the API threads and the binding
workers can share it; PostgreSQL and MySQL work through the same code.
"""

import contextlib
import os

import alembic.command
import alembic.config
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import orm

MIGRATIONS_DIR = os.path.join(os.path.dirname(__file__), 'migrations')


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute('PRAGMA journal_mode=WAL')
    cur.execute('PRAGMA foreign_keys=ON')
    cur.execute('PRAGMA busy_timeout=30000')
    cur.close()


class Database:
    """Owns the SQLAlchemy engine and hands out transactions.

    :param connection: SQLAlchemy URL (str), e.g. ``sqlite:////path/db``
        or ``postgresql+psycopg2://user:pw@host/db``.
    """

    def __init__(self, connection):
        url = sa.engine.make_url(connection)
        kwargs = {}
        if url.get_backend_name() == 'sqlite':
            if url.database and url.database != ':memory:':
                os.makedirs(os.path.dirname(os.path.abspath(url.database)),
                            exist_ok=True)
            kwargs['connect_args'] = {'check_same_thread': False,
                                      'timeout': 30}
        self.engine = sa.create_engine(url, **kwargs)
        if url.get_backend_name() == 'sqlite':
            event.listen(self.engine, 'connect', _sqlite_pragmas)
        self._sessionmaker = orm.sessionmaker(bind=self.engine,
                                              expire_on_commit=False)

    @contextlib.contextmanager
    def transaction(self):
        """Yield a ``Session`` inside one transaction.

        Commits when the block ends normally, rolls back on any exception
        (which is re-raised).
        """
        with self._sessionmaker() as session:
            with session.begin():
                yield session

    def sync(self):
        """Create or upgrade the schema to the newest alembic revision."""
        cfg = alembic.config.Config()
        cfg.set_main_option('script_location', MIGRATIONS_DIR)
        with self.engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.upgrade(cfg, 'head')

    def dispose(self):
        """Close every pooled connection."""
        self.engine.dispose()
