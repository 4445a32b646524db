"""``accel-backend-manage db sync``: create or upgrade the database schema
(SQLite, PostgreSQL, MySQL) with alembic."""

import sys

from oslo_config import cfg

from accel_backend import conf as conf_mod
from accel_backend.db import api as db_api


def _db_sync(conf):
    db_api.Database(conf.database.connection).sync()
    print('Database at revision head')


def _add_commands(subparsers):
    db = subparsers.add_parser('db', help='database schema')
    db_sub = db.add_subparsers(dest='action', required=True)
    sync = db_sub.add_parser('sync', help='create or upgrade the schema')
    sync.set_defaults(func=_db_sync)


def main(argv=None):
    """Console script entry point; returns the exit status (int)."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf.register_cli_opt(cfg.SubCommandOpt('category',
                                            handler=_add_commands))
    conf(sys.argv[1:] if argv is None else argv, project='accel-backend')
    conf.category.func(conf)
    return 0


if __name__ == '__main__':
    sys.exit(main())
