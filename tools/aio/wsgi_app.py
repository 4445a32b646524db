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

"""Load an OpenStack WSGI module under gunicorn with a clean ``sys.argv``.

Keystone (and Nova, Glance) parse ``sys.argv`` with oslo.config when their
WSGI module is imported; under gunicorn that holds gunicorn's own options
and the services refuse them.  gunicorn calls ``load('<module>')``
(``tools.aio.wsgi_app:load('keystone.wsgi.api')``) after parsing its
arguments, so the arguments can be dropped first.
"""

import importlib
import sys


def load(module):
    """:returns: ``<module>.application``."""
    del sys.argv[1:]
    return importlib.import_module(module).application
