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

"""Map what a Cyborg 17 database holds onto accel_backend's records.

``run(session, snapshot)`` makes, in the caller's transaction, every
change the import needs and returns a ``Report`` of them and of what it
could not map; the caller commits (``--apply``) or rolls back (the dry
run: so the dry run reports exactly what an apply would do).  A second
run finds everything in place and changes nothing.

* Device profiles keep their name, UUID, description and groups.
* Devices are matched to those discovery stored, by host and PCI address
  (``accel-backend-manage discovery sync --no-report`` on each host
  first); the matched deployable takes Cyborg's resource provider UUID,
  so the reporter adopts Cyborg's provider (and its allocations) instead
  of creating one.  A device Cyborg has ``maintaining`` stays disabled.
* An ARQ keeps its UUID, project, profile, group, binding and creation
  time; a ``Bound`` one holds the attach handle of ours at the same PCI
  address (same ``asked_type`` for ``MDEV``), which takes the UUID of
  Cyborg's handle (Nova names an mdev after it).  A new ARQ walks from
  ``Initial`` along ``accel_common.arq_states.path`` to its state; no
  ``accelerator-request-bound`` event is sent for it (Cyborg sent it,
  or Nova has stopped waiting); a ``BindStarted`` one is finished by the
  binder when the service starts.
"""

import dataclasses

import sqlalchemy as sa
from sqlalchemy import orm

from accel_backend.cyborg_import import source
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from accel_backend.objects import device_profile as dp_obj
from accel_common import arq_states
from accel_common import device_profile
from accel_common import handle_states


@dataclasses.dataclass
class Report:
    """What an import did (or would do).

    :ivar actions: one line per change (list of str).
    :ivar unmapped: one line per Cyborg record left out, with the reason.
    :ivar holding: the subset of ``unmapped`` that holds a device for a
        server (bound or binding ARQs): an apply refuses while any is
        left, unless told to leave them out.
    """
    actions: list = dataclasses.field(default_factory=list)
    unmapped: list = dataclasses.field(default_factory=list)
    holding: list = dataclasses.field(default_factory=list)

    def skip(self, what, reason, holds=False):
        """Record a Cyborg record the import leaves out.

        :param what: the record (str, e.g. ``'ARQ <uuid>'``).
        :param reason: why it is left out (str).
        :param holds: True when the record holds a device for a server
            (a bound or binding ARQ): the line also goes to ``holding``,
            which makes an apply refuse.
        """
        line = '%s: %s' % (what, reason)
        self.unmapped.append(line)
        if holds:
            self.holding.append(line)


def run(session, snap):
    """Import ``snap`` (``source.Snapshot``) into ``session``; no commit.

    :returns: ``Report``.
    """
    report = Report()
    profiles = _profiles(session, snap, report)
    deps = _deployables(session, snap, report)
    for arq in snap.arqs:
        _arq(session, snap, arq, profiles, deps, report)
    session.flush()
    return report


def _profiles(session, snap, report):
    """:returns: ``{cyborg profile id: models.DeviceProfile or None}``."""
    out = {}
    for p in snap.profiles.values():
        what = 'device profile %s (%s)' % (p['name'], p['uuid'])
        out[p['id']] = None
        try:
            device_profile.parse_groups(p['groups'])
        except (device_profile.InvalidGroup, TypeError) as e:
            report.skip(what, 'groups not valid here: %s' % e)
            continue
        by_name = session.scalar(sa.select(models.DeviceProfile).where(
            models.DeviceProfile.name == p['name']))
        by_uuid = session.scalar(sa.select(models.DeviceProfile).where(
            models.DeviceProfile.uuid == p['uuid']))
        if by_name is None and by_uuid is None:
            dp = dp_obj.create(session, p['name'], p['groups'],
                               description=p['description'], uuid=p['uuid'])
            dp.created_at = p['created_at'] or dp.created_at
            report.actions.append('create ' + what)
            out[p['id']] = dp
        elif by_name is by_uuid and by_name.groups == p['groups']:
            out[p['id']] = by_name
        else:
            report.skip(what, 'a profile of that name or UUID with other '
                              'groups exists here')
    return out


def _our_device(session, hostname, address):
    return session.scalar(
        sa.select(models.Device)
        .where(models.Device.hostname == hostname,
               models.Device.address == address)
        .options(orm.selectinload(models.Device.deployables)
                 .selectinload(models.Deployable.attach_handles)))


def _pick(ours, cy):
    """Our deployable of a matched device for Cyborg's deployable ``cy``:
    same name, else the only one, else the only one of its resource
    class; None when ambiguous."""
    for dep in ours.deployables:
        if dep.name == cy['name']:
            return dep
    if len(ours.deployables) == 1:
        return ours.deployables[0]
    same_rc = [d for d in ours.deployables if d.resource_class == cy['rc']]
    return same_rc[0] if len(same_rc) == 1 else None


def _deployables(session, snap, report):
    """:returns: ``{cyborg deployable id: models.Deployable}`` (mapped
    ones only)."""
    out = {}
    for cy in snap.deployables.values():
        dev = snap.devices.get(cy['device_id'])
        what = 'deployable %s (%s)' % (cy['name'], cy['uuid'])
        if not cy['rp_uuid']:
            report.skip(what, 'no resource provider in Cyborg: nothing to '
                              'take over')
            continue
        if dev is None or dev['address'] is None:
            report.skip(what, 'its device has no PCI control path id')
            continue
        where = '%s on %s' % (dev['address'], dev['hostname'])
        ours = _our_device(session, dev['hostname'], dev['address'])
        ours_dep = None if ours is None else _pick(ours, cy)
        if ours_dep is None:
            report.skip(what, 'no device %s discovered here%s: run '
                        '`accel-backend-manage discovery sync --no-report` '
                        'on that host first' % (
                            where, '' if ours is None else
                            ' with one deployable to match'))
            continue
        if cy['rc'] and cy['rc'] != ours_dep.resource_class:
            report.skip(what, 'resource class %s here, %s in Cyborg: its '
                        'allocations would be stranded' % (
                            ours_dep.resource_class, cy['rc']))
            continue
        if ours_dep.rp_uuid != cy['rp_uuid']:
            holder = session.scalar(sa.select(models.Deployable).where(
                models.Deployable.rp_uuid == cy['rp_uuid']))
            if holder is not None:
                report.skip(what, 'resource provider %s belongs to our '
                            'deployable %s' % (cy['rp_uuid'], holder.name))
                continue
            if any(device_obj.handle_in_use(h)
                   for h in ours_dep.attach_handles):
                report.skip(what, 'our deployable %s is in use under '
                            'provider %s' % (ours_dep.name,
                                             ours_dep.rp_uuid))
                continue
            report.actions.append(
                'take over resource provider %s for %s (our deployable %s, '
                'was provider %s)' % (cy['rp_uuid'], where, ours_dep.name,
                                      ours_dep.rp_uuid))
            ours_dep.rp_uuid = cy['rp_uuid']
        if dev['status'] == device_obj.MAINTAINING and \
                ours.status == device_obj.ENABLED:
            report.actions.append('disable device %s (maintaining in '
                                  'Cyborg)' % where)
            ours.status = device_obj.MAINTAINING
        out[cy['id']] = ours_dep
    return out


def _handle_key(attach_type, address, info):
    return (attach_type, address,
            info.get('asked_type') if attach_type == 'MDEV' else None)


def _match_handle(session, dep, cy_handle):
    """Our free attach handle of ``dep`` for Cyborg's ``cy_handle``:
    same type and PCI address (and ``asked_type`` for ``MDEV``),
    identical info preferred.

    :returns: ``(models.AttachHandle or None, reason)``.
    """
    info = cy_handle['info'] if isinstance(cy_handle['info'], dict) else {}
    if cy_handle['address'] is None:
        return None, 'attach handle %s has no PCI address' % (
            cy_handle['uuid'])
    want = _handle_key(cy_handle['attach_type'], cy_handle['address'], info)
    found = [h for h in dep.attach_handles if _handle_key(
        h.attach_type, source.pci_address(h.attach_info),
        h.attach_info) == want]
    found.sort(key=lambda h: h.attach_info != info)
    if not found:
        return None, 'no attach handle %s %s on our deployable %s' % (
            cy_handle['attach_type'], cy_handle['address'], dep.name)
    handle = found[0]
    if handle.state not in handle_states.sources(handle_states.BOUND,
                                                 handle_states.IMPORT):
        return None, 'our attach handle %s is %s' % (
            handle.uuid, 'in use' if device_obj.handle_in_use(handle)
            else handle.state)
    if handle.uuid != cy_handle['uuid'] and session.scalar(
            sa.select(models.AttachHandle.id).where(
                models.AttachHandle.uuid == cy_handle['uuid'])):
        return None, 'another attach handle here has UUID %s' % (
            cy_handle['uuid'])
    return handle, None


def _wanted(arq, dp, group):
    """The fields an imported ARQ must have, as a dict."""
    bound = arq['state'] in arq_states.BINDING_STATES
    return dict(
        state=arq['state'], device_profile_id=dp.id,
        device_profile_name=dp.name,
        device_profile_group_id=arq['device_profile_group_id'],
        device_profile_group=group, project_id=arq['project_id'],
        hostname=arq['hostname'] if bound else None,
        device_rp_uuid=arq['device_rp_uuid'] if bound else None,
        instance_uuid=arq['instance_uuid'] if bound else None)


def _arq(session, snap, arq, profiles, deps, report):
    what = 'ARQ %s (instance %s, %s)' % (arq['uuid'], arq['instance_uuid'],
                                         arq['state'])
    holds = arq['state'] in (arq_states.BIND_STARTED, arq_states.BOUND)
    try:
        steps = arq_states.path(arq['state'])
    except arq_states.InvalidTransition:
        return report.skip(what, 'accel_backend has no state %s to import '
                           'it in' % arq['state'], holds)
    dp = profiles.get(arq['device_profile_id'])
    if dp is None:
        return report.skip(what, 'its device profile was not imported',
                           holds)
    gid = arq['device_profile_group_id']
    if not 0 <= gid < len(dp.groups):
        return report.skip(what, 'profile %s has no group %s' % (dp.name,
                                                                 gid), holds)
    want = _wanted(arq, dp, dp.groups[gid])
    ours = session.scalar(sa.select(models.ARQ).where(
        models.ARQ.uuid == arq['uuid']))
    if ours is not None:
        if any(getattr(ours, k) != v for k, v in want.items()):
            report.skip(what, 'an ARQ with that UUID and another state or '
                        'binding exists here: left as it is')
        return
    handle = None
    if holds:
        dep = deps.get(arq['deployable_id'])
        if dep is None:
            dep = next((d for d in deps.values()
                        if d.rp_uuid == arq['device_rp_uuid']), None)
        if dep is None or dep.rp_uuid != arq['device_rp_uuid']:
            return report.skip(what, 'its device (provider %s) was not '
                               'mapped' % arq['device_rp_uuid'], holds)
    if arq['state'] == arq_states.BOUND:
        cy_handle = snap.handles.get(arq['attach_handle_id'])
        if cy_handle is None:
            return report.skip(what, 'Cyborg shows no attach handle for '
                               'it', holds)
        handle, reason = _match_handle(session, dep, cy_handle)
        if handle is None:
            return report.skip(what, reason, holds)
    new = models.ARQ(uuid=arq['uuid'], state=arq_states.INITIAL,
                     created_at=arq['created_at'] or models.utcnow())
    for key in ('device_profile_id', 'device_profile_name',
                'device_profile_group_id', 'device_profile_group',
                'project_id'):
        setattr(new, key, want[key])
    session.add(new)
    for state in steps:
        if state == arq_states.BIND_STARTED:
            new.hostname = want['hostname']
            new.device_rp_uuid = want['device_rp_uuid']
            new.instance_uuid = want['instance_uuid']
        elif state == arq_states.UNBOUND:
            new.hostname = new.device_rp_uuid = new.instance_uuid = None
        elif state == arq_states.BOUND:
            if handle.uuid != arq_handle_uuid(snap, arq):
                report.actions.append('attach handle %s of %s takes '
                                      'Cyborg\'s UUID %s' % (
                                          handle.uuid, dep.name,
                                          arq_handle_uuid(snap, arq)))
                handle.uuid = arq_handle_uuid(snap, arq)
            device_obj.transition(handle, handle_states.BOUND,
                                  handle_states.IMPORT)
            new.attach_handle = handle
        arq_obj.transition(new, state)
    # The event of this state was Cyborg's to send.
    new.pending_event = None
    report.actions.append('import ' + what + (
        ' holding %s' % handle.uuid if handle is not None else ''))
    session.flush()


def arq_handle_uuid(snap, arq):
    """UUID of the attach handle Cyborg's ``arq`` holds, or None."""
    handle = snap.handles.get(arq['attach_handle_id'])
    return None if handle is None else handle['uuid']
