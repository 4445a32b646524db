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

"""Tests of ``accel-backend-manage import-cyborg`` against a real Cyborg
17 database (made by Cyborg's own ``cyborg-dbsync``) and a real Cyborg 17
deployment (API, conductor, agent; ``tools.launch.cyborg``).

They need the Cyborg 17 venv (``python -m tools.launch.cyborg`` builds
it), so the default run (``tox -e py3``) does not load them; ``tox -e
cyborg-import`` (``ACCEL_CYBORG_IMPORT=1``) builds the venv and runs
them.  A missing venv or RabbitMQ fails them; it never skips them.
"""

from tests import opt_in

ENV = 'ACCEL_CYBORG_IMPORT'

load_tests = opt_in.load_tests_when(ENV, __file__)
