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

"""``accel-backend-manage device forget`` (``cmd.manage_device``)
through ``cmd.manage.main``: a GPU of the recorded ``gpu-server`` tree
vanishes under its ARQ, is kept ``missing`` and quarantined once
released, and is forgotten, its provider deleted from the real
Placement (openstack-placement's fixture) at the next pass."""

import os
import shutil

from oslo_utils import uuidutils

from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_lifecycle

GPU = test_lifecycle.GPU
OTHER = '0000:65:00.0'


class ForgetTest(test_lifecycle.ServiceTestBase):

    def manage(self, *argv):
        """``(exit status, stdout, stderr)`` of the command."""
        return base.run_manage(self, self.conf.config_file[0],
                               ['device', 'forget'] + list(argv))

    def passes(self, svc, n=2):
        for _ in range(n):
            svc.discover_and_report()

    def test_forget_a_failed_device_gone_for_good(self):
        self.conf = self.make_conf()
        svc = self.make_service(self.conf)
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        shutil.rmtree(os.path.join(self.root, GPU))
        self.passes(svc)
        dev = test_lifecycle.device_uuid(GPU)
        # Held by its ARQ: refused, nothing deleted.
        code, _, err = self.manage(dev)
        self.assertEqual(1, code)
        self.assertIn('is missing, held by an ARQ', err)
        self.delete_arq(svc, arq)
        self.passes(svc)
        self.assertEqual(['quarantined'],
                         [s for s, _ in self.handle_states(svc, GPU)])
        # A device that is there: refused.
        code, _, err = self.manage(test_lifecycle.device_uuid(OTHER))
        self.assertEqual(1, code)
        self.assertIn('is enabled; only a missing device', err)
        self.assertTrue(self.rp_exists(test_lifecycle.rp_uuid(OTHER)))
        # Unknown: refused.
        code, _, err = self.manage(uuidutils.generate_uuid())
        self.assertEqual(1, code)
        self.assertIn('could not be found', err)

        code, out, _ = self.manage(dev)

        self.assertEqual(0, code)
        self.assertIn('Forgot device %s of compute1' % GPU, out)
        self.call(svc, '/v2/devices/%s' % dev, status=404)
        self.assertTrue(self.rp_exists(test_lifecycle.rp_uuid(GPU)))
        svc.discover_and_report()
        self.assertFalse(self.rp_exists(test_lifecycle.rp_uuid(GPU)))
        self.assertEqual([], self.handle_states(svc, GPU))
