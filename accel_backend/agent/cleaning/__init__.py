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

"""Cleaning devices between tenants (after Triton RFD 114).

A released attach handle whose deployable has a cleaning step is
``dirty`` (``objects.device.release_handle``); it is reserved in
Placement and never claimed until ``Cleaner`` has run the step and
marked it ``available`` again.  See ``worker.Cleaner``.
"""

from accel_backend.agent.cleaning.worker import Cleaner  # noqa: F401
from accel_backend.agent.cleaning.worker import run_method  # noqa: F401
