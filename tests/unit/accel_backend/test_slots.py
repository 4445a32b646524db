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

"""A device's physical slot (``/sys/bus/pci/slots``): operators place and
replace cards by slot (Triton RFD 114, "CPU2 SLOT2"). Discovery reads it,
the device shows it in ``std_board_info`` (``GET /v2/devices/{uuid}``,
``openstack accelerator device show``) and the deployable publishes it as
the attribute ``slot``."""

import json
import os

import testtools
import webob

from accel_backend.agent.discovery import drivers
from accel_backend.common import ids
from accel_backend.conductor import host_sync
from accel_backend import service as service_mod
from tests.unit.accel_backend import base

SLOTS = os.path.join(os.path.dirname(base.FIXTURES), 'sysfs-slots',
                     'gpu-server')
HOST = 'compute1'


class SlotTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        conf = base.make_conf(
            self, base.GPU_SERVER, (), DEFAULT={'host': HOST},
            api={'auth_strategy': 'noauth'}, binding={'workers': '1'},
            discovery={'pci_slots_path': SLOTS,
                       'enabled_drivers': 'nvidia_gpu',
                       'nvidia_gpu_pool': 'false'})
        self.svc = service_mod.Service(conf)
        self.addCleanup(self.svc.stop)
        found = drivers.discover_all(self.svc.drivers)
        with self.svc.db.transaction() as session:
            host_sync.sync(session, HOST, found)

    def get(self, path):
        req = webob.Request.blank(path, headers={'X-Auth-Token': 'admin'})
        resp = req.get_response(self.svc.app)
        self.assertEqual(200, resp.status_code, resp.text)
        return json.loads(resp.text)

    def test_device_show_and_attribute(self):
        uuid = ids.stable_uuid('device', HOST, '0000:ca:00.0')
        dev = self.get('/v2/devices/%s' % uuid)
        self.assertEqual('CPU2 SLOT4', dev['std_board_info']['slot'])
        deployable = ids.stable_uuid('deployable', HOST, '0000:ca:00.0')
        attrs = self.get('/v2/attributes?deployable_id=%s&key=slot'
                         % deployable)['attributes']
        self.assertEqual(['CPU2 SLOT4'], [a['value'] for a in attrs])
        # A device in no slot publishes none.
        nothing = ids.stable_uuid('deployable', HOST, '0000:e3:00.0')
        self.assertEqual([], self.get(
            '/v2/attributes?deployable_id=%s&key=slot' % nothing)[
                'attributes'])
