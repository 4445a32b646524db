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


"""Expand/contract schema migrations and the revision each process needs.

The alembic history (``accel_backend/db/migrations/versions``) is linear
up to revision ``0004``; from there it forks into two branches, as
Keystone's (``keystone/common/sql/migrations``, 2023.1) and Neutron's
(``neutron/db/migration/alembic_migrations/versions``, Liberty) do:

``expand`` (``NNNN_expand``)
    only adds: tables, nullable or server-defaulted columns, indexes.
    The processes of the previous release keep working on an expanded
    database, so ``accel-backend-manage db expand`` runs first, while
    they still serve.
``contract`` (``NNNN_contract``)
    only removes or tightens: drops, renames, NOT NULL.  The processes
    of this release never need it (they work on a database whose
    contract branch lags), so ``db contract`` runs last, once no process
    of the previous release is left.

``tests/unit/accel_backend/test_migration_branches.py`` enforces both
rules on every migration by comparing the schema before and after it.

We chose branches over Nova's and Placement's additive-only history
because the first contract step is already known (dropping
``attach_handles.in_use``, see ``0005_contract``) and Nova's way needs an
online data migration framework this project does not have; and over
Keystone's separate data-migration phase (a no-op there since 2023.1)
because no migration here needs one.

A process cannot read a revision its code does not contain, so the
revision id says where it belongs: ``NNNN_<branch>``, ``NNNN`` growing
along each branch.  A process of release N then accepts an expand branch
a later release moved beyond its own (an unknown ``NNNN_expand`` with a
larger ``NNNN``), and refuses a contract branch a later release moved
beyond (that release dropped what release N may still use).
"""

import os
import re

import alembic.command
import alembic.config
from alembic.runtime import migration as alembic_migration
import alembic.script
import alembic.util

from accel_backend import exception

MIGRATIONS_DIR = os.path.join(os.path.dirname(__file__), 'migrations')
VERSIONS_DIR = os.path.join(MIGRATIONS_DIR, 'versions')
EXPAND = 'expand'
CONTRACT = 'contract'
BRANCHES = (EXPAND, CONTRACT)
#: ``NNNN`` (the linear history before the branches) or ``NNNN_<branch>``.
REVISION_ID = re.compile(r'^(\d{4})(?:_(%s|%s))?$' % BRANCHES)


def alembic_config(extra_version_locations=()):
    """The alembic ``Config`` of this code's migrations.

    :param extra_version_locations: further directories (str paths) of
        revision files, searched after ``migrations/versions`` (tests plant
        a later release's migrations there).
    :returns: ``alembic.config.Config``.
    """
    cfg = alembic.config.Config()
    cfg.set_main_option('script_location', MIGRATIONS_DIR)
    cfg.set_main_option('path_separator', 'os')
    cfg.set_main_option('version_locations', os.pathsep.join(
        (VERSIONS_DIR,) + tuple(extra_version_locations)))
    return cfg


def parse(revision):
    """``(number, branch)`` of a revision id: ``branch`` is ``'expand'``,
    ``'contract'`` or None (the history before the branches).

    :raises SchemaRevisionUnknown: the id has neither form.
    """
    match = REVISION_ID.match(revision)
    if match is None:
        raise exception.SchemaRevisionUnknown(revision=revision)
    return int(match.group(1)), match.group(2)


def _scripts(cfg=None):
    return alembic.script.ScriptDirectory.from_config(
        cfg or alembic_config())


def code_heads(cfg=None):
    """``{branch: revision id}``: the head of each branch in this code.

    :param cfg: an ``alembic_config()`` (default: this code's).
    """
    return {parse(head)[1]: head for head in _scripts(cfg).get_heads()}


def database_heads(connection):
    """The revision ids in the database's alembic version table (tuple
    of str; empty for an empty database).

    :param connection: a SQLAlchemy ``Connection``.
    """
    return tuple(alembic_migration.MigrationContext.configure(
        connection).get_current_heads())


def branch_revisions(db_heads, cfg=None):
    """Where each branch of the database is.

    :param db_heads: ``database_heads()``.
    :param cfg: an ``alembic_config()`` (default: this code's).
    :returns: ``{branch: revision id or None}`` (None: the database has
        not entered the branch yet).
    :raises SchemaRevisionUnknown: a revision this code does not contain
        and no later release can have written: a branch-less one, or one
        not beyond this code's head of its branch.
    """
    scripts = _scripts(cfg)
    heads = {parse(head)[1]: head for head in scripts.get_heads()}
    found = dict.fromkeys(BRANCHES)
    for revision in db_heads:
        number, branch = parse(revision)
        later = (branch is not None and
                 number > parse(heads[branch])[0])
        if not later and not _known(scripts, revision):
            raise exception.SchemaRevisionUnknown(revision=revision)
        if branch is not None:
            found[branch] = revision
    return found


def _known(scripts, revision):
    try:
        return scripts.get_revision(revision) is not None
    except alembic.util.CommandError:
        return False


def check(db_heads, cfg=None):
    """Refuse a database this code cannot run on.

    Accepted: the expand branch at or beyond this code's head, the
    contract branch at or behind it (not entered yet included).

    :param db_heads: ``database_heads()``.
    :param cfg: an ``alembic_config()`` (default: this code's).
    :returns: ``branch_revisions()``.
    :raises SchemaOutOfDate: empty, or not expanded to this release
        (``db expand`` has not run since the upgrade).
    :raises SchemaContractedAhead: a later release contracted it.
    :raises SchemaRevisionUnknown: see ``branch_revisions``.
    """
    heads = code_heads(cfg)
    current = ', '.join(sorted(db_heads)) or 'none'
    if not db_heads:
        raise exception.SchemaOutOfDate(current=current, head=heads[EXPAND])
    found = branch_revisions(db_heads, cfg)
    if (found[EXPAND] is None or
            parse(found[EXPAND])[0] < parse(heads[EXPAND])[0]):
        raise exception.SchemaOutOfDate(current=current, head=heads[EXPAND])
    if (found[CONTRACT] is not None and
            parse(found[CONTRACT])[0] > parse(heads[CONTRACT])[0]):
        raise exception.SchemaContractedAhead(current=current,
                                              head=heads[CONTRACT])
    return found


def contract_pending(found, heads):
    """True when this code's contract migrations have not all run.

    :param found: ``check()``'s result; :param heads: ``code_heads()``.
    """
    return (found[CONTRACT] is None or
            parse(found[CONTRACT])[0] < parse(heads[CONTRACT])[0])


def upgrade(engine, branches=BRANCHES, cfg=None):
    """Apply this code's migrations of ``branches``, expand first.

    :param engine: a SQLAlchemy ``Engine``.
    :param branches: a subset of ``BRANCHES``.
    :param cfg: an ``alembic_config()`` (default: this code's).
    :returns: ``database_heads()`` afterwards.
    :raises SchemaRevisionUnknown: see ``branch_revisions``.
    :raises SchemaOutOfDate: contract alone asked for a database not
        expanded to this release (``db expand`` first).
    """
    cfg = cfg or alembic_config()
    heads = code_heads(cfg)
    with engine.connect() as conn:
        found = branch_revisions(database_heads(conn), cfg)
    for branch in BRANCHES:
        if branch not in branches:
            continue
        if branch == CONTRACT:
            with engine.connect() as conn:
                check(database_heads(conn), cfg)
        if (found[branch] is not None and
                parse(found[branch])[0] >= parse(heads[branch])[0]):
            continue   # there already, or a later release went further
        with engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.upgrade(cfg, '%s@head' % branch)
    with engine.connect() as conn:
        return database_heads(conn)
