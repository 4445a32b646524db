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

"""The end of a failed device's quarantine.

An attach handle released while a ``NoExecute`` taint covers it is
``quarantined`` (``objects.device.release_handle``): it is neither
cleaned nor offered.  When the taint goes (the operator's untaint, or a
health fault that cleared, ``conductor.health_taints``), ``lift`` sends
it to cleaning like any released handle; its Placement unit stays
reserved until the cleaning ends (``objects.deployable.reserved_units``
counts both states).
"""

from accel_backend.objects import device as device_obj
from accel_backend.objects import taint as taint_obj
from accel_common import handle_states


def lift(session, dep):
    """Send ``dep``'s quarantined attach handles that no ``NoExecute``
    taint covers any more to cleaning (``dirty``; the cleaner wakes up at
    the commit).

    :param dep: ``models.Deployable`` with its device, attach handles and
        taints loadable.
    :returns: how many were lifted (int).
    """
    covered = taint_obj.no_execute_handles(dep)
    lifted = [h for h in dep.attach_handles
              if h.state == handle_states.QUARANTINED and h.id not in covered]
    for handle in lifted:
        device_obj.transition(handle, handle_states.DIRTY,
                              handle_states.LIFT)
        session.info.setdefault(device_obj.RELEASED_KEY, set()).add(
            handle.id)
    if lifted:
        session.flush()
    return len(lifted)
