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

"""The two lookups every resource module makes: one row by a key (or a
"not found" error), and one page of a filtered list.

Both run in SQL in the caller's session; the resource modules
(``objects.arq``, ``objects.device``...) say which model, column and
error.
"""

import sqlalchemy as sa

from accel_backend.db import paging


def one(session, query, not_found, ident):
    """The row ``query`` selects, or ``not_found`` raised.

    :param session: an open SQLAlchemy session.
    :param query: a ``select(model)`` that matches one row at most (a
        unique column equal to ``ident``).
    :param not_found: the ``accel_backend.exception`` class to raise (a
        ``NotFound`` subclass taking ``ident``: the API answers 404).
    :param ident: what the caller looked for (UUID, name or id), quoted
        in the error.
    :returns: the model instance.
    :raises not_found: no row matches.
    """
    row = session.scalar(query)
    if row is None:
        raise not_found(ident=ident)
    return row


def by_column(session, column, value, not_found):
    """The row of ``column``'s model whose ``column`` equals ``value``.

    :param column: a unique mapped column (``models.Device.uuid``).
    :param value: the value looked for (str or int).
    :param not_found: as ``one``.
    :raises not_found: no row matches.
    """
    key = (column.class_, column.key)
    query = _BY_COLUMN.get(key)
    if query is None:
        query = _BY_COLUMN.setdefault(key, sa.select(column.class_).where(
            column == sa.bindparam('value')))
    row = session.scalar(query, {'value': value})
    if row is None:
        raise not_found(ident=value)
    return row


#: ``by_column``'s statement per column, built once: SQLAlchemy memoizes a
#: statement object's cache key, so a prebuilt statement is neither built
#: nor keyed again: building it on every call cost about as much CPU as
#: the lookup itself (the contributor guide's "Design measurements").
_BY_COLUMN = {}


def page(session, model, equal=(), where=(), limit=None, marker=None,
         marker_filters=()):
    """One page of the rows of ``model`` that a list call asks for,
    filtered in SQL and ordered by ``id``.

    :param model: mapped class with ``id`` and ``uuid`` columns.
    :param equal: ``(column, value)`` pairs keeping the rows whose column
        equals the value; a pair whose value is None (a filter the caller
        did not give) filters nothing.
    :param where: further SQL conditions, each kept (``column.in_(...)``).
    :param limit: page size (int) or None for every row.
    :param marker: UUID (str) of the previous page's last row, or None.
    :param marker_filters: conditions the marker row must meet
        (``paging.paginate``).
    :returns: list of ``model`` instances.
    :raises InvalidMarker: no (visible) row has the marker's UUID.
    """
    conditions = [column == value for column, value in equal
                  if value is not None]
    conditions.extend(where)
    query = sa.select(model)
    if conditions:
        query = query.where(*conditions)
    query = paging.paginate(session, query, model, limit, marker,
                            marker_filters)
    return list(session.scalars(query))
