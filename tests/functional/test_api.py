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

"""gabbi tests of accel_backend's HTTP API against the real WSGI app.

Each YAML file in ``gabbits/`` runs against a fresh accel_backend
``Service`` built by ``tests.functional.fixtures.gabbi``.
"""

import os
import warnings

from gabbi import driver
from gabbi import exception as gabbi_exc

from tests.functional.fixtures import gabbi as gabbi_fixtures

TESTS_DIR = 'gabbits'


def load_tests(loader, tests, pattern):
    """Provide a TestSuite to the discovery process."""
    test_dir = os.path.join(os.path.dirname(__file__), TESTS_DIR)
    with warnings.catch_warnings():
        # device_profile.yaml is named after the resource; the '_' only
        # matters to a stestr group_regex that splits names on '_'.
        warnings.simplefilter('ignore', gabbi_exc.GabbiSyntaxWarning)
        return driver.build_tests(
            test_dir, loader, host=None, intercept=gabbi_fixtures.app,
            fixture_module=gabbi_fixtures,
            inner_fixtures=[gabbi_fixtures.NoServerErrors],
            test_loader_name=__name__)
