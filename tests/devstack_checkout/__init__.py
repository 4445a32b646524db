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

"""The devstack plugin's tests (``tests.aio.test_devstack``) with a
devstack checkout's own functions (``functions``, ``lib/database``,
``lib/keystone``, ``lib/nova``, ``lib/tempest``) in place of the
stand-ins of ``tests/aio/devstack_stubs.sh``: ``ipv6_unquote``, the ini
functions, ``is_service_enabled``/``enable_service``, ``run_process``
writing the systemd units, ``conductor_conf``, the source phase's order
(``run_phase``), ``install_tempest_plugins``.

The default run leaves them out; they are loaded when
``NOVA_ACCEL_DEVSTACK=1``, with ``NOVA_ACCEL_DEVSTACK_DIR`` the checkout
(``git clone https://opendev.org/openstack/devstack``)::

    NOVA_ACCEL_DEVSTACK=1 NOVA_ACCEL_DEVSTACK_DIR=~/devstack \
        stestr run tests.devstack_checkout

A missing checkout fails them; it never skips them.
"""

from tests import opt_in

ENV = 'NOVA_ACCEL_DEVSTACK'

load_tests = opt_in.load_tests_when(ENV, __file__)
