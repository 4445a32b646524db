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

"""The functions (members) of a pooled deployable, per function.

A pooled deployable (``common.pooling``) belongs to a pool device of
its own; what Cyborg keeps per device is kept here per member, in the
pool device's ``std_board_info["members"]``: ``{PCI address: {"health",
"health_reason", "std_board_info", "handle"}}``.  Host sync
(``conductor.host_sync``) writes it on every pass and asks this module:

* which members' attach handles are offered (healthy ones) and which
  are withheld (unhealthy ones: an existing handle of theirs is kept
  only while a guest holds it or it waits for cleaning, so the claim,
  which takes any ``available`` handle of a provider, never takes it);
* the provider's total: every member, healthy or not, plus any handle
  of a function that vanished while in use.  The provider's reserved
  count is the total less the handles that are ``available`` or
  ``bound`` (``objects.deployable.reserved_units``), so an unhealthy
  member raises ``reserved`` by one and a removed one lowers ``total``.
"""

from oslo_log import log as logging

from accel_backend.common import aer
from accel_backend.common import discovered
from accel_backend.common import hgx
from accel_backend.common import ids
from accel_backend.common import pooling

LOG = logging.getLogger(__name__)


def handle_key(attach_type, info):
    """A hashable key of an attach handle: ``(attach_type, sorted
    attach_info items)``, without ``discovered.FUNCTIONS_KEY`` and
    ``hgx.ADDRESSES_KEY``: the functions travelling with a function
    describe it, they do not make it another handle (``host_sync``
    updates them in place)."""
    return (attach_type, tuple(sorted(
        (k, v) for k, v in info.items()
        if k not in (discovered.FUNCTIONS_KEY, hgx.ADDRESSES_KEY))))


def deployable_name(hostname, item):
    """``<host>_pool_<pool name>`` of a pooled ``DiscoveredDeployable``."""
    return '%s_%s_%s' % (hostname, pooling.PREFIX, item.subname)


def judge(dev, hostname, members, aer_recovery_passes, health_changes):
    """The per-member record of pool device ``dev`` for this pass.

    Each member's health is the driver's verdict and its AER verdict
    (``common.aer``, judged against the member's previous board
    information).  A change of a member's health is logged and, with
    ``health_changes`` (list), collected as a ``DevicePayload`` dict
    (``accel_backend.notifications``) naming the member's address and
    the UUID it has as a device of its own when not pooled.

    :param dev: the pool's ``models.Device`` (its previous
        ``std_board_info`` is read).
    :param members: ``DiscoveredDeployable.members`` (list of dict).
    :returns: dict, the new ``std_board_info["members"]``.
    """
    before = (dev.std_board_info or {}).get('members') or {}
    record = {}
    for m in members:
        old = before.get(m['address'])
        board = dict(m['std_board_info'])
        reasons = [r for r in (
            m['health_reason'] if m['health'] != discovered.HEALTHY
            else None,
            aer.verdict(old and old['std_board_info'], board,
                        aer_recovery_passes)) if r]
        health = discovered.UNHEALTHY if reasons else discovered.HEALTHY
        reason = reasons[0] if reasons else None
        record[m['address']] = {'health': health, 'health_reason': reason,
                                'std_board_info': board,
                                'handle': list(m['handle'])}
        previous = old and old['health']
        if previous == health and old['health_reason'] == reason:
            continue
        if health == discovered.UNHEALTHY:
            LOG.warning('Device %s of pool %s on %s is unhealthy: %s',
                        m['address'], dev.address, hostname, reason)
        elif previous:
            LOG.info('Device %s of pool %s on %s is healthy again',
                     m['address'], dev.address, hostname)
        if health_changes is not None and previous:
            health_changes.append(dict(
                uuid=ids.stable_uuid('device', hostname, m['address']),
                hostname=hostname, address=m['address'], type=dev.type,
                vendor=dev.vendor, model=dev.model, status=dev.status,
                health=health, health_reason=reason,
                previous_health=previous))
    return record


def split(dev):
    """``(offered, withheld)`` of pool device ``dev`` (after ``judge``):
    the ``(attach_type, attach_info)`` of its healthy members, by
    address, and the ``handle_key`` set of its unhealthy ones."""
    members = dev.std_board_info['members']
    offered, withheld = [], set()
    for address in sorted(members):
        m = members[address]
        attach_type, info = m['handle']
        if m['health'] == discovered.HEALTHY:
            offered.append((attach_type, info))
        else:
            withheld.add(handle_key(attach_type, info))
    return offered, withheld


def total(members, handles):
    """The provider total of a pool: its members (list of dict) and the
    handles (``models.AttachHandle``) of no member (a function that
    vanished while in use)."""
    keys = {handle_key(*m['handle']) for m in members}
    return len(members) + sum(
        1 for h in handles
        if handle_key(h.attach_type, h.attach_info) not in keys)
