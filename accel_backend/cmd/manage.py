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

"""``accel-backend-manage``:

* ``db expand``: this release's additive migrations (the ``expand``
  branch, ``accel_backend.db.migration``); the processes of the previous
  release keep working on the result, so it runs first in a rolling
  upgrade;
* ``db contract``: this release's removals (the ``contract`` branch);
  refused before ``db expand``; run it once no process of the previous
  release is left;
* ``db sync``: both, expand first: a new database, or an upgrade with
  every process stopped (SQLite, PostgreSQL, MySQL);
* ``db version``: the database's revision on each branch and this
  release's;
* ``discovery sync [--force]``: one discovery and Placement report pass
  of this host (``[DEFAULT] host``), now; ``--force`` removes the devices
  and providers that vanished even when they are more than ``[discovery]
  max_removal_share`` of the host's (after the operator checked that they
  are really gone). Exit status 1 with the reason when the pass is
  refused. It stores in the database when the configuration names one
  (``[database] connection``), else through a conductor, as the agent of
  a compute node does;
* ``discovery status``: the last discovery pass of every host (``ok``,
  ``refused`` or ``failing``, when, why); exit status 1 when a host is
  not ``ok``, for monitoring;
* ``discovery sync --no-report``: discovery only, into the database, no
  Placement (before ``import-cyborg``: Cyborg's providers must not get a
  twin);
* ``import-cyborg --cyborg-connection URL [--apply]``: adopt a stopped
  Cyborg 17 deployment (``accel_backend.cyborg_import``);
* ``audit deleted-instances [--grace-period S]``: the audit's
  ``deleted_instances`` step for ``[DEFAULT] host`` now, with the
  services' ``[nova]`` and ``[placement]`` credentials: ARQs of instances
  proven gone (``accel_backend.conductor.nova_orphans``) are deleted; a second
  pass
  ``S`` seconds later (default ``[audit] grace_period``) confirms the
  instances the first found gone.  Exit status 0 when the step could run
  (the credentials see every project), 1 with the reason when it could
  not (nothing is deleted then);
* ``device drain|undrain <host|deployable UUID> [--reason R]``: taint
  ``NoSchedule`` for maintenance and print what is still in use, or
  remove that taint (``accel_backend.cmd.manage_device``).
"""

import sys
import time

from alembic import util as alembic_util
from oslo_config import cfg

from accel_backend.agent.placement import client as pclient
from accel_backend import cmd
from accel_backend.cmd import manage_device
from accel_backend.common import host_states
from accel_backend.conductor import audit
from accel_backend.conductor import nova_notifier
from accel_backend.conductor import nova_orphans
from accel_backend import conf as conf_mod
from accel_backend import cyborg_import
from accel_backend.db import api as db_api
from accel_backend.db import migration
from accel_backend import exception
from accel_backend import notifications
from accel_backend.objects import host_status
from accel_backend import service as service_mod


def _db_upgrade(conf, branches, done):
    db = db_api.Database.from_conf(conf)
    try:
        db.sync(branches)
        current = db.schema_revisions()[0]
    except (exception.SchemaOutOfDate, exception.SchemaContractedAhead,
            exception.SchemaRevisionUnknown,
            alembic_util.CommandError) as e:
        print('%s refused: %s' % (' and '.join(branches), e),
              file=sys.stderr)
        return 1
    finally:
        db.dispose()
    print('Database %s: at revision %s' % (done, ', '.join(sorted(current))))
    return 0


def _db_sync(conf):
    return _db_upgrade(conf, migration.BRANCHES, 'expanded and contracted')


def _db_expand(conf):
    return _db_upgrade(conf, (migration.EXPAND,), 'expanded')


def _db_contract(conf):
    return _db_upgrade(conf, (migration.CONTRACT,), 'contracted')


def _db_version(conf):
    db = db_api.Database.from_conf(conf)
    try:
        current, heads = db.schema_revisions()
        found = migration.branch_revisions(current)
    except exception.SchemaRevisionUnknown as e:
        print(str(e), file=sys.stderr)
        return 1
    finally:
        db.dispose()
    for branch in migration.BRANCHES:
        print('%s\tdatabase %s\trelease %s' % (
            branch, found[branch] or 'none', heads[branch]))
    return 0


def _discovery_sync(conf):
    # The agent's role: discovery, no API, no schema change.  Stored in
    # the database where the file names one, else (a compute node's file,
    # without [database]) through a conductor, as the agent stores.
    named = conf.get_location('connection', 'database').location != \
        cfg.Locations.opt_default
    svc = service_mod.Service(conf, role=service_mod.AGENT,
                              direct_db=named)
    try:
        records = svc.report_pass(force=conf.category.force,
                                  report=not conf.category.no_report)
    except (exception.SysfsRootUnavailable,
            exception.MassRemovalRefused) as e:
        print('Refused: %s' % e, file=sys.stderr)
        return 1
    finally:
        svc.stop()
    print('%d deployables of host %s %s' % (
        len(records), conf.host,
        'stored (not reported)' if conf.category.no_report else 'reported'))
    return 0


def _discovery_status(conf):
    db = db_api.Database(conf.database.connection)
    try:
        with db.transaction() as session:
            rows = [host_status.to_dict(r)
                    for r in host_status.list_(session)]
    finally:
        db.dispose()
    for r in rows:
        print('%s\t%s\t%s\t%s' % (r['host'], r['state'], r['updated_at'],
                                  r['reason'] or ''))
    return 0 if all(r['state'] == host_states.OK for r in rows) else 1


def _audit_deleted_instances(conf):
    host = conf.host
    grace = conf.category.grace_period
    if grace is None:
        grace = conf.audit.grace_period
    if not conf.audit.delete_orphaned_arqs:
        print('[audit] delete_orphaned_arqs is false: nothing to do',
              file=sys.stderr)
        return 1
    db = db_api.Database.from_conf(conf)
    notes = notifications.Notifications(conf)
    auditor = audit.Auditor(
        db, host, nova=nova_notifier.adapter_from_conf(conf),
        placement=pclient.PlacementClient(pclient.adapter_from_conf(conf),
                                          host=host),
        grace_period=grace, notifications=notes)
    steps = ('deleted_instances',)
    try:
        reports = [auditor.run(steps)]
        if any(k[1] == nova_orphans.NOT_CONFIRMED
               for k in reports[0].kept_instances):
            print('Confirming in %d s the instances found gone' % grace)
            time.sleep(grace)
            reports.append(auditor.run(steps))
    finally:
        notes.close()
        db.dispose()
    last = reports[-1]
    if last.errors:
        print('Failed: %s' % last.errors[0][1], file=sys.stderr)
        return 1
    if last.scope.state != nova_orphans.ALL_PROJECTS:
        print('Nothing deleted: %s' % last.scope.reason, file=sys.stderr)
        return 1
    deleted = sum((r.deleted_arqs for r in reports), [])
    instances = sum((r.deleted_instances for r in reports), [])
    print('Host %s: deleted %d ARQs of %d instances proven gone%s' % (
        host, len(deleted), len(instances),
        ''.join('\n  instance %s' % i for i in instances)))
    for instance, reason, detail in last.kept_instances:
        print('  kept instance %s (%s): %s' % (instance, reason, detail))
    return 0


def add_commands(subparsers):
    db = subparsers.add_parser('db', help='database schema')
    db_sub = db.add_subparsers(dest='action', required=True)
    for name, func, text in (
            ('expand', _db_expand, 'additive migrations only (safe while '
             'processes of the previous release run)'),
            ('contract', _db_contract, 'removals, after db expand, once no '
             'process of the previous release is left'),
            ('sync', _db_sync, 'expand then contract: create the schema '
             'or upgrade it with every process stopped'),
            ('version', _db_version, 'the revisions of the database and '
             'of this release')):
        db_sub.add_parser(name, help=text).set_defaults(func=func)
    disc = subparsers.add_parser('discovery', help='device discovery')
    disc_sub = disc.add_subparsers(dest='action', required=True)
    dsync = disc_sub.add_parser(
        'sync', help='discover and report this host\'s devices now')
    dsync.add_argument('--force', action='store_true',
                       help='remove vanished devices even beyond '
                            '[discovery] max_removal_share')
    dsync.add_argument('--no-report', action='store_true',
                       help='store what discovery finds, report nothing '
                            'to Placement (before import-cyborg)')
    dsync.set_defaults(func=_discovery_sync)
    dstatus = disc_sub.add_parser(
        'status', help='last discovery pass of every host')
    dstatus.set_defaults(func=_discovery_status)
    aud = subparsers.add_parser('audit', help='the periodic audit, now')
    aud_sub = aud.add_subparsers(dest='action', required=True)
    gone = aud_sub.add_parser(
        'deleted-instances', help='delete the ARQs of instances proven '
        'gone (two passes, grace period apart)')
    gone.add_argument('--grace-period', type=int, default=None,
                      help='seconds between the two passes (default '
                           '[audit] grace_period)')
    gone.set_defaults(func=_audit_deleted_instances)
    cyborg_import.add_parser(subparsers)
    manage_device.add_parser(subparsers)


@cmd.one_line_errors
def main(argv=None):
    """Console script entry point; returns the exit status (int)."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf.register_cli_opt(cfg.SubCommandOpt('category',
                                            handler=add_commands))
    conf(sys.argv[1:] if argv is None else argv, project='accel-backend')
    return conf.category.func(conf) or 0


if __name__ == '__main__':
    sys.exit(main())
