"""``/v2/deployables``: list and show."""

import sqlalchemy as sa

from accel_backend.api import util
from accel_backend.db import models
from accel_backend import exception
from accel_backend.objects import device as device_obj
from accel_backend.policies import deployable as deployable_policy


def list_(req):
    """``GET``."""
    util.context(req).can(deployable_policy.GET_ALL)
    with util.service(req).db.transaction() as session:
        deps = session.scalars(sa.select(models.Deployable)
                               .order_by(models.Deployable.id))
        views = [device_obj.deployable_to_dict(d, util.base_url(req))
                 for d in deps]
    return util.response(200, {'deployables': views})


def show(req, deployable_uuid):
    """``GET /{uuid}``."""
    util.context(req).can(deployable_policy.GET_ONE)
    util.check_uuid(deployable_uuid)
    with util.service(req).db.transaction() as session:
        dep = session.scalar(sa.select(models.Deployable).where(
            models.Deployable.uuid == deployable_uuid))
        if dep is None:
            raise exception.DeployableNotFound(ident=deployable_uuid)
        view = device_obj.deployable_to_dict(dep, util.base_url(req))
    return util.response(200, view)
