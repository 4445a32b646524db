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

"""Errors of the services accel_backend depends on or is run with:
Placement, the database schema and options, and the Cyborg import."""

from accel_backend.exception.base import AccelBackendError
from accel_backend.exception import codes


class PlacementError(AccelBackendError):
    """502: Placement answered a call with an unexpected status
    (``agent.placement.client``), or a provider's generation kept conflicting
    (``agent.placement.report``).

    :param method: the HTTP method (str).
    :param url: the Placement URL (str).
    :param status: Placement's status code (int).
    :param body: Placement's answer, 500 characters at most (str).
    """
    status = 502
    code = codes.PLACEMENT_ERROR
    msg_fmt = 'Placement call %(method)s %(url)s failed: %(status)s %(body)s'


class ComputeNodeProviderNotFound(AccelBackendError):
    """503: no resource provider of Placement is named
    like this host's compute node: the device providers have no parent
    yet.

    :param names: the names tried (list of str).
    """
    status = 503
    code = codes.PLACEMENT_COMPUTE_NODE_NOT_FOUND
    msg_fmt = ('No resource provider named any of %(names)s in Placement: '
               'is nova-compute running on this host?')


class SchemaOutOfDate(AccelBackendError):
    """The database schema is not at the revision this code needs; the
    process refuses to start rather than run on it."""
    status = 503
    code = codes.DATABASE_SCHEMA_OUT_OF_DATE
    msg_fmt = ('the database schema is at revision %(current)s, this '
               'release needs %(head)s: run accel-backend-manage db sync '
               '(db expand while processes of the previous release run)')


class SchemaContractedAhead(AccelBackendError):
    """A later release ran its contract migrations
    (``accel_backend.db.migration``): they may have dropped what this
    release uses, so its processes refuse to run on the database."""
    status = 503
    code = codes.DATABASE_SCHEMA_CONTRACTED_AHEAD
    msg_fmt = ('the database schema is at revision %(current)s, contracted '
               'beyond this release\'s %(head)s by a later release: this '
               'release\'s processes cannot run on it, upgrade them')


class SchemaRevisionUnknown(AccelBackendError):
    """The database holds an alembic revision that neither this code nor
    a later release of it can have written."""
    status = 503
    code = codes.DATABASE_SCHEMA_REVISION_UNKNOWN
    msg_fmt = ('the database schema is at revision %(revision)s, which '
               'this release does not know: is [database] connection the '
               'database of accel-backend?')


class DatabaseOptionUnsupported(AccelBackendError):
    """A ``[database]`` option oslo.db offers that accel_backend does not
    honour is set (``accel_backend.db.api``): refused at start rather
    than silently ignored."""

    code = codes.CONFIG_DATABASE
    msg_fmt = ('[database] %(option)s is not supported: %(reason)s; unset '
               'it')


class CyborgImportRefused(AccelBackendError):
    """``accel-backend-manage import-cyborg`` will not run: Cyborg is
    still writing, or the source is no Cyborg 17 database
    (``accel_backend.cyborg_import``)."""

    code = codes.CYBORG_IMPORT_REFUSED
    msg_fmt = 'Cyborg import refused: %(reason)s'


class NotThisHost(AccelBackendError):
    """403: an agent asked the conductor to change a row of another host
    (``accel_backend.conductor.store``); nothing changed.

    :param host: the host the agent acts for (str).
    :param kind: ``attach handle`` or ``resource provider``.
    :param ident: the row's UUID (str).
    """
    status = 403
    code = codes.CONDUCTOR_NOT_THIS_HOST
    msg_fmt = ('refused: the agent of host %(host)s may not change '
               '%(kind)s %(ident)s, which belongs to another host')


class ConductorUnavailable(AccelBackendError):
    """503: an agent could not reach the conductor (``[conductor]
    topic``) within ``[conductor] call_timeout`` seconds; the work is
    retried at the agent's next pass.

    :param method: the RPC method (str).
    :param reason: the messaging error (exception or str).
    """
    status = 503
    code = codes.CONDUCTOR_UNAVAILABLE
    msg_fmt = 'the conductor did not answer %(method)s: %(reason)s'


class PoolMigrationIncomplete(AccelBackendError):
    """503: a host's per-device providers are being replaced by pooled
    ones (``agent.placement.reshape.migrate``) and the migration did not
    finish; it is finished by the next discovery pass, and binds that
    find no attach handle on the host meanwhile wait, ``BindStarted``
    (``conductor.failure.HOST_MIGRATING``).

    :param host: the host (str).
    :param reason: what failed (exception or str).
    """
    status = 503
    code = codes.DISCOVERY_POOL_MIGRATION_INCOMPLETE
    msg_fmt = ('host %(host)s is migrating to pooled providers, not '
               'finished yet: %(reason)s')
