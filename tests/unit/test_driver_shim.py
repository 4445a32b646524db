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

"""The compute driver shim ``nova-accel-driver-shim`` writes
(``nova_accel.driver_shim.SHIM``), run in this process: it resolves the
drivers only when asked.  The tool itself runs in a fresh interpreter in
``tests/functional/test_driver_shim.py``."""

import testtools

from nova_accel import driver_shim


class DriverShimTest(testtools.TestCase):

    def test_shim_resolves_the_drivers_lazily(self):
        namespace = {}
        exec(compile(driver_shim.SHIM, 'shim', 'exec'), namespace)
        self.assertEqual(['FakeDriver', 'LibvirtDriver'],
                         namespace['__all__'])
        from nova_accel.virt import fake
        self.assertIs(fake.FakeDriver, namespace['__getattr__']('FakeDriver'))
        self.assertRaises(AttributeError, namespace['__getattr__'], 'Nope')
