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

"""Scheduler filters of nova_accel: deliberately none (yet).

An ``AcceleratorHealthFilter`` (drop hosts whose accelerators are
disabled, unhealthy or being cleaned) was considered and left out, because
Placement already expresses it and a host filter cannot do better:

- accel_backend reports every device it holds back (operator-disabled,
  unhealthy by its discovery driver, handle being cleaned, gone from the
  host) with ``reserved = total`` on the device's resource provider, and
  gives it back (``reserved = 0``) when it is usable again.  Placement's
  allocation candidates then never offer that device: its capacity
  ``(total - reserved) * allocation_ratio`` is 0.
- Nova's scheduler only considers hosts that have an allocation
  candidate, and it claims exactly the candidate's device provider.  A
  host whose every matching device is held back has no candidate and is
  never seen by a filter; a host with one healthy and one unhealthy device
  gets candidates for the healthy one only, so filtering the host out
  would wrongly lose the healthy device.
- A filter has no better data: it would read the same Placement state (or
  call the accelerator service, which Placement reporting already
  mirrors).  The only window left, a device failing between the report and
  the bind, is closed at bind time: accel_backend never binds a held-back
  device (the ARQ goes ``BindFailed``), the compute driver refuses to spawn
  without a ``Bound`` ARQ and Nova reschedules to an alternate host.

Such a filter could therefore never reject a host that Placement had
offered, so it is not written.  Request-level accelerator constraints
(traits, resource classes, counts) are device profile groups, which Nova
turns into granular Placement request groups.
"""
