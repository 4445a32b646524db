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

"""Proof that an instance is gone, before the audit frees its devices.

Nova answers ``GET /servers/<uuid>`` with 404 both for a deleted server
and for a live server of a project the caller cannot see: nova 34.0.0
filters instance reads by the caller's project unless the request context
is an administrator's (``nova/db/main/api.py``, ``project_only``).  A 404
alone is therefore no proof.  Before the audit deletes an ARQ because its
instance is gone (``accel_backend.conductor.audit``, step
``deleted_instances``),
every one of these must hold:

#. **scope**: the ``[nova]`` credentials may list every project's
   servers.  Checked before each audit with ``GET
   /servers?all_tenants=1&limit=1`` (policy
   ``os_compute_api:servers:index:get_all_tenants``, administrators by
   default in nova 34): 200 proves it, 403 disproves it (the deletion
   step is off, with a warning, the ``accel_audit_orphan_deletion`` gauge
   at 0, the ``/healthcheck`` detail and ``accel-backend-status upgrade
   check``), any other answer leaves it unproven for this audit;
#. **Nova**: ``GET /servers/<uuid>`` answers 404;
#. **Placement**: ``GET /allocations/<uuid>`` shows no allocation of
   the instance as a consumer (a live server holds at least its
   flavor's);
#. **twice**: 2. and 3. held at two audits in a row, at least ``[audit]
   grace_period`` seconds apart.  What the first audit saw is kept in
   memory: a restart forgets it, which only delays a deletion.

Any other answer keeps the ARQ and says why (``KEEP_REASONS``), in the
log and in ``accel_audit_kept_instances_total{reason}``.
"""

import collections
import threading
import time

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from accel_backend import exception
from accel_backend import metrics

LOG = logging.getLogger(__name__)

#: The scope probe: one server of any project, the body is not read.
SCOPE_PROBE = '/servers?all_tenants=1&limit=1'

#: Why an instance that may be gone was kept (``Verdict.reason``).
NOVA_UNREACHABLE = 'nova_unreachable'
NOVA_ERROR = 'nova_error'
NOVA_FORBIDDEN = 'nova_forbidden'
PLACEMENT_ALLOCATIONS = 'placement_allocations'
PLACEMENT_ERROR = 'placement_error'
NOT_CONFIRMED = 'not_confirmed'
KEEP_REASONS = (NOVA_UNREACHABLE, NOVA_ERROR, NOVA_FORBIDDEN,
                PLACEMENT_ALLOCATIONS, PLACEMENT_ERROR, NOT_CONFIRMED)

#: ``Scope.state``: what the ``[nova]`` credentials can see.
ALL_PROJECTS = 'all_projects'
OWN_PROJECT = 'own_project'
UNKNOWN = 'unknown'

#: ``(state, reason)``: ``state`` one of ``ALL_PROJECTS``,
#: ``OWN_PROJECT``, ``UNKNOWN``; ``reason`` a sentence for operators.
Scope = collections.namedtuple('Scope', 'state reason')

#: ``(gone, reason)``: ``gone`` True when Nova and Placement both say the
#: instance is gone at this audit; else ``reason`` (one of
#: ``KEEP_REASONS``, or None for a live server) and ``detail``.
Verdict = collections.namedtuple('Verdict', 'gone reason detail')
_LIVE = Verdict(False, None, None)


def probe_scope(nova):
    """What the credentials of ``nova`` can see of Nova's servers.

    :param nova: keystoneauth1 ``Adapter`` of the compute API.
    :returns: ``Scope``.  Never raises for an answer or an unreachable
        Nova (those are ``UNKNOWN``).
    """
    try:
        resp = nova.get(SCOPE_PROBE, raise_exc=False)
    except ks_exc.ClientException as e:
        return Scope(UNKNOWN, 'Nova cannot be asked whether the [nova] '
                     'credentials see every project (%s)' % e)
    if resp.status_code == 200:
        return Scope(ALL_PROJECTS, 'the [nova] credentials list every '
                     "project's servers")
    if resp.status_code == 403:
        return Scope(OWN_PROJECT, "Nova refuses to list every project's "
                     'servers to the [nova] credentials (403 to GET %s, '
                     'policy os_compute_api:servers:index:get_all_tenants):'
                     " it answers 404 for other projects' live servers, so "
                     'ARQs of deleted instances are not deleted; give '
                     'these credentials the admin role to turn the '
                     'deletion on' % SCOPE_PROBE)
    return Scope(UNKNOWN, 'Nova answered %d to GET %s' %
                 (resp.status_code, SCOPE_PROBE))


def instance_verdict(nova, placement, instance):
    """Do Nova and Placement both say ``instance`` is gone, now?

    :param nova: keystoneauth1 ``Adapter`` of the compute API, with
        credentials proven (``probe_scope``) to see every project.
    :param placement: ``accel_backend.agent.placement.client.PlacementClient``.
    :param instance: the instance UUID (str).
    :returns: ``Verdict``; never raises for an answer or an unreachable
        service.
    """
    try:
        resp = nova.get('/servers/%s' % instance, raise_exc=False)
    except ks_exc.ClientException as e:
        return Verdict(False, NOVA_UNREACHABLE, str(e))
    if resp.status_code in (401, 403):
        return Verdict(False, NOVA_FORBIDDEN,
                       'Nova answered %d' % resp.status_code)
    if resp.status_code != 404:
        if resp.status_code < 400:
            return _LIVE
        return Verdict(False, NOVA_ERROR,
                       'Nova answered %d' % resp.status_code)
    try:
        allocations = placement.get(
            '/allocations/%s' % instance).json().get('allocations')
    except (exception.PlacementError, ks_exc.ClientException,
            ValueError) as e:
        return Verdict(False, PLACEMENT_ERROR, str(e))
    if allocations:
        return Verdict(False, PLACEMENT_ALLOCATIONS,
                       'Nova answered 404 but Placement holds allocations '
                       'of the instance on %s' % ', '.join(sorted(
                           allocations)))
    return Verdict(True, None, None)


class OrphanFinder:
    """Tells which instances are proven gone, audit after audit.

    :param nova: keystoneauth1 ``Adapter`` of the compute API.
    :param placement: ``accel_backend.agent.placement.client.PlacementClient``.
    :param grace_period: seconds between the two audits that must both
        find an instance gone (``[audit] grace_period``; 0: two audits in
        a row).
    :param host: the ``host`` label of the metrics.
    :param clock: a monotonic clock in seconds (tests).

    ``scope`` holds the last ``Scope`` (None before the first audit).
    """

    def __init__(self, nova, placement, grace_period, host='',
                 clock=time.monotonic):
        self.nova = nova
        self.placement = placement
        self.grace_period = grace_period
        self.host = host
        self.clock = clock
        self.scope = None
        self._suspects = {}
        self._lock = threading.Lock()
        metrics.AUDIT_ORPHAN_DELETION.labels(host=host).set(0)

    def check_scope(self):
        """Probe the credentials' scope (``probe_scope``); logs one line
        when the answer changes and sets ``accel_audit_orphan_deletion``.

        :returns: ``Scope``.
        """
        scope = probe_scope(self.nova)
        with self._lock:
            changed = self.scope is None or \
                self.scope.state != scope.state
            self.scope = scope
        on = scope.state == ALL_PROJECTS
        metrics.AUDIT_ORPHAN_DELETION.labels(host=self.host).set(int(on))
        if changed and on:
            LOG.info('Audit: deleting the ARQs of deleted instances is on: '
                     '%s', scope.reason)
        elif changed:
            LOG.warning('Audit: deleting the ARQs of deleted instances is '
                        'off: %s', scope.reason)
        return scope

    def gone(self, instances, hostname=None):
        """The instances proven gone now and at an audit at least
        ``grace_period`` seconds earlier; the others are kept.

        Call ``check_scope`` first: nothing is proven gone unless the last
        scope was ``ALL_PROJECTS``.

        :param instances: instance UUIDs whose ARQs the audit may delete.
        :param hostname: the audited host (str or None): what was first
            found gone is remembered per host, as a conductor's audit
            shares one finder between the hosts it audits in turn
            (``conductor.audit_hosts``); one host's audit forgets only
            its own instances that were not found gone again.
        :returns: ``(gone, kept)``: a list of UUIDs, and a list of
            ``(uuid, reason, detail)`` of instances that may be gone but
            are kept (reason one of ``KEEP_REASONS``).
        """
        now = self.clock()
        gone, kept = [], []
        if self.scope is None or self.scope.state != ALL_PROJECTS:
            with self._lock:
                self._suspects.clear()
            return gone, kept
        with self._lock:
            known = self._suspects.get(hostname, {})
        suspects = {}
        for instance in instances:
            verdict = instance_verdict(self.nova, self.placement, instance)
            if verdict.reason is not None:
                kept.append((instance, verdict.reason, verdict.detail))
            if not verdict.gone:
                continue
            first = known.get(instance)
            if first is not None and now - first >= self.grace_period:
                gone.append(instance)
                continue
            suspects[instance] = now if first is None else first
            kept.append((instance, NOT_CONFIRMED,
                         'first found gone; deleted when still gone at an '
                         'audit %s s after the first' % self.grace_period))
        # An instance of this host not asked about again (its ARQs went,
        # or it came back) is forgotten.
        with self._lock:
            self._suspects[hostname] = suspects
        for instance, reason, detail in kept:
            metrics.AUDIT_KEPT_INSTANCES.labels(
                host=self.host, reason=reason).inc()
            log = LOG.info if reason == NOT_CONFIRMED else LOG.warning
            log('Audit: keeping the ARQs of instance %s (%s): %s',
                instance, reason, detail)
        return gone, kept
