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

"""``GET /healthcheck``: oslo.middleware's health check with four backends
of ours (entry points ``oslo.middleware.healthcheck``):

* ``accel_database``: the database answers (``SELECT 1``);
* ``accel_placement``: Placement answers its version document
  (``GET /``);
* ``accel_discovery``: no host's last discovery pass was refused,
  failed or degraded (``objects.host_status``: a sysfs root that cannot
  be read, a Nova ``[pci] device_spec`` that cannot be used or has values
  that do not parse, a refused mass removal, Placement unreachable...);
  the reason names the hosts and why;
* ``accel_audit``: always available; says whether the audit deletes the
  ARQs of deleted instances, and why not (``AuditCheck``);
* ``accel_devices``: always available; counts the device taints by
  effect (an operator's, the drain's, health faults', the audit's,
  ``objects.taint``) and lists them in the details (``DeviceTaintCheck``).

``[healthcheck] backends`` chooses them (default: all five); a load balancer
that should only take an API node out when its own database is gone
wants ``accel_database`` alone.  ``[healthcheck] detailed = true`` adds
each host's status to the JSON answer.  The check is served without a
token, as the version documents are.

oslo.middleware builds its backends from the ``ConfigOpts`` alone
(``HealthcheckBaseExtension(oslo_conf, conf)``); the service that owns a
``ConfigOpts`` is found through ``register()``.
"""

import weakref

from oslo_log import log as logging
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from accel_backend.common import host_states
from accel_backend.conductor import nova_orphans
from accel_backend.db import models
from accel_backend.objects import host_status
from accel_common import taints

LOG = logging.getLogger(__name__)

# id(ConfigOpts) -> Service (a ConfigOpts is a Mapping: not hashable);
# the service holds its ConfigOpts, so the id is not reused meanwhile.
_SERVICES = weakref.WeakValueDictionary()


def register(conf, service):
    """Make ``service`` (``accel_backend.service.Service``) the one whose
    database the backends of ``conf``'s health check read."""
    _SERVICES[id(conf)] = service


def make_app(conf, service):
    """The ``/healthcheck`` WSGI app of ``service``.

    :raises stevedore.exception.NoMatches: a ``[healthcheck] backends``
        name that is no installed backend.
    """
    register(conf, service)
    return healthcheck.Healthcheck(None, conf)


def _db_failure(error, what):
    """The answer of a backend whose database read failed.

    The reason (shown to anyone, a load balancer included) says only that
    the database cannot be reached; what the driver said, which may name
    the server's address, goes to the details (``[healthcheck] detailed``)
    and to the log.

    :param error: the exception (oslo.db's, SQLAlchemy's or the
        driver's).
    :param what: the reason's start, e.g. ``database unreachable``.
    :returns: ``HealthcheckResult`` (unavailable).
    """
    cause = error
    for attr in ('inner_exception', 'orig'):   # oslo.db, then SQLAlchemy
        cause = getattr(cause, attr, None) or cause
    lines = str(cause).strip().splitlines()
    details = '%s: %s' % (type(cause).__name__,
                          lines[0][:300] if lines else '')
    LOG.warning('Health check: %s: %s', what, details)
    return pluginbase.HealthcheckResult(
        available=False, reason='%s: the database does not answer' % what,
        details=details)


class _ServiceCheck(pluginbase.HealthcheckBaseExtension):

    def _service(self):
        return _SERVICES[id(self.oslo_conf)]

    def _db(self):
        return self._service().db


class DatabaseCheck(_ServiceCheck):
    """Available when the database answers ``SELECT 1``."""

    def healthcheck(self, server_port):
        """:returns: ``HealthcheckResult``."""
        try:
            with self._db().transaction() as session:
                session.execute(sa.text('SELECT 1'))
        except Exception as e:
            return _db_failure(e, 'database unreachable')
        return pluginbase.HealthcheckResult(available=True,
                                            reason='database OK')


class PlacementCheck(_ServiceCheck):
    """Available when Placement answers ``GET /`` (its version document,
    through the service's own keystoneauth adapter)."""

    def healthcheck(self, server_port):
        """:returns: ``HealthcheckResult``."""
        try:
            resp = self._service().placement.adapter.get(
                '/', raise_exc=False)
        except Exception as e:
            return pluginbase.HealthcheckResult(
                available=False, reason='placement unreachable: %s' %
                type(e).__name__, details=str(e))
        if resp.status_code != 200:
            return pluginbase.HealthcheckResult(
                available=False, reason='placement answered %d' %
                resp.status_code)
        return pluginbase.HealthcheckResult(available=True,
                                            reason='placement OK')


class DiscoveryCheck(_ServiceCheck):
    """Available when every host's last discovery pass succeeded."""

    def healthcheck(self, server_port):
        """:returns: ``HealthcheckResult`` whose reason names each host
        that refuses or fails, with why."""
        try:
            with self._db().transaction() as session:
                rows = [host_status.to_dict(r)
                        for r in host_status.list_(session)]
        except Exception as e:
            return _db_failure(e, 'host status unreadable')
        bad = [r for r in rows if r['state'] != host_states.OK]
        if not bad:
            return pluginbase.HealthcheckResult(
                available=True, reason='discovery OK on %d hosts' %
                len(rows), details=rows)
        return pluginbase.HealthcheckResult(
            available=False, reason='; '.join(
                'host %s: discovery %s: %s' % (
                    r['host'], r['state'], r['reason']) for r in bad),
            details=rows)


class AuditCheck(_ServiceCheck):
    """Always available; says whether this process's audit deletes the ARQs
    of deleted instances, and if not, why
    (``accel_backend.conductor.nova_orphans``:
    ``[nova]`` credentials that cannot see every project's servers turn
    that step off).  Not a reason to take the node out of a load
    balancer: nothing is deleted on a doubt."""

    def healthcheck(self, server_port):
        """:returns: ``HealthcheckResult`` (available) whose reason starts
        with ``audit:`` and whose details are ``{"orphan_deletion":
        "on"|"off"|"unknown"|"disabled"|"not here", "scope": state,
        "reason": sentence}``."""
        auditor = self._service().auditor
        finder = auditor.orphans if auditor is not None else None
        if finder is None:
            state = 'disabled' if auditor is not None else 'not here'
            why = ('[audit] delete_orphaned_arqs is false or Nova or '
                   'Placement is not configured' if auditor is not None
                   else 'this process runs no audit (the agents do)')
            details = {'orphan_deletion': state, 'scope': None,
                       'reason': why}
        else:
            scope = finder.scope
            if scope is None:
                details = {'orphan_deletion': 'unknown', 'scope': None,
                           'reason': 'the [nova] credentials are not '
                           'checked yet'}
            else:
                on = scope.state == nova_orphans.ALL_PROJECTS
                details = {'orphan_deletion': 'on' if on else 'off',
                           'scope': scope.state, 'reason': scope.reason}
        return pluginbase.HealthcheckResult(
            available=True, reason='audit: deleting ARQs of deleted '
            'instances %(orphan_deletion)s: %(reason)s' % details,
            details=details)


class DeviceTaintCheck(_ServiceCheck):
    """Always available (a failed device is no reason to take an API node
    out of a load balancer); says how many device taints there are by
    effect, so that a health fault (``conductor.health_taints``) shows
    here as the operator's own taints do."""

    def healthcheck(self, server_port):
        """:returns: ``HealthcheckResult`` (available, unless the
        database cannot be read) whose reason is ``devices: <n> NoExecute,
        <m> NoSchedule taints`` and whose details list each taint as
        ``{"host", "deployable", "function", "key", "effect", "reason",
        "set_by"}`` (host, then deployable name order)."""
        try:
            with self._db().transaction() as session:
                rows = session.execute(
                    sa.select(models.Device.hostname, models.Deployable.name,
                              models.DeployableTaint.function,
                              models.DeployableTaint.key,
                              models.DeployableTaint.effect,
                              models.DeployableTaint.reason,
                              models.DeployableTaint.set_by)
                    .join(models.Deployable,
                          models.DeployableTaint.deployable_id ==
                          models.Deployable.id)
                    .join(models.Device,
                          models.Deployable.device_id == models.Device.id)
                    .order_by(models.Device.hostname, models.Deployable.name,
                              models.DeployableTaint.function,
                              models.DeployableTaint.key)).all()
        except Exception as e:
            return _db_failure(e, 'device taints unreadable')
        details = [{'host': host, 'deployable': name,
                    'function': function or None, 'key': key,
                    'effect': effect, 'reason': reason, 'set_by': set_by}
                   for host, name, function, key, effect, reason, set_by
                   in rows]
        counts = {effect: sum(1 for d in details if d['effect'] == effect)
                  for effect in taints.EFFECTS}
        return pluginbase.HealthcheckResult(
            available=True, reason='devices: %d %s, %d %s taints' % (
                counts[taints.NO_EXECUTE], taints.NO_EXECUTE,
                counts[taints.NO_SCHEDULE], taints.NO_SCHEDULE),
            details=details)
