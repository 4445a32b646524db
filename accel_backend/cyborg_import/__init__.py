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

"""``accel-backend-manage import-cyborg``: adopt a Cyborg 17 deployment.

Steps, each refusing rather than guessing:

1. Cyborg must have stopped writing (``source.check_quiet``: its API, when
   ``--cyborg-api`` names it, must not answer, and its database must not
   change during ``--quiet-period`` seconds).
2. Its database is read (``source.read``) and mapped onto ours
   (``importer.run``) in one transaction of our database.
3. Without ``--apply`` (the default) that transaction is rolled back and
   the report says what an apply would do; with ``--apply`` it is
   committed, unless an ARQ that holds a device (``Bound`` or
   ``BindStarted``) could not be mapped and ``--allow-unmapped`` is not
   given: then nothing is written.

Exit status: 0 done (or would be done), 1 refused (Cyborg still writing,
no Cyborg 17 database), 2 something that holds a device cannot be mapped.
"""

import sys

import sqlalchemy as sa

from accel_backend.cyborg_import import importer
from accel_backend.cyborg_import import source
from accel_backend.db import api as db_api
from accel_backend import exception

REFUSED = 1
UNMAPPED = 2


class _RollBack(Exception):
    pass


def run(db, cyborg_url, apply=False, quiet_period=10.0, api_url=None,
        allow_unmapped=False, engine=None):
    """Import once.

    :param db: our ``db_api.Database``.
    :param cyborg_url: SQLAlchemy URL of Cyborg's database (str).
    :param apply: commit (True) or roll back (False: dry run).
    :param quiet_period: seconds Cyborg's database must stay unchanged.
    :param api_url: Cyborg's API endpoint to probe, or None.
    :param allow_unmapped: commit even when ARQs holding devices are left
        out.
    :param engine: an engine of Cyborg's database to use instead of one
        made from ``cyborg_url`` (tests).
    :returns: ``(importer.Report, committed: bool)``.
    :raises CyborgImportRefused: Cyborg is still writing, or the source
        is no Cyborg 17 database.
    """
    own = engine is None
    engine = engine or sa.create_engine(cyborg_url)
    try:
        source.check_quiet(engine, quiet_period, api_url)
        snap = source.read(engine)
        try:
            with db.transaction() as session:
                report = importer.run(session, snap)
                if not apply or (report.holding and not allow_unmapped):
                    raise _RollBack(report)
        except _RollBack as e:
            return e.args[0], False
        return report, True
    finally:
        if own:
            engine.dispose()


def print_report(report, committed, apply, out=None):
    """Write the report for an operator (one item per line) to ``out``
    (default: standard output)."""
    out = out or sys.stdout
    verb = 'Done' if committed else 'Would do'
    print('%s (%d changes):' % (verb, len(report.actions)), file=out)
    for line in report.actions:
        print('  ' + line, file=out)
    print('Cannot map (%d; %d holding a device):' % (
        len(report.unmapped), len(report.holding)), file=out)
    for line in report.unmapped:
        mark = '!' if line in report.holding else '-'
        print('  %s %s' % (mark, line), file=out)
    if apply and not committed:
        print('Nothing written: %d ARQs that hold devices cannot be '
              'mapped (fix them, or pass --allow-unmapped)'
              % len(report.holding), file=out)
    elif not apply:
        print('Dry run: nothing written (pass --apply)', file=out)


def command(conf):
    """The ``import-cyborg`` subcommand on ``conf`` (accel_backend
    options plus the subcommand's); returns the exit status."""
    args = conf.category
    db = db_api.Database.from_conf(conf)
    try:
        report, committed = run(
            db, args.cyborg_connection, apply=args.apply,
            quiet_period=args.quiet_period, api_url=args.cyborg_api,
            allow_unmapped=args.allow_unmapped)
    except exception.CyborgImportRefused as e:
        print(str(e), file=sys.stderr)
        return REFUSED
    finally:
        db.dispose()
    print_report(report, committed, args.apply)
    return UNMAPPED if report.holding else 0


def add_parser(subparsers):
    """Add ``import-cyborg`` to ``accel-backend-manage``'s commands."""
    p = subparsers.add_parser(
        'import-cyborg', help='adopt a stopped Cyborg 17 deployment '
                              '(dry run unless --apply)')
    p.add_argument('--cyborg-connection', required=True,
                   help='SQLAlchemy URL of Cyborg\'s database, e.g. '
                        'mysql+pymysql://cyborg:PW@ctl/cyborg or '
                        'sqlite:////var/lib/cyborg/cyborg.sqlite')
    p.add_argument('--cyborg-api', default=None,
                   help='Cyborg\'s API endpoint: refuse while it answers')
    p.add_argument('--quiet-period', type=float, default=10.0,
                   help='seconds Cyborg\'s database must stay unchanged '
                        'before the import (default 10)')
    p.add_argument('--apply', action='store_true',
                   help='write the import (one transaction)')
    p.add_argument('--allow-unmapped', action='store_true',
                   help='apply even when ARQs that hold devices cannot be '
                        'mapped (they are left out)')
    p.set_defaults(func=command)
