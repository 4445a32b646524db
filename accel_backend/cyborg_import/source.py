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

"""Read a Cyborg 17 database (MySQL/MariaDB, PostgreSQL or SQLite) with
SQLAlchemy core: only the columns the import needs, declared here from
Cyborg's models (openstack/cyborg ``cyborg/db/sqlalchemy/models.py``,
17.0.0).  Nothing is ever written to it.

MySQL URLs (``mysql+pymysql://``) need PyMySQL: ``pip install
nova-accel[cyborg-import]``.

Cyborg 17's ``extended_accelerator_requests`` has no profile name: it
refers to ``device_profiles.id``.  A PCI address is stored as JSON
(``{"domain": "0000", "bus": "0c", "device": "0", "function": "1"}``)
in ``controlpath_ids.cpid_info`` (the device) and in
``attach_handles.attach_info`` (with ``asked_type``/``vgpu_mark`` for
``MDEV`` handles).
"""

import dataclasses
import json
import socket
import time
import urllib.error
import urllib.request

from oslo_log import log as logging
import sqlalchemy as sa

from accel_backend import exception
from accel_common import pci

LOG = logging.getLogger(__name__)
#: Shortest quiet period (seconds) on a database whose timestamps keep
#: whole seconds (Cyborg's migrations make MySQL ``DATETIME`` columns):
#: two fingerprints less than a second apart can fall in the same second
#: and miss a write.  Observed: with 0.3 s, 3 of 4 runs missed a writer
#: touching ``devices`` every 50 ms on MariaDB; 2 s always spans a second
#: boundary with writes on both sides of it.
WHOLE_SECONDS_QUIET_PERIOD = 2.0

_META = sa.MetaData()
_S, _I, _T = sa.String, sa.Integer, sa.Text


def _table(name, *columns):
    return sa.Table(name, _META, sa.Column('id', _I, primary_key=True),
                    *columns, sa.Column('created_at', sa.DateTime),
                    sa.Column('updated_at', sa.DateTime))


PROFILES = _table('device_profiles', sa.Column('uuid', _S),
                  sa.Column('name', _S), sa.Column('profile_json', _T),
                  sa.Column('description', _T))
DEVICES = _table('devices', sa.Column('uuid', _S), sa.Column('type', _S),
                 sa.Column('vendor', _S), sa.Column('model', _S),
                 sa.Column('hostname', _S), sa.Column('status', _S))
CPIDS = _table('controlpath_ids', sa.Column('device_id', _I),
               sa.Column('cpid_type', _S), sa.Column('cpid_info', _S))
DEPLOYABLES = _table('deployables', sa.Column('uuid', _S),
                     sa.Column('name', _S), sa.Column('device_id', _I),
                     sa.Column('rp_uuid', _S),
                     sa.Column('num_accelerators', _I))
ATTRIBUTES = _table('attributes', sa.Column('deployable_id', _I),
                    sa.Column('key', _T), sa.Column('value', _T))
HANDLES = _table('attach_handles', sa.Column('uuid', _S),
                 sa.Column('deployable_id', _I),
                 sa.Column('in_use', sa.Boolean),
                 sa.Column('attach_type', _S),
                 sa.Column('attach_info', _S))
ARQS = _table('extended_accelerator_requests', sa.Column('uuid', _S),
              sa.Column('project_id', _S), sa.Column('state', _S),
              sa.Column('device_profile_id', _I),
              sa.Column('device_profile_group_id', _I),
              sa.Column('hostname', _S), sa.Column('device_rp_uuid', _S),
              sa.Column('instance_uuid', _S),
              sa.Column('attach_handle_id', _I),
              sa.Column('deployable_id', _I))
TABLES = (PROFILES, DEVICES, CPIDS, DEPLOYABLES, ATTRIBUTES, HANDLES, ARQS)


def pci_address(info):
    """``DDDD:BB:SS.F`` (lower-case hex) of a PCI address given as
    Cyborg's JSON text or dict (hex strings, padded or not), or our
    ``DDDD:BB:SS.F`` string; None when it is no PCI address
    (``accel_common.pci`` reads both)."""
    try:
        if isinstance(info, str) and not info.lstrip().startswith('{'):
            return str(pci.parse(info.strip().lower()))
        if isinstance(info, str):
            info = json.loads(info)
        return str(pci.from_handle_info(info))
    except (pci.InvalidAddress, ValueError):
        return None


@dataclasses.dataclass
class Snapshot:
    """What the import reads: rows as dicts, keyed by Cyborg's ``id``.

    ``devices`` gain ``address`` (from their PCI control path id, or
    None); ``deployables`` gain ``rc`` (attribute ``rc``) and
    ``handles`` (list of handle ids); ``handles`` gain ``info`` (the
    parsed ``attach_info``) and ``address``; ``profiles`` gain ``groups``.
    """
    profiles: dict
    devices: dict
    deployables: dict
    handles: dict
    arqs: list


def _rows(conn, table):
    return {r['id']: dict(r) for r in conn.execute(
        sa.select(table).order_by(table.c.id)).mappings()}


def read(engine):
    """Read every row the import needs, in one transaction.

    :param engine: SQLAlchemy engine of the Cyborg database.
    :returns: ``Snapshot``.
    :raises CyborgImportRefused: a table or column of Cyborg 17 is
        missing (not a Cyborg 17 schema).
    """
    try:
        with engine.connect() as conn:
            profiles = _rows(conn, PROFILES)
            devices = _rows(conn, DEVICES)
            cpids = _rows(conn, CPIDS)
            deps = _rows(conn, DEPLOYABLES)
            attrs = _rows(conn, ATTRIBUTES)
            handles = _rows(conn, HANDLES)
            arqs = list(_rows(conn, ARQS).values())
    except sa.exc.DBAPIError as e:
        raise exception.CyborgImportRefused(
            reason='not a Cyborg 17 database: %s' % e.orig)
    for p in profiles.values():
        try:
            p['groups'] = json.loads(p['profile_json'])['groups']
        except (ValueError, KeyError, TypeError):
            p['groups'] = None
    for d in devices.values():
        d['address'] = None
    for c in cpids.values():
        dev = devices.get(c['device_id'])
        if dev is not None and c['cpid_type'] == 'PCI':
            dev['address'] = pci_address(c['cpid_info'])
    for d in deps.values():
        d['rc'] = None
        d['handles'] = []
    for a in attrs.values():
        dep = deps.get(a['deployable_id'])
        if dep is not None and a['key'] == 'rc':
            dep['rc'] = a['value']
    for h in handles.values():
        try:
            h['info'] = json.loads(h['attach_info'])
        except ValueError:
            h['info'] = None
        h['address'] = pci_address(h['info']) if isinstance(
            h['info'], dict) else None
        if h['deployable_id'] in deps:
            deps[h['deployable_id']]['handles'].append(h['id'])
    return Snapshot(profiles, devices, deps, handles, arqs)


def fingerprint(engine):
    """Row count and newest ``created_at``/``updated_at`` of every table
    read: any write of Cyborg's API, conductor or agent changes it.

    :returns: tuple (comparable with ``==``).
    :raises CyborgImportRefused: a table of Cyborg 17 is missing.
    """
    try:
        with engine.connect() as conn:
            return tuple(tuple(conn.execute(sa.select(
                sa.func.count(), sa.func.max(t.c.created_at),
                sa.func.max(t.c.updated_at))).one()) for t in TABLES)
    except sa.exc.DBAPIError as e:
        raise exception.CyborgImportRefused(
            reason='not a Cyborg 17 database: %s' % e.orig)


def api_answers(url, timeout=3.0):
    """True when something answers HTTP at ``url`` (any status).

    :param url: Cyborg's API endpoint, e.g. ``http://ctl:6666/``.
    :param timeout: seconds to wait for an answer.
    """
    try:
        # url is the operator's own --cyborg-api argument, not input from
        # elsewhere: any scheme urlopen takes is theirs to give.
        urllib.request.urlopen(url, timeout=timeout).close()  # nosec B310
        return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, socket.timeout, ConnectionError,
            OSError):
        return False


def check_quiet(engine, quiet_period, api_url=None, sleep=time.sleep):
    """Refuse unless Cyborg has stopped writing.

    Cyborg's API is probed first when ``api_url`` is given (an answer
    means it is still running); then the database is fingerprinted twice,
    ``quiet_period`` seconds apart: any write between the two (an ARQ
    bound, an agent's report) means a Cyborg service is still running.

    :param quiet_period: seconds (float) without a write; 0: none (the
        caller knows Cyborg is stopped).  On MySQL/MariaDB at least
        ``WHOLE_SECONDS_QUIET_PERIOD``.
    :raises CyborgImportRefused: the API answers or the database changed.
    """
    if 0 < quiet_period < WHOLE_SECONDS_QUIET_PERIOD and \
            engine.dialect.name == 'mysql':
        LOG.info('Quiet period raised from %s to %s s: MySQL timestamps '
                 'keep whole seconds', quiet_period,
                 WHOLE_SECONDS_QUIET_PERIOD)
        quiet_period = WHOLE_SECONDS_QUIET_PERIOD
    if api_url and api_answers(api_url):
        raise exception.CyborgImportRefused(
            reason='the Cyborg API at %s still answers: stop cyborg-api, '
                   'cyborg-conductor and every cyborg-agent first'
                   % api_url)
    before = fingerprint(engine)
    sleep(quiet_period)
    if fingerprint(engine) != before:
        raise exception.CyborgImportRefused(
            reason='the Cyborg database changed in the last %s s: a '
                   'Cyborg service is still writing; stop cyborg-api, '
                   'cyborg-conductor and every cyborg-agent first'
                   % quiet_period)
