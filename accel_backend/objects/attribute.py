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

"""Attributes: operator-defined key/value pairs of a deployable (Cyborg
``/v2/attributes``).

Wire view (Cyborg 17): ``{"uuid", "deployable_id", "key", "value",
"created_at", "updated_at", "links"}`` where ``deployable_id`` is the
deployable's integer id, plus ``deployable_uuid`` (ours: Cyborg's API
shows deployables without their integer id, so a client could not tell
which deployable an id names).
"""

import os_traits
from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.db import lookup
from accel_backend.db import models
from accel_backend import exception
from accel_backend import utils


def find_deployable(session, ident):
    """The deployable named by its integer id (Cyborg) or its UUID.

    :param ident: int or UUID str.
    :raises DeployableNotFound: nothing matches.
    """
    column = (models.Deployable.id if isinstance(ident, int)
              else models.Deployable.uuid)
    return lookup.by_column(session, column, ident,
                            exception.DeployableNotFound)


def create(session, dep, key, value):
    """Add ``key`` = ``value`` to deployable ``dep``.

    :raises AttributeExists: ``dep`` already has ``key``.
    :returns: ``models.Attribute``.
    """
    if session.scalar(sa.select(models.Attribute.id).where(
            models.Attribute.deployable_id == dep.id,
            models.Attribute.key == key)) is not None:
        raise exception.AttributeExists(deployable=dep.uuid, key=key)
    attr = models.Attribute(uuid=uuidutils.generate_uuid(),
                            deployable=dep, key=key, value=value)
    session.add(attr)
    try:
        # A concurrent create of the same key loses on the unique
        # constraint instead.
        with session.begin_nested():
            session.flush()
    except db_exc.DBDuplicateEntry:
        raise exception.AttributeExists(deployable=dep.uuid, key=key)
    return attr


#: Keys discovery owns on every deployable, as Cyborg 17's drivers publish
#: them (openstack-cyborg 17.0.0, ``cyborg/accelerator/drivers/fake.py``:
#: ``rc`` and ``traits1``...): the resource class and each trait.
DISCOVERED_RC = 'rc'
DISCOVERED_TRAIT_PREFIX = 'traits'
#: The physical slot of the device (``/sys/bus/pci/slots``), when known.
DISCOVERED_SLOT = 'slot'
#: The IOMMU group of the device: devices of one group go to one guest.
DISCOVERED_IOMMU_GROUP = 'iommu_group'
#: The functions of the device's slot that go to a guest with it
#: (``common.discovered.FUNCTIONS_KEY``: ``"0,1"``), when several do.
DISCOVERED_FUNCTIONS = 'functions'


def discovered(resource_class, traits, slot=None, iommu_group=None,
               functions=None):
    """The attributes discovery publishes for a deployable.

    :param resource_class: str, the deployable's resource class.
    :param traits: iterable of trait names; ``OWNER_CYBORG`` (on every
        provider of ours) is left out.
    :param slot: the device's physical slot name (str) or None.
    :param iommu_group: the device's IOMMU group number (str) or None.
    :param functions: the functions of its unit (``"0,1"``) or None.
    :returns: dict key -> value (str).
    """
    published = {DISCOVERED_RC: resource_class}
    if slot:
        published[DISCOVERED_SLOT] = slot
    if iommu_group is not None:
        published[DISCOVERED_IOMMU_GROUP] = str(iommu_group)
    if functions:
        published[DISCOVERED_FUNCTIONS] = functions
    for index, trait in enumerate(
            sorted(t for t in traits if t != os_traits.OWNER_CYBORG), start=1):
        published['%s%d' % (DISCOVERED_TRAIT_PREFIX, index)] = trait
    return published


def sync_discovered(dep, published, make_uuid):
    """Make the discovery-owned attributes of ``dep`` equal ``published``.

    Keys an operator added (any other key) are left alone; a ``traitsN``
    key no longer published is removed.

    :param dep: ``models.Deployable`` (new or loaded; its ``attributes``
        are loaded on access).
    :param published: dict from ``discovered()``.
    :param make_uuid: callable(key) -> a stable UUID str for a new row.
    """
    owned = {a.key: a for a in dep.attributes
             if a.key in (DISCOVERED_RC, DISCOVERED_SLOT,
                          DISCOVERED_IOMMU_GROUP, DISCOVERED_FUNCTIONS) or
             a.key.startswith(DISCOVERED_TRAIT_PREFIX)}
    for key, value in published.items():
        attr = owned.pop(key, None)
        if attr is None:
            dep.attributes.append(models.Attribute(
                uuid=make_uuid(key), key=key, value=value))
        elif attr.value != value:
            attr.value = value
    for stale in owned.values():
        dep.attributes.remove(stale)


def get(session, attr_uuid):
    """:raises AttributeNotFound: no attribute has that UUID."""
    return lookup.by_column(session, models.Attribute.uuid, attr_uuid,
                            exception.AttributeNotFound)


def list_(session, deployable_id=None, key=None, limit=None, marker=None):
    """Attributes filtered in SQL, ordered by ``id``.

    :param deployable_id: the deployable's integer id or None.
    :param key: exact key or None.
    :raises InvalidMarker: no attribute has the marker's UUID.
    """
    return lookup.page(session, models.Attribute,
                       equal=((models.Attribute.deployable_id, deployable_id),
                              (models.Attribute.key, key)),
                       limit=limit, marker=marker)


def delete(session, attr):
    """Delete ``attr`` (a ``models.Attribute``) in ``session``; nothing
    refers to an attribute, so it never refuses."""
    session.delete(attr)


def to_dict(attr, base_url):
    """Cyborg v2 view of an attribute (plus ``deployable_uuid``)."""
    return {
        'uuid': attr.uuid,
        'deployable_id': attr.deployable_id,
        'deployable_uuid': attr.deployable.uuid,
        'key': attr.key,
        'value': attr.value,
        'created_at': utils.isotime(attr.created_at),
        'updated_at': utils.isotime(attr.updated_at),
        'links': [{'href': '%s/attributes/%s' % (base_url, attr.uuid),
                   'rel': 'self'}],
    }
