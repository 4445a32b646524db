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

"""Device profile groups: accel_backend (when a profile is created) and
nova_accel (when it becomes request groups) take and refuse the same
groups, the rules of ``accel_common.device_profile``."""

import ast
import os

import testtools

from accel_backend.api.schemas import device_profile as dp_schema
from accel_backend import exception as backend_exc
from accel_common import device_profile
from nova_accel.cyborg_client import exception as client_exc
from nova_accel.cyborg_client import request_groups

LONG_CUSTOM = 'CUSTOM_' + 'X' * 249          # 256 characters
LONGEST_CUSTOM = 'CUSTOM_' + 'X' * 248       # 255 characters

VALID = [
    [{'resources:PGPU': '1'}],
    [{'resources:PGPU': '1024'}],
    [{'resources:FPGA': '2', 'trait:CUSTOM_X': 'required',
      'trait:HW_GPU_CUDA_COMPUTE_CAPABILITY_V1_0': 'forbidden',
      'accel:bitstream': 'x'}],
    [{'resources:' + LONGEST_CUSTOM: '1'}],
    [{'resources:PGPU': '1', 'trait:' + LONGEST_CUSTOM: 'required'}],
    [{'resources:PGPU': '1'}, {'resources:VGPU': '3'}],
]
INVALID = {
    'amount above 1024': [{'resources:PGPU': '1025'}],
    'amount zero': [{'resources:PGPU': '0'}],
    'negative amount': [{'resources:PGPU': '-1'}],
    'not ASCII digits': [{'resources:PGPU': '\u00b2'}],
    'custom resource class of 256 characters': [
        {'resources:' + LONG_CUSTOM: '1'}],
    'custom trait of 256 characters': [
        {'resources:PGPU': '1', 'trait:' + LONG_CUSTOM: 'required'}],
    'unknown resource class': [{'resources:FOO': '1'}],
    'empty resource class': [{'resources:': '1'}],
    'unknown prefix': [{'resources:PGPU': '1', 'foo': 'bar'}],
    'trait value': [{'resources:PGPU': '1', 'trait:CUSTOM_X': 'preferred'}],
    'no resources': [{'trait:CUSTOM_X': 'required'}],
    'no groups': [],
}


class TestBothHalvesAgree(testtools.TestCase):

    def test_valid(self):
        for groups in VALID:
            dp_schema.check_groups(groups)
            self.assertEqual(
                device_profile.device_count(groups),
                request_groups.device_count(groups, name='dp'))

    def test_invalid(self):
        for what, groups in INVALID.items():
            backend = self.assertRaises(
                backend_exc.InvalidDeviceProfile, dp_schema.check_groups,
                groups)
            client = self.assertRaises(
                client_exc.InvalidDeviceProfile,
                request_groups.device_profile_request_groups, groups,
                name='dp')
            # The same reason on both sides.
            self.assertIn(backend.kwargs['reason'], str(client), what)

    def test_amounts(self):
        self.assertEqual(1024, device_profile.device_count(
            [{'resources:PGPU': 1024}]))
        for amount in (True, None, 1.0, 1025, 0, ' 1'):
            self.assertRaises(device_profile.InvalidGroup,
                              device_profile.device_count,
                              [{'resources:PGPU': amount}])


class TestOneCustomNamePattern(testtools.TestCase):
    """``device_profile.CUSTOM_NAME_RE`` is the one definition of a
    custom resource class or trait name in the shipped code."""

    def test_no_second_definition(self):
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), '..',
                                            '..', '..'))
        found = []
        for top in ('accel_backend', 'accel_common', 'nova_accel'):
            for dirpath, _, files in os.walk(os.path.join(root, top)):
                for name in files:
                    if not name.endswith('.py'):
                        continue
                    path = os.path.join(dirpath, name)
                    with open(path, encoding='utf-8') as f:
                        tree = ast.parse(f.read(), path)
                    if any(isinstance(node, ast.Constant) and
                           isinstance(node.value, str) and
                           'CUSTOM_[' in node.value
                           for node in ast.walk(tree)):
                        found.append(os.path.relpath(path, root).replace(
                            os.sep, '/'))
        self.assertEqual(['accel_common/device_profile.py'], found)
