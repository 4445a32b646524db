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

"""``/v2/devices``: list (``type``, ``vendor``, ``hostname`` filters,
``limit``/``marker`` pages) and show; ``status`` from microversion 2.3;
``POST /{uuid}/enable|disable`` (Cyborg 2.x, administrators).

Disable stores Cyborg's status ``maintaining`` (shown from 2.3) and then
reserves the whole inventory of the device's resource providers in
Placement (reserved = total); enable stores ``enabled`` and sets reserved
to 0.  Both answer 200 with no body, as Cyborg 17 does.  The database is
written first: a disabled device is never bound again even when the
Placement update then fails (502 ``accel.placement.error``; the periodic
report, which derives ``reserved`` from the status, repairs Placement).
"""

from accel_backend.api.policies import device as device_policy
from accel_backend.api import util
from accel_backend.objects import device as device_obj


def list_(req):
    """``GET [?hostname=&type=&vendor=&limit=&marker=]`` -> 200
    ``{"devices": [...]}`` (exact-match filters; ``status`` from 2.3).

    :raises InvalidLimit, InvalidMarker: 400.
    """
    return util.list_response(
        req, device_policy.GET_ALL, 'devices', device_obj.list_,
        device_obj.to_dict,
        filters={'hostname': req.GET.get('hostname'),
                 'type_': req.GET.get('type'),
                 'vendor': req.GET.get('vendor')},
        view_args=(util.version(req) >= (2, 3),))


def show(req, device_uuid):
    """``GET /{uuid}`` -> 200 with the device.

    :raises InvalidUUID: 400.
    :raises DeviceNotFound: 404.
    """
    return util.show_response(
        req, device_policy.GET_ONE, device_uuid, device_obj.get,
        device_obj.to_dict, view_args=(util.version(req) >= (2, 3),))


def _set_status(req, device_uuid, rule, status):
    util.context(req).can(rule)
    util.check_uuid(device_uuid)
    svc = util.service(req)
    with svc.db.transaction() as session:
        dev = device_obj.get(session, device_uuid)
        hostname = dev.hostname
        rp_uuids = device_obj.set_status(session, dev, status)
    if status == device_obj.ENABLED:
        # Enabling retries failed cleanings: wake the host's cleaner
        # (an agent's, over RPC; in-process ones woke at commit).
        svc.dispatcher.clean({hostname})
    for rp_uuid in rp_uuids:
        svc.reporter.reserved.set_reserved(
            rp_uuid, status != device_obj.ENABLED)
    return util.response(200)


def enable(req, device_uuid):
    """``POST /{uuid}/enable`` -> 200, no body (module docstring).

    :raises InvalidUUID: 400.
    :raises DeviceNotFound: 404.
    :raises DeviceMissing: 409, discovery no longer finds it.
    :raises PlacementError: 502, stored but Placement not updated.
    """
    return _set_status(req, device_uuid, device_policy.ENABLE,
                       device_obj.ENABLED)


def disable(req, device_uuid):
    """``POST /{uuid}/disable`` -> 200, no body (module docstring).

    :raises InvalidUUID: 400.
    :raises DeviceNotFound: 404.
    :raises PlacementError: 502, stored but Placement not updated.
    """
    return _set_status(req, device_uuid, device_policy.DISABLE,
                       device_obj.MAINTAINING)
