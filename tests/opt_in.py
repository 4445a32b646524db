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

"""Test packages that the default run leaves out.

``tests.cyborg_import`` and ``tests.nested`` take minutes and need more
than the test venv; their tests are loaded only when their environment
variable is ``1`` (their tox environments set it).
"""

import os


def load_tests_when(env, package_file):
    """A ``load_tests`` (the unittest protocol) for a package whose tests
    are loaded only when ``os.environ[env] == '1'``.

    :param env: the environment variable's name (e.g.
        ``'ACCEL_CYBORG_IMPORT'``).
    :param package_file: the package's ``__file__``: its folder is where
        the tests are discovered (``test*.py`` unless a pattern is given).
    """
    this_dir = os.path.dirname(package_file)

    def load_tests(loader, standard_tests, pattern):
        if os.environ.get(env) != '1':
            return standard_tests
        standard_tests.addTests(loader.discover(
            start_dir=this_dir, pattern=pattern or 'test*.py'))
        return standard_tests
    return load_tests
