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

"""Host status: the outcome of each host's last discovery pass.

Written by the agent (or the embedded service) after every pass and when
it refuses to start; read by the API's ``/healthcheck``
(``accel_backend.api.health``) and ``accel-backend-manage discovery
status``.  The states are ``accel_backend.common.host_states``.
"""

import sqlalchemy as sa

from accel_backend.db import models


def record(session, hostname, state, reason=None, code=None):
    """Set the status of ``hostname`` (one row per host, upserted).

    :param state: one of ``common.host_states`` (str): ``OK``,
        ``DEGRADED``, ``REFUSED``, ``FAILING`` or ``MIGRATING``.
    :param reason: the error message (str) or None.
    :param code: the error's stable code (``AccelBackendError.code``) or
        None.
    """
    row = session.get(models.HostStatus, hostname)
    if row is None:
        row = models.HostStatus(hostname=hostname)
        session.add(row)
    row.state, row.reason, row.code = state, reason, code
    # A pass that changes nothing still says the host is alive.
    row.updated_at = models.utcnow()


def list_(session):
    """Every host's status, by host name (list of ``HostStatus``)."""
    return list(session.scalars(sa.select(models.HostStatus).order_by(
        models.HostStatus.hostname)))


def to_dict(row):
    """``{"host", "state", "code", "reason", "updated_at"}`` (ISO 8601)."""
    return {'host': row.hostname, 'state': row.state, 'code': row.code,
            'reason': row.reason,
            'updated_at': row.updated_at.isoformat() + 'Z'}
