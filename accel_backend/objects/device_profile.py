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

"""Device profiles: named request-group lists (Cyborg ``device_profiles``).

Wire view (Cyborg v2): ``{"uuid", "name", "description", "groups",
"created_at", "updated_at", "links"}``.
"""

from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.db import lookup
from accel_backend.db import models
from accel_backend import exception
from accel_backend import utils
from accel_common import tolerations


def create(session, name, groups, description=None, uuid=None):
    """Insert a device profile.

    :param name: profile name, already validated (``^[a-zA-Z0-9-_]+$``).
    :param groups: list of group dicts, already validated.
    :param uuid: the profile's UUID (str, already validated), as Cyborg
        takes it from the request body; None: a new one.
    :raises DeviceProfileExists: the name is taken.
    :raises DeviceProfileUUIDExists: the UUID is taken (Cyborg 17 answers
        500 there, from the database's unique constraint).
    :returns: ``models.DeviceProfile``.
    """
    if session.scalar(sa.select(models.DeviceProfile.id).where(
            models.DeviceProfile.name == name)) is not None:
        raise exception.DeviceProfileExists(name=name)
    if uuid is not None and session.scalar(
            sa.select(models.DeviceProfile.id).where(
                models.DeviceProfile.uuid == uuid)) is not None:
        raise exception.DeviceProfileUUIDExists(uuid=uuid)
    dp = models.DeviceProfile(uuid=uuid or uuidutils.generate_uuid(),
                              name=name, groups=groups,
                              description=description)
    session.add(dp)
    session.flush()
    return dp


def get_by_name(session, name):
    """:raises DeviceProfileNotFound: no profile has that name."""
    return lookup.by_column(session, models.DeviceProfile.name, name,
                            exception.DeviceProfileNotFound)


def get(session, ident):
    """Look a profile up by UUID, or by name when ``ident`` is no UUID.

    :raises DeviceProfileNotFound: nothing matches.
    """
    if not uuidutils.is_uuid_like(ident):
        return get_by_name(session, ident)
    return lookup.by_column(session, models.DeviceProfile.uuid, ident,
                            exception.DeviceProfileNotFound)


def list_(session, name=None, limit=None, marker=None):
    """Profiles ordered by creation, filtered by exact ``name`` in SQL.

    :param limit: page size, ``marker``: UUID of the previous page's last
        profile (``db.paging``).
    :raises InvalidMarker: no profile has the marker's UUID.
    """
    return lookup.page(session, models.DeviceProfile,
                       equal=((models.DeviceProfile.name, name),),
                       limit=limit, marker=marker)


def delete(session, dp):
    """Delete ``dp``.

    :raises DeviceProfileInUse: ARQs still refer to it (Cyborg would
        orphan them).
    """
    count = session.scalar(sa.select(sa.func.count(models.ARQ.id)).where(
        models.ARQ.device_profile_id == dp.id))
    if count:
        raise exception.DeviceProfileInUse(name=dp.name, count=count)
    session.delete(dp)


def to_dict(dp, base_url, tolerable=()):
    """Cyborg v2 view of a profile; ``base_url`` is the ``/v2`` URL.

    :param tolerable: ``[taints] tolerable_keys``: each group gets a
        forbidden trait per key it does not tolerate
        (``accel_common.tolerations.forbidden_traits``).
    """
    groups = dp.groups
    if tolerable:
        groups = [dict(g, **tolerations.forbidden_traits(g, tolerable))
                  for g in groups]
    return {
        'uuid': dp.uuid,
        'name': dp.name,
        'description': dp.description,
        'groups': groups,
        'created_at': utils.isotime(dp.created_at),
        'updated_at': utils.isotime(dp.updated_at),
        'links': [{'href': '%s/device_profiles/%s' % (base_url, dp.uuid),
                   'rel': 'self'}],
    }
