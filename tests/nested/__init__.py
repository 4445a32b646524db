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

"""Tests on the nested compute node (``tools.nested``): a real Linux
kernel with a virtual IOMMU and emulated PCI functions, under QEMU/TCG.

They take minutes, so the default run (``tox -e py3``) does not load them;
``tox -e nested`` (``ACCEL_NESTED=1``) does.  A missing QEMU, kernel
package or memory fails them with the reason; it never skips them.
"""

import os

ENV = 'ACCEL_NESTED'


def load_tests(loader, standard_tests, pattern):
    if os.environ.get(ENV) != '1':
        return standard_tests
    this_dir = os.path.dirname(__file__)
    standard_tests.addTests(loader.discover(
        start_dir=this_dir, pattern=pattern or 'test*.py'))
    return standard_tests
