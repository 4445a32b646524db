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

"""Test suite of nova-accel.

Nova 34 runs in its native-threading mode here (no eventlet, as nova_accel
and accel_backend): the mode must be chosen before anything imports
eventlet, so it is chosen when this package is imported.
"""
import os
import sys

os.environ.setdefault('OS_NOVA_DISABLE_EVENTLET_PATCHING', '1')
# The nova wheel installs its paste pipeline under <prefix>/etc/nova.
os.environ.setdefault('OS_WSGI__API_PASTE_CONFIG',
                      os.path.join(sys.prefix, 'etc', 'nova',
                                   'api-paste.ini'))

from nova import monkey_patch  # noqa: E402

monkey_patch.patch()
