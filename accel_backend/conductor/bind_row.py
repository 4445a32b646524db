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

"""ARQs locked for binding, read and written as rows of SQLAlchemy Core.

A bind PATCH and a conductor's binder read the ARQs
they bind here (``lock``), change them through the rules of
``accel_backend.objects.arq`` (``start_binding``, ``transition``) and
write what a binding changes back in one ``UPDATE`` (``write``).
"""

import sqlalchemy as sa

from accel_backend.db import api as db_api
from accel_backend.db import models

_UUIDS = sa.bindparam('uuids', expanding=True)
#: What a binding changes on an ARQ (``objects.arq.start_binding``,
#: ``transition`` and the binder's attach handle), written by ``write``.
_BINDING = ('state', 'pending_event', 'hostname', 'device_rp_uuid',
            'instance_uuid', 'project_id', 'attach_handle_id')
_ARQS = models.ARQ.__table__
_WRITE_BINDING = (
    sa.update(_ARQS)
    .where(_ARQS.c.id == sa.bindparam('row_id'))
    .values({c: sa.bindparam('new_' + c) for c in _BINDING}))
#: The locked read of the ARQs a bind PATCH (or a conductor) binds: Core
#: rows, in id order (the one lock order), ``FOR UPDATE``.
_LOCK_FOR_BIND = (sa.select(_ARQS).where(_ARQS.c.uuid.in_(_UUIDS))
                  .order_by(_ARQS.c.id).with_for_update())


class BindRow:
    """An ARQ locked for binding, read as a row of SQLAlchemy Core rather
    than as a ``models.ARQ``: the binding reads a few columns, changes
    them through the same rules (``objects.arq.start_binding``,
    ``transition``) and writes them back in one ``UPDATE`` (``write``),
    so it needs none of the ORM's identity map, attribute history or
    flush.

    Binding on Core rows costs clearly less CPU than on the
    ``models.ARQ`` objects and ORM-loaded attach handles this replaced,
    little more than the statements alone (the contributor guide's
    "Design measurements").

    :ivar <column>: every column of ``accelerator_requests``, as read.
    :ivar attach_handle: the claimed attach handle (a Core row of
        ``attach_handles``: ``id``, ``uuid``, ``attach_type``,
        ``attach_info``...) or None; not read (the ARQs bound here hold
        none, see ``start_binding``).
    """

    __slots__ = tuple(c.key for c in _ARQS.c) + ('attach_handle',)

    def __init__(self, row):
        for key, value in row.items():
            setattr(self, key, value)
        self.attach_handle = None


def lock(session, arq_uuids):
    """Lock and read the ARQs ``arq_uuids`` (those that exist) for a
    binding, in id order, as ``BindRow``: SQLite's write lock
    (``db.api.write_lock``, no statement inside ``Database.write``) and
    one ``SELECT ... FOR UPDATE`` (the lock on PostgreSQL and MySQL, in
    the order every multi-ARQ writer uses).

    :param arq_uuids: iterable of ARQ UUIDs (str).
    :returns: list of ``BindRow``; write what changes with
        ``write``.
    """
    uuids = sorted(set(arq_uuids))
    if not uuids:
        return []
    db_api.write_lock(session)
    return [BindRow(r) for r in session.execute(
        _LOCK_FOR_BIND, {'uuids': uuids}).mappings()]


def write(session, rows):
    """Write what a binding changed on ``BindRow`` ARQs (locked by
    ``lock``) with one prebuilt Core ``UPDATE``, one row per
    ARQ: the columns of ``_BINDING`` (the attach handle's id from
    ``attach_handle`` when one was claimed) and ``updated_at``; no other.

    :param session: the transaction that locked ``rows``.
    :param rows: list of ``BindRow``.
    """
    params = []
    for row in rows:
        values = {'new_' + c: getattr(row, c) for c in _BINDING}
        if row.attach_handle is not None:
            values['new_attach_handle_id'] = row.attach_handle.id
        values['row_id'] = row.id
        params.append(values)
    if params:
        session.execute(_WRITE_BINDING, params)
