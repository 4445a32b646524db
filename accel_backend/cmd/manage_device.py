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

"""``accel-backend-manage device drain|undrain <host|deployable UUID>``:
maintenance of a host or one device (issue 53 item 3); ``device forget
<device UUID>``: the records of a failed device that is gone for good.

``drain`` taints every deployable of the host (or the one named)
``NoSchedule`` with the key ``accel.openstack.org/drain``
(``accel_common.taints.DRAIN_KEY``): no new ARQ is bound there and Placement
reserves them; the guests already there keep their devices.  It then
prints what is still in use, one line per bound attach handle (the
deployable, the handle, the instance and the ARQ), so the operator knows
which guests to move before the maintenance.  ``undrain`` removes that
taint (and no other).

As the API does, the taints are committed first; the reserved units are
then written to Placement through the reporter's writer
(``agent.placement.reserved.ReservedUnits.sync_reserved``, reading
``objects.deployable.reserved_units``).  When Placement cannot be
written the command says so and still succeeds: the taint holds for the
binder, and the periodic report of the host writes Placement from the
database.

A device that vanished while in use, and whose handle was then
quarantined (its guest got another device, or was deleted), is kept as
``missing`` so that, should it come back, it is cleaned before it is
offered again (``conductor.host_sync``).  ``forget`` deletes such a
device's records when it will not come back (returned to its vendor):
it refuses any device that is not ``missing`` or that an ARQ still
holds.  The host's next discovery pass deletes its resource provider.
"""

import sys

from oslo_utils import uuidutils
import sqlalchemy as sa

from accel_backend.agent.placement import client as pclient
from accel_backend.agent.placement import report
from accel_backend.db import api as db_api
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import deployable as deployable_obj
from accel_backend.objects import device as device_obj
from accel_backend.objects import taint as taint_obj
from accel_common import handle_states
from accel_common import taints

#: ``set_by`` of the taints this command sets.
SET_BY = 'accel-backend-manage'
DEFAULT_REASON = 'drained with accel-backend-manage device drain'


def _deployables(session, target):
    """The deployables ``target`` names: one by UUID, or a host's.

    :raises DeployableNotFound: a UUID no deployable has.
    :raises NotFound: a host without deployables.
    """
    if uuidutils.is_uuid_like(target):
        return [deployable_obj.get(session, target)]
    deps = session.scalars(
        sa.select(models.Deployable).join(models.Device)
        .where(models.Device.hostname == target)
        .order_by(models.Deployable.id)).all()
    if not deps:
        raise exception.NotFound(kind='Host with deployables', ident=target)
    return deps


def _in_use(session, deps):
    """``[(deployable name, attach info, instance UUID, ARQ UUID)]`` of
    the bound handles of ``deps``."""
    rows = session.execute(
        sa.select(models.Deployable.name, models.AttachHandle.attach_info,
                  models.ARQ.instance_uuid, models.ARQ.uuid)
        .join(models.AttachHandle,
              models.AttachHandle.deployable_id == models.Deployable.id)
        .outerjoin(models.ARQ,
                   models.ARQ.attach_handle_id == models.AttachHandle.id)
        .where(models.Deployable.id.in_([d.id for d in deps]),
               models.AttachHandle.state == handle_states.BOUND)
        .order_by(models.AttachHandle.id)).all()
    return [tuple(r) for r in rows]


def _write_placement(conf, db, rp_uuids):
    """Write the traits and reserved units of ``rp_uuids`` now (a drain
    of a tolerable key is a trait, ``accel_common.tolerations``); False
    (and a line on stderr) when Placement could not be written."""
    tolerable = conf.taints.tolerable_keys

    def reserved_for(rp_uuid):
        with db.transaction() as session:
            return deployable_obj.reserved_units_of_rp(session, rp_uuid,
                                                       tolerable)

    def traits_for(rp_uuid):
        with db.transaction() as session:
            return deployable_obj.provider_traits_of_rp(session, rp_uuid,
                                                        tolerable)
    try:
        client = pclient.PlacementClient(pclient.adapter_from_conf(conf),
                                         host=conf.host)
        reporter = report.Reporter(client, [conf.host],
                                   reserved_for=reserved_for,
                                   traits_for=traits_for)
        for rp_uuid in rp_uuids:
            reporter.traits.sync(rp_uuid)
            reporter.reserved.sync_reserved(rp_uuid)
    except Exception as e:
        print('Placement not updated (%s); the periodic report of the host '
              'writes it from the database' % e, file=sys.stderr)
        return False
    return True


def _change(conf, drain):
    target = conf.category.target
    db = db_api.Database.from_conf(conf)
    try:
        def store(session):
            deps = _deployables(session, target)
            for dep in deps:
                if drain:
                    taint_obj.set_(session, dep, taints.DRAIN_KEY,
                                   taints.NO_SCHEDULE,
                                   reason=conf.category.reason or
                                   DEFAULT_REASON, set_by=SET_BY)
                else:
                    taint_obj.remove_key(session, dep, taints.DRAIN_KEY)
            return ([d.rp_uuid for d in deps if d.rp_uuid], len(deps),
                    _in_use(session, deps))
        try:
            rp_uuids, count, in_use = db.write(store)
        except exception.NotFound as e:
            print(str(e), file=sys.stderr)
            return 1
        _write_placement(conf, db, rp_uuids)
    finally:
        db.dispose()
    print('%s %d deployables of %s' % (
        'Drained' if drain else 'Undrained', count, target))
    if drain:
        for name, info, instance, arq in in_use:
            print('in use\t%s\t%s\tinstance %s\tARQ %s' % (
                name, _handle_text(info), instance or '-', arq or '-'))
        print('%d still in use' % len(in_use))
    return 0


def _handle_text(info):
    if {'domain', 'bus', 'device', 'function'} <= set(info):
        return '%s:%s:%s.%s' % (info['domain'], info['bus'], info['device'],
                                info['function'])
    return ','.join('%s=%s' % kv for kv in sorted(info.items())
                    if not isinstance(kv[1], (list, dict)))


def _forget(conf):
    db = db_api.Database.from_conf(conf)
    try:
        def forget(session):
            dev = device_obj.get(session, conf.category.device)
            held = [h.uuid for dep in dev.deployables
                    for h in dep.attach_handles
                    if device_obj.handle_in_use(h)]
            if dev.status != device_obj.MISSING or held:
                raise exception.Conflict(
                    detail='device %s on %s is %s%s; only a missing '
                           'device that no ARQ holds is forgotten' % (
                               dev.uuid, dev.hostname, dev.status,
                               ', held by an ARQ' if held else ''))
            session.delete(dev)
            return dev.hostname, dev.address
        try:
            host, address = db.write(forget)
        except (exception.NotFound, exception.Conflict) as e:
            print(str(e), file=sys.stderr)
            return 1
    finally:
        db.dispose()
    print('Forgot device %s of %s; its resource provider goes at the '
          "host's next discovery pass" % (address, host))
    return 0


def _drain(conf):
    return _change(conf, drain=True)


def _undrain(conf):
    return _change(conf, drain=False)


def add_parser(subparsers):
    """Add ``device drain``, ``undrain`` and ``forget`` to
    ``accel-backend-manage`` (``cmd.manage.add_commands``)."""
    device = subparsers.add_parser('device', help='device maintenance')
    sub = device.add_subparsers(dest='action', required=True)
    drain = sub.add_parser(
        'drain', help='taint NoSchedule every deployable of a host (or '
        'one deployable) and print what is still in use')
    drain.add_argument('target', help='host name or deployable UUID')
    drain.add_argument('--reason', default=None,
                       help='why (shown with the taint)')
    drain.set_defaults(func=_drain)
    undrain = sub.add_parser(
        'undrain', help='remove the drain taint of a host (or one '
        'deployable)')
    undrain.add_argument('target', help='host name or deployable UUID')
    undrain.set_defaults(func=_undrain)
    forget = sub.add_parser(
        'forget', help='delete the records of a missing device that no '
        'ARQ holds (a failed device gone for good)')
    forget.add_argument('device', help='device UUID')
    forget.set_defaults(func=_forget)
