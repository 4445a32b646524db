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

"""The audit of every host, for a conductor.

``accel_backend.conductor.audit.Auditor`` audits the ARQs and attach handles
of one
host.  A conductor (``accel-backend-conductor``, or an embedded
``accel-backend`` with ``[binding] mode = agents``) audits every host
with devices or ARQs in the database: ``AllHosts`` keeps one ``Auditor``
per host, all sharing one ``conductor.nova_orphans.OrphanFinder`` (one probe
of the
``[nova]`` credentials' scope per audit, one two-audit memory of
suspected instances).  The cleanings of another host's agent are not in
this process: a handle left ``dirty`` is left to that agent's poll, and
its agent is woken with a ``clean`` cast.
"""

import sqlalchemy as sa

from accel_backend.conductor import audit
from accel_backend.conductor import nova_orphans
from accel_backend.db import models


class AllHosts:
    """``Auditor.run`` for every host; same interface as ``Auditor``.

    :param db: ``accel_backend.db.api.Database``.
    :param make_auditor: ``(hostname, orphan_finder) -> audit.Auditor``.
    :param finder: the shared ``nova_orphans.OrphanFinder`` or None (the
        ``deleted_instances`` step off).
    """

    def __init__(self, db, make_auditor, finder=None):
        self.db = db
        self.make_auditor = make_auditor
        self.orphans = finder
        self._auditors = {}

    @classmethod
    def from_service(cls, service):
        """The audit of a conductor ``accel_backend.service.Service``."""
        conf = service.conf
        finder = None
        if conf.audit.delete_orphaned_arqs:
            finder = nova_orphans.OrphanFinder(
                service.notifier.adapter, service.placement,
                conf.audit.grace_period, host=conf.host)

        def make_auditor(hostname, shared):
            auditor = audit.Auditor(
                service.db, hostname, binder=service.binder,
                grace_period=conf.audit.grace_period,
                cleaning_timeout=conf.cleaning.timeout,
                notifications=service.notifications,
                reserved=service.reporter.reserved)
            auditor.orphans = shared
            return auditor
        return cls(service.db, make_auditor, finder)

    def hosts(self):
        """Every host with a device or an ARQ (sorted list of str)."""
        with self.db.transaction() as session:
            found = set(session.scalars(
                sa.select(models.Device.hostname).distinct()))
            found.update(session.scalars(
                sa.select(models.ARQ.hostname).distinct()
                .where(models.ARQ.hostname.isnot(None))))
        return sorted(found)

    def check_scope(self):
        """See ``Auditor.check_scope``."""
        return self.orphans.check_scope() if self.orphans else None

    def run(self, steps=audit.Auditor.STEPS):
        """Audit every host (``Auditor.run``).

        :returns: ``conductor.audit.AuditReport`` of all hosts together.
        """
        total = audit.AuditReport()
        for hostname in self.hosts():
            auditor = self._auditors.get(hostname)
            if auditor is None:
                auditor = self._auditors[hostname] = self.make_auditor(
                    hostname, self.orphans)
            report = auditor.run(steps)
            for name, value in report.as_dict().items():
                if isinstance(value, list):
                    getattr(total, name).extend(value)
                elif value is not None:
                    setattr(total, name, value)
        return total
