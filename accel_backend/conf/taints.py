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

"""``[taints]``: which device taints device profiles may tolerate
(``accel_common.tolerations``)."""

from oslo_config import cfg
from oslo_config import types

from accel_common import tolerations


class TolerableKeys(types.List):
    """A list of taint keys ``accel_common.tolerations.check_keys``
    takes; oslo.config refuses another value when the option is read
    (``ConfigFileValueError``, one line and exit status 2 from our
    commands)."""

    def __call__(self, value):
        keys = super().__call__(value)
        try:
            return list(tolerations.check_keys(keys))
        except tolerations.InvalidTolerations as e:
            raise ValueError(str(e))


GROUP = cfg.OptGroup(
    'taints', title='Device taints',
    help='Device taints (API microversion 2.5, accel-backend-manage '
         'device drain) and the tolerations of device profiles.')
OPTS = [
    cfg.Opt('tolerable_keys', type=TolerableKeys(), default=[],
            help='Taint keys a device profile group may tolerate with '
                 '"accel:tolerations": "<key>[,<key>...]" (for burn-in '
                 'or diagnostics on tainted devices by an admin '
                 'project). A NoSchedule taint of one of these keys on a '
                 'whole deployable is not a reservation in Placement but '
                 'the trait CUSTOM_ACCEL_TAINT_<KEY> of its resource '
                 'provider (upper case, other characters than A-Z, 0-9 '
                 'and _ as _), and every device profile group the API '
                 'serves forbids that trait unless it tolerates the key. '
                 'The keys accel_backend sets '
                 'itself (accel.openstack.org/unallocated, '
                 'accel.openstack.org/unhealthy) are refused. Set it alike '
                 'for the API, the conductor and accel-backend-manage.'),
]
