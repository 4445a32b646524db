"""``/v2/deployables``: list (``limit``/``marker`` pages), show, and
``PATCH /{uuid}/program``.

Program (Cyborg: write an FPGA bitstream from a Glance image) needs a
discovery driver that can program the deployable: a loaded driver named
like the deployable's ``driver_name`` with a ``program(deployable,
image_uuid)`` method.  No driver of accel_backend has one (there is no
FPGA driver), so after validating the body (400) and finding the
deployable (404) the answer is 409 ``accel.deployable.program_unsupported``
where Cyborg would try and answer 500 or its FPGAProgramError.
"""

import sqlalchemy as sa

from accel_backend.api.schemas import deployable as program_schema
from accel_backend.api import util
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import deployable as deployable_obj
from accel_backend.policies import deployable as deployable_policy


def list_(req):
    """``GET``."""
    util.context(req).can(deployable_policy.GET_ALL)
    limit, marker = util.page_params(req)
    with util.service(req).db.transaction() as session:
        deps = deployable_obj.list_(session, limit=limit,
                                           marker=marker)
        views = [deployable_obj.to_dict(d, util.base_url(req))
                 for d in deps]
    return util.response(200, util.collection(req, 'deployables', views,
                                              limit))


def show(req, deployable_uuid):
    """``GET /{uuid}``."""
    util.context(req).can(deployable_policy.GET_ONE)
    util.check_uuid(deployable_uuid)
    with util.service(req).db.transaction() as session:
        dep = session.scalar(sa.select(models.Deployable).where(
            models.Deployable.uuid == deployable_uuid))
        if dep is None:
            raise exception.DeployableNotFound(ident=deployable_uuid)
        view = deployable_obj.to_dict(dep, util.base_url(req))
    return util.response(200, view)


def _programmer(svc, dep):
    for drv in svc.drivers:
        if getattr(drv, 'name', None) == dep.driver_name:
            return getattr(drv, 'program', None)
    return None


def program(req, deployable_uuid):
    """``PATCH /{uuid}/program`` with ``[{"op": "replace", "path":
    "/bitstream_id", "value": [{"image_uuid": <uuid>}]}]`` -> 200 with the
    deployable when a driver programmed it."""
    util.context(req).can(deployable_policy.PROGRAM)
    util.check_uuid(deployable_uuid)
    body = util.json_body(req, program_schema.PROGRAM)
    image_uuid = program_schema.image_uuid(body)
    svc = util.service(req)
    with svc.db.transaction() as session:
        dep = deployable_obj.get(session, deployable_uuid)
        programmer = _programmer(svc, dep)
        if programmer is None:
            raise exception.DeployableProgramUnsupported(
                uuid=dep.uuid, driver=dep.driver_name)
        programmer(dep, image_uuid)
        view = deployable_obj.to_dict(dep, util.base_url(req))
    return util.response(200, view)
