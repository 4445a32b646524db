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

"""``accel-backend-status upgrade check``: is this deployment ready to run
(or to be upgraded)?  Built on oslo.upgradecheck, as ``nova-status`` and
``placement-status`` are; run it with the services' configuration::

    accel-backend-status --config-file /etc/accel-backend/accel-backend.conf \\
        upgrade check [--json]

Exit status 0 (all passed), 1 (warnings) or 2 (a failure), the
oslo.upgradecheck codes.  Checks:

* database schema expanded to this release (``accel-backend-manage db
  expand`` or ``db sync`` ran) and not contracted by a later one; a
  warning while this release's contract migrations have not run
  (``db contract``, once no process of the previous release is left);
* Nova sends a service token (``[service_user] send_service_user_token``
  in the ``nova.conf`` of ``[discovery] nova_config_file``): binding and
  unbinding ARQs need one (policy ``accelerator:arq:update``);
* the policy file, if any, is YAML, loads and names only known rules;
* no ARQ stuck in ``BindStarted`` for longer than 10 minutes (its host's
  agent is down or cannot reach the database);
* every host's last discovery pass was ``ok`` (``objects.host_status``);
* the ``[nova]`` credentials can list every project's servers, so that
  the audit may delete the ARQs of deleted instances
  (``accel_backend.conductor.nova_orphans``; a warning when they cannot, or
  when
  Nova cannot be asked; skipped with ``[audit] delete_orphaned_arqs =
  false`` or ``interval = 0``).
"""

import configparser
import datetime
import sys

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from accel_backend.api import policy
from accel_backend import cmd
from accel_backend.common import host_states
from accel_backend.conductor import nova_notifier
from accel_backend.conductor import nova_orphans
from accel_backend import conf as conf_mod
from accel_backend.db import api as db_api
from accel_backend.db import migration
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import host_status
from accel_common import arq_states

#: An ARQ in BindStarted for longer than this is reported (seconds).
STUCK_AFTER = 600
Code = upgradecheck.Code
Result = upgradecheck.Result


class Checks(upgradecheck.UpgradeCommands):
    """The checks, on the services' ``ConfigOpts``.

    :param conf: accel_backend ``ConfigOpts`` (parsed).
    """

    def __init__(self, conf):
        self.conf = conf

    def _database(self):
        return db_api.Database(self.conf.database.connection)

    def _check_schema(self):
        db = self._database()
        try:
            found = db.check_schema()
        except (exception.SchemaOutOfDate, exception.SchemaContractedAhead,
                exception.SchemaRevisionUnknown) as e:
            why = str(e)
            return Result(Code.FAILURE, why[:1].upper() + why[1:])
        finally:
            db.dispose()
        heads = migration.code_heads()
        if migration.contract_pending(found, heads):
            return Result(Code.WARNING, 'The contract migrations of this '
                          'release have not run (contract branch at %s, '
                          'this release has %s): once no process of the '
                          'previous release is left, run '
                          'accel-backend-manage db contract' % (
                              found[migration.CONTRACT] or 'none',
                              heads[migration.CONTRACT]))
        return Result(Code.SUCCESS)

    def _check_service_token(self):
        path = self.conf.discovery.nova_config_file
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        if not path or not parser.read(path):
            return Result(Code.WARNING, 'Cannot check Nova\'s [service_user]: '
                          'set [discovery] nova_config_file to the nova.conf '
                          'of Nova\'s API and compute services. Binding ARQs '
                          'needs their service token.')
        send = parser.get('service_user', 'send_service_user_token',
                          fallback='false').strip().lower()
        auth = parser.get('service_user', 'auth_type', fallback='').strip()
        if send in ('true', '1', 'yes', 'on') and auth:
            return Result(Code.SUCCESS)
        return Result(Code.FAILURE, '%s does not send a service token '
                      '([service_user] send_service_user_token = true and '
                      'auth_type): every bind and unbind of an ARQ would be '
                      'refused (policy accelerator:arq:update)' % path)

    def _check_policy(self):
        json_file = common_checks.check_policy_json(self, self.conf)
        if json_file.code != Code.SUCCESS:
            return json_file
        try:
            enforcer = policy.new_enforcer(self.conf)
        except Exception as e:
            return Result(Code.FAILURE, 'The policy file cannot be loaded: '
                          '%s' % e)
        if not enforcer.check_rules(raise_on_violation=False):
            return Result(Code.FAILURE, 'The policy file refers to rules '
                          'that do not exist (see the log)')
        return Result(Code.SUCCESS)

    def _read(self, query):
        """``query(session)`` in one transaction; None (the caller warns)
        when the database cannot answer it (e.g. the schema is behind)."""
        db = self._database()
        try:
            with db.transaction() as session:
                return query(session)
        except (sa.exc.SQLAlchemyError, db_exc.DBError):
            # oslo.db's engine translates a missing table into
            # DBNonExistentTable (a DBError, not a SQLAlchemyError).
            return None
        finally:
            db.dispose()

    def _check_stuck_arqs(self):
        since = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None) - datetime.timedelta(seconds=STUCK_AFTER)
        rows = self._read(lambda session: session.execute(sa.select(
            models.ARQ.hostname, sa.func.count()).where(
            models.ARQ.state == arq_states.BIND_STARTED,
            sa.func.coalesce(models.ARQ.updated_at,
                             models.ARQ.created_at) < since
        ).group_by(models.ARQ.hostname)).all())
        if rows is None:
            return Result(Code.WARNING, 'Cannot read the ARQs: is the '
                          'schema up to date?')
        if not rows:
            return Result(Code.SUCCESS)
        return Result(Code.WARNING, 'ARQs in BindStarted for more than %d s: '
                      '%s. Is the agent of that host running?' % (
                          STUCK_AFTER, ', '.join('%d on %s' % (n, h)
                                                 for h, n in rows)))

    def _check_discovery(self):
        bad = self._read(lambda session: [
            host_status.to_dict(r) for r in host_status.list_(session)
            if r.state != host_states.OK])
        if bad is None:
            return Result(Code.WARNING, 'Cannot read the hosts\' discovery '
                          'status: is the schema up to date?')
        if not bad:
            return Result(Code.SUCCESS)
        return Result(Code.WARNING, '; '.join(
            'host %s: discovery %s: %s' % (r['host'], r['state'], r['reason'])
            for r in bad))

    def _check_audit_scope(self):
        audit = self.conf.audit
        if not audit.delete_orphaned_arqs or not audit.interval:
            return Result(Code.SUCCESS)
        try:
            nova = nova_notifier.adapter_from_conf(self.conf)
        except Exception as e:
            return Result(Code.WARNING, 'The [nova] options cannot be '
                          'loaded (%s): the audit deletes no ARQ of a '
                          'deleted instance' % e)
        scope = nova_orphans.probe_scope(nova)
        if scope.state == nova_orphans.ALL_PROJECTS:
            return Result(Code.SUCCESS)
        return Result(Code.WARNING, 'The audit deletes no ARQ of a deleted '
                      'instance: %s' % scope.reason)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Nova service token', _check_service_token),
        ('Policy file', _check_policy),
        ('ARQs stuck binding', _check_stuck_arqs),
        ('Device discovery', _check_discovery),
        ('Audit of deleted instances', _check_audit_scope),
    )


@cmd.one_line_errors
def main(argv=None):
    """Console script entry point; returns the exit status (int)."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    return upgradecheck.main(
        conf, 'accel-backend', Checks(conf),
        argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
