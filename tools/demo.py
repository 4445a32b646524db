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

"""The main job: boot a server with an accelerator and show what it got.

Runs Nova 34 in-process (its functional harness: real API, conductor,
scheduler and compute code; the bundle's libvirt driver on fake libvirt;
real Placement) with accel_backend embedded (SQLite, noauth) discovering
two GPUs from a recorded sysfs tree.  It creates a device profile, a
flavor that asks for it, boots a server, prints the server, its ARQs, its
Placement allocation and the guest's ``<hostdev>`` XML, deletes the server
and shows the device is free again.

Usage: ``tox -e demo`` (or ``tools/run demo`` on a fresh machine).
"""

import json
import sys
import unittest

import tests  # noqa: F401  (chooses Nova's threading mode first)

from lxml import etree

from tests.functional import base


def _show(title, value):
    print('\n== %s' % title)
    if isinstance(value, str):
        print(value)
    else:
        print(json.dumps(value, indent=2, sort_keys=True))


class Demo(base.AccelServersTestBase):
    """One boot, shown step by step (a TestCase only to reuse Nova's
    harness)."""

    def runTest(self):
        _show('devices accel_backend discovered and reported to Placement',
              self.accel_request('GET', '/v2/devices')['devices'])
        dp = self.create_device_profile(
            'gpu-t4', [{'resources:PGPU': '1',
                        'trait:CUSTOM_NVIDIA_T4': 'required'}])
        _show('device profile (POST /v2/device_profiles)', dp)
        flavor = self.accel_flavor('gpu-t4')
        _show('flavor extra specs', self.api.get_flavor(flavor).get(
            'extra_specs'))

        server = self._create_server(flavor_id=flavor, networks='none')
        _show('server (ACTIVE)', {k: server[k] for k in (
            'id', 'name', 'status', 'OS-EXT-SRV-ATTR:host',
            'OS-EXT-SRV-ATTR:hypervisor_hostname', 'flavor')})
        _show('its ARQs (GET /v2/accelerator_requests?instance=)',
              self.arqs_of(server['id']))
        _show('its Placement allocations', self.placement.get(
            '/allocations/%s' % server['id']).body['allocations'])
        dom = etree.fromstring(self.guest_xml(server['id']))
        hostdevs = [etree.tostring(h, pretty_print=True).decode()
                    for h in dom.findall('./devices/hostdev')]
        self.assertTrue(hostdevs, 'the guest has no <hostdev>')
        _show('guest <hostdev> XML (libvirt domain)', ''.join(hostdevs))

        self._delete_server(server)
        _show('after delete: ARQs of the server', self.arqs_of(server['id']))
        _show('after delete: its allocations', self.placement.get(
            '/allocations/%s' % server['id']).body['allocations'])


def main():
    """Run the demo; returns the exit status."""
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(
        Demo())
    return 0 if result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
