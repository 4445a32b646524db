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

"""Reserved units of our resource providers, written at once: disabling
or enabling a device, a release, a cleaning (``ReservedUnits``, which
``report.Reporter`` holds and whose methods it offers; the periodic
report derives the same value from the database and repairs what these
could not write).

A write reads the database's value under the reporter's lock, right
before it: a value read earlier, by a report or another update, never
lands after a newer one, so a device released for cleaning is not
offered to the scheduler meanwhile (the nova-cyborg-interaction spec,
"Placement update", makes accel_backend the writer of these providers'
inventories).
"""

from oslo_log import log as logging

from accel_backend.common import provider_records

LOG = logging.getLogger(__name__)


class ReservedUnits:
    """The reserved units of one host's providers, written at once.

    :param lock: the reporter's lock (``threading.RLock``), held around
        each read of the database and the write that follows it.
    :param refresh: ``(rp_uuid) -> provider_records.Cached or None``, re-reads
    a
        provider from Placement
        (``provider_tree.ProviderTreeView.refresh``).
    :param put_inventories: ``(rp_uuid, make_body) -> bool``, the
        reporter's generation-safe write of a provider's inventories
        (``report.Reporter.put_inventories``): ``make_body(cached)``
        gives the body without the generation, or None when
        ``cached`` shows what is wanted; True when Placement shows it,
        False when the provider does not exist; raises
        ``PlacementError``.
    :param reserved_for: optional callable ``(rp_uuid) -> int or None``
        giving the reserved units the database wants for a provider now.
    :param reserved_for_many: optional callable ``(rp_uuids) -> {rp_uuid:
        int}``, the same for several providers in one read.
    """

    def __init__(self, lock, refresh, put_inventories, reserved_for=None,
                 reserved_for_many=None):
        self.lock = lock
        self.refresh = refresh
        self.put_inventories = put_inventories
        self.reserved_for = reserved_for
        self.reserved_for_many = reserved_for_many

    def set_reserved(self, rp_uuid, reserved):
        """Set the reserved units of one of our providers at once, as
        disabling/enabling a device, a release or a cleaning does; other
        inventory fields are kept.  Generation-safe: a 409 re-reads and
        retries.  The provider is read first (two GETs): other API
        processes and the host's agent write it too, so what this
        process last saw may be stale, and a write its view already
        showed would be skipped.

        :param rp_uuid: the deployable's resource provider UUID.
        :param reserved: True (reserved = total), False (0) or a unit
            count; for False ``reserved_for`` is asked
            first, under the reporter's lock (an enabled device with a
            handle being cleaned keeps that unit reserved).
        :returns: True when Placement shows the wanted value now, False
            when the provider does not exist (yet): the next report
            creates it with the right ``reserved``.
        :raises PlacementError: Placement failed or kept conflicting.
        """
        with self.lock:
            if self.reserved_for is not None and reserved is False:
                units = self.reserved_for(rp_uuid)
                if units is not None:
                    reserved = units
            self.refresh(rp_uuid)
            return self._absent(rp_uuid,
                                self.write(rp_uuid, reserved))

    def sync_reserved(self, rp_uuid):
        """Write the reserved units ``reserved_for`` gives for one of our
        providers now, read under the reporter's lock: no report or
        other update that read the database earlier writes after it (the
        cleaner's update after each state change it commits).

        :param rp_uuid: the deployable's resource provider UUID.
        :returns: True when Placement shows that value now, False when
            the provider does not exist (yet), is not ours
            (``reserved_for`` answered None) or there is no
            ``reserved_for``.
        :raises PlacementError: Placement failed or kept conflicting.
        """
        with self.lock:
            units = (self.reserved_for(rp_uuid)
                     if self.reserved_for is not None else None)
            if units is None:
                return False
            return self._absent(rp_uuid, self.write(rp_uuid, units))

    def reserve_released(self, rp_uuids):
        """Reserve in Placement the units a release just left ``dirty``,
        before the API answers the release: Nova deletes an instance's
        ARQs before its allocations, so the device is never free in
        Placement while it waits for its cleaning (the cleaner, woken
        after this, and the periodic report write the same value).
        Best effort: a failure is logged, the release stands.

        :param rp_uuids: resource provider UUIDs (iterable of str),
            ``objects.device.dirty_providers`` of the released handles;
            their units are read in one go (``reserved_for_many``) under
            the reporter's lock.
        """
        rp_uuids = sorted(set(rp_uuids))
        if not rp_uuids or self.reserved_for_many is None:
            return
        with self.lock:
            try:
                units = self.reserved_for_many(rp_uuids)
            except Exception as e:
                LOG.warning('Could not read the reserved units of the '
                            'released devices of resource providers %s '
                            '(their cleaner and the next report write '
                            'them): %s', ', '.join(rp_uuids), e)
                return
            for rp_uuid in rp_uuids:
                if rp_uuid not in units:
                    continue
                try:
                    # Read first: the host's agent writes these providers
                    # too, so what this process last saw may be stale.
                    self.refresh(rp_uuid)
                    self._absent(rp_uuid, self.write(
                        rp_uuid, units[rp_uuid]))
                except Exception as e:
                    LOG.warning('Could not reserve the released device '
                                'of resource provider %s in Placement '
                                '(its cleaner and the next report will): '
                                '%s', rp_uuid, e)

    def write(self, rp_uuid, reserved):
        """Write the reserved units of one provider, other inventory
        fields kept; the caller holds ``lock``.  Generation-safe
        (``put_inventories``).

        :param rp_uuid: the provider's UUID (str).
        :param reserved: True (reserved = total), False (0) or a unit
            count (``provider_records.reserved_units``).
        :returns: True when Placement shows that value now, False when
            the provider does not exist.
        :raises PlacementError: Placement failed or kept conflicting.
        """
        def body(cached):
            want = {}
            for rc, inv in cached.inventories.items():
                inv = dict(inv)
                inv['reserved'] = provider_records.reserved_units(
                    reserved, inv['total'])
                want[rc] = inv
            if want == cached.inventories:
                return None
            return {'inventories': want}
        return self.put_inventories(rp_uuid, body)

    @staticmethod
    def _absent(rp_uuid, ok):
        if not ok:
            LOG.warning('Resource provider %s is not in Placement; its '
                        'reserved value is set when it is next reported',
                        rp_uuid)
        return ok
