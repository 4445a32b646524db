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

"""The fake driver: an accelerator that exists only in the database.

For tempest and development hosts without hardware, as Cyborg's fake
driver does: one device ``FakeDevice`` at ``0000:0c:00.0`` with one
deployable ``<host>_FakeDevice`` of ``[discovery] fake_total`` (16) FPGA
units, trait ``CUSTOM_FAKE_DEVICE`` and ``TEST_PCI`` attach handles,
which the virt driver ignores.  The handles are Cyborg's, field for field
(functions 1 to N of bus ``0c``, 8 per device, numbers as undecorated
strings: openstack/cyborg ``cyborg/accelerator/drivers/fake.py``,
17.0.0), so that ``accel-backend-manage import-cyborg`` finds the handles
a Cyborg fake device had bound.
"""

import os_traits

from accel_backend.common import discovered

ADDRESS = '0000:0c:00.0'


class FakeDriver:
    """:param conf: accel_backend ``ConfigOpts``."""

    name = 'fake'

    def __init__(self, conf):
        self.host = conf.host
        self.total = conf.discovery.fake_total
        self.cleaning = conf.cleaning.methods.get(self.name, 'none')

    def discover(self):
        """:returns: one ``DiscoveredDeployable``."""
        handles = [('TEST_PCI', {'domain': '0000', 'bus': '0c',
                                 'device': str(fn // 8),
                                 'function': str(fn % 8)})
                   for fn in range(1, self.total + 1)]
        return [discovered.DiscoveredDeployable(
            address=ADDRESS, device_type='FPGA', vendor_id='abcd',
            product_id='0001', model='FakeDevice', driver_name=self.name,
            resource_class='FPGA',
            traits={os_traits.OWNER_CYBORG, 'CUSTOM_FAKE_DEVICE'},
            attach_handles=handles,
            deployable_name='%s_FakeDevice' % self.host,
            std_board_info={'class': 'Fake class', 'numa_node': None},
            # Nothing to reset: flr would only fail.
            cleaning='none' if self.cleaning == 'flr' else self.cleaning)]
