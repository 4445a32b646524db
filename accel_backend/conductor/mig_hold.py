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

"""A GPU held for a MIG repartition (issue 54 item 3;
``agent.mig.repartition``), the database side.

``hold`` checks in one transaction that none of the GPU's attach handles
is anything but ``available`` (nothing bound, claimed, being cleaned or
quarantined) and, in the same transaction, taints each of its
deployables ``NoSchedule`` with ``accel_common.taints.REPARTITION_KEY``
(set_by ``SET_BY``): committed before the GPU is touched, and from then
on the claim gives none of its handles away (``objects.taint``).  A bind
already under way when the hold commits comes from an allocation Nova
made first, which the agent's check of the providers' usages in
Placement, after the hold, finds.  ``release`` removes the taints.
"""

import sqlalchemy as sa

from accel_backend.db import models
from accel_backend.objects import taint as taint_obj
from accel_common import handle_states
from accel_common import taints

SET_BY = 'accel_backend.mig'


def _device(session, hostname, address):
    return session.scalar(sa.select(models.Device).where(
        models.Device.hostname == hostname,
        models.Device.address == address))


def hold(session, hostname, address):
    """Hold the GPU at ``address`` of ``hostname`` if it is idle.

    :param session: a write transaction.
    :param address: the GPU's PF address (str).
    :returns: the resource provider UUIDs of its deployables (sorted
        list; empty when the database has none), or None when one of
        its attach handles is not ``available`` (nothing is changed).
    """
    dev = _device(session, hostname, address)
    if dev is None:
        return []
    deps = list(dev.deployables)
    if any(h.state != handle_states.AVAILABLE
           for dep in deps for h in dep.attach_handles):
        return None
    for dep in deps:
        taint_obj.set_(session, dep, taints.REPARTITION_KEY,
                       taints.NO_SCHEDULE, set_by=SET_BY,
                       reason='MIG repartition of GPU %s' % address)
    return sorted(dep.rp_uuid for dep in deps)


def release(session, hostname, address):
    """Remove the hold of the GPU at ``address`` (idempotent).

    :returns: the resource provider UUIDs of its deployables (sorted
        list), whose reserved units are to be written again.
    """
    dev = _device(session, hostname, address)
    if dev is None:
        return []
    for dep in dev.deployables:
        taint_obj.remove_key(session, dep, taints.REPARTITION_KEY)
    return sorted(dep.rp_uuid for dep in dev.deployables)
