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

"""Marker/limit pagination done in the database.

Every paginated collection is ordered by its primary key ``id``; a page
after ``marker`` (the UUID of the last item of the previous page) holds
the rows whose ``id`` is greater than the marker's, so a page is one
indexed range scan whatever the filters are.
"""

import sqlalchemy as sa

from accel_backend import exception

#: Largest page a client may ask for.
MAX_LIMIT = 1000


def paginate(session, query, model, limit=None, marker=None,
             marker_filters=()):
    """Restrict ``query`` to one page.

    :param query: ``select(model)`` with its filters, not yet ordered.
    :param model: mapped class with ``id`` and ``uuid`` columns.
    :param limit: page size (int) or None for every row.
    :param marker: UUID (str) of the last row of the previous page, or
        None for the first page.
    :param marker_filters: extra SQL conditions the marker row must meet
        (e.g. the caller's project): a marker the caller may not see is
        unknown, so its existence does not leak.
    :raises InvalidMarker: no row (visible to the caller) has that UUID.
    :returns: the query, ordered by ``id``.
    """
    if marker is not None:
        marker_id = session.scalar(
            sa.select(model.id).where(model.uuid == marker,
                                      *marker_filters))
        if marker_id is None:
            raise exception.InvalidMarker(marker=marker)
        query = query.where(model.id > marker_id)
    query = query.order_by(model.id)
    if limit is not None:
        query = query.limit(limit)
    return query
