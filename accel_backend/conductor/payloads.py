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

"""Versioned payloads of the conductor RPC API.

What an agent sends the conductor and gets back is plain data with a name
and a version, never a pickled object or a database row::

    {"accel.name": "DiscoveredDeployable", "accel.version": "1.0",
     "accel.data": {...}}

A minor version only adds optional fields: a receiver ignores fields it
does not know (a newer sender) and uses the defaults of fields it does
not get (an older one).  A different major version, an unknown name or a
missing required field is refused with ``PayloadError`` (the RPC call
fails; nothing is stored).

Versions: ``DiscoveredDeployable`` 1.1 (the fields of
``accel_backend.common.discovered.DiscoveredDeployable``; 1.1 added
``taints``, which a 1.0 conductor ignores),
``ProviderRecord`` 1.0 (``accel_backend.common.provider_records
.ProviderRecord``), ``PoolMove`` 1.0 (``accel_backend.objects
.pool_migration.Move``; conductor API 1.1).
"""

import dataclasses

from accel_backend.common import discovered
from accel_backend.common import provider_records
from accel_backend.conductor import pool_migration

NAME, VERSION, DATA = 'accel.name', 'accel.version', 'accel.data'

#: ``{name: (version, required fields, optional fields)}``.
SCHEMAS = {
    'DiscoveredDeployable': (
        '1.1',
        ('address', 'device_type', 'vendor_id', 'product_id', 'model',
         'driver_name', 'resource_class', 'traits', 'attach_handles'),
        ('numa_node', 'std_board_info', 'subname', 'deployable_name',
         'cleaning', 'health', 'health_reason', 'pool', 'members',
         'taints')),
    'ProviderRecord': (
        '1.0',
        ('rp_uuid', 'address', 'resource_class', 'total', 'traits',
         'reserved'),
        ('subname',)),
    'PoolMove': (
        '1.0',
        ('pool_rp_uuid', 'subname', 'resource_class', 'traits', 'total',
         'old'),
        ()),
}


class PayloadError(ValueError):
    """A payload this release cannot read (see the module)."""


def _wrap(name, data):
    return {NAME: name, VERSION: SCHEMAS[name][0], DATA: data}


def _unwrap(name, primitive):
    try:
        got, version, data = (primitive[NAME], primitive[VERSION],
                              primitive[DATA])
    except (KeyError, TypeError):
        raise PayloadError('not a %s payload: %r' % (name, primitive))
    mine, required, optional = SCHEMAS[name]
    if got != name or str(version).split('.')[0] != mine.split('.')[0]:
        raise PayloadError('expected %s %s, got %s %s' % (
            name, mine, got, version))
    missing = [f for f in required if f not in data]
    if missing:
        raise PayloadError('%s %s lacks %s' % (name, version,
                                               ', '.join(missing)))
    return {k: v for k, v in data.items() if k in required + optional}


def _handle(pair):
    attach_type, info = pair
    return (attach_type, dict(info))


def deployable(dep):
    """``DiscoveredDeployable`` -> payload (dict)."""
    data = dataclasses.asdict(dep)
    data['traits'] = sorted(dep.traits)
    data['attach_handles'] = [list(h) for h in dep.attach_handles]
    if dep.members is not None:
        data['members'] = [dict(m, handle=list(m['handle']))
                           if 'handle' in m else dict(m)
                           for m in dep.members]
    return _wrap('DiscoveredDeployable', data)


def to_deployable(primitive):
    """Payload -> ``DiscoveredDeployable``.

    :raises PayloadError: see the module.
    """
    data = _unwrap('DiscoveredDeployable', primitive)
    data['traits'] = set(data['traits'])
    data['attach_handles'] = [_handle(h) for h in data['attach_handles']]
    if data.get('members') is not None:
        data['members'] = [dict(m, handle=_handle(m['handle']))
                           if 'handle' in m else dict(m)
                           for m in data['members']]
    return discovered.DiscoveredDeployable(**data)


def provider_record(record):
    """``ProviderRecord`` -> payload (dict)."""
    _, required, optional = SCHEMAS['ProviderRecord']
    data = {f: getattr(record, f) for f in required + optional}
    data['traits'] = list(record.traits)
    return _wrap('ProviderRecord', data)


def to_provider_record(primitive):
    """Payload -> ``ProviderRecord``.

    :raises PayloadError: see the module.
    """
    data = _unwrap('ProviderRecord', primitive)
    data['traits'] = tuple(data['traits'])
    return provider_records.ProviderRecord(**data)


def pool_move(move):
    """``pool_migration.Move`` -> payload (dict)."""
    data = dataclasses.asdict(move)
    data['traits'] = list(move.traits)
    return _wrap('PoolMove', data)


def to_pool_move(primitive):
    """Payload -> ``pool_migration.Move``.

    :raises PayloadError: see the module.
    """
    data = _unwrap('PoolMove', primitive)
    data['traits'] = tuple(data['traits'])
    data['old'] = dict(data['old'])
    return pool_migration.Move(**data)
