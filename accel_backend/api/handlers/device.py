"""``/v2/devices``: list (``type``, ``vendor``, ``hostname`` filters) and
show; ``status`` from microversion 2.3."""

from accel_backend.api import util
from accel_backend.objects import device as device_obj
from accel_backend.policies import device as device_policy


def list_(req):
    """``GET``."""
    util.context(req).can(device_policy.GET_ALL)
    with util.service(req).db.transaction() as session:
        devs = device_obj.list_(session, hostname=req.GET.get('hostname'),
                                type_=req.GET.get('type'),
                                vendor=req.GET.get('vendor'))
        views = [device_obj.to_dict(d, util.base_url(req),
                                    util.version(req) >= (2, 3))
                 for d in devs]
    return util.response(200, {'devices': views})


def show(req, device_uuid):
    """``GET /{uuid}``."""
    util.context(req).can(device_policy.GET_ONE)
    util.check_uuid(device_uuid)
    with util.service(req).db.transaction() as session:
        view = device_obj.to_dict(device_obj.get(session, device_uuid),
                                  util.base_url(req),
                                  util.version(req) >= (2, 3))
    return util.response(200, view)
