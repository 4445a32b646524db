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

"""``/v2/deployables``: list (``limit``/``marker`` pages), show,
``PATCH /{uuid}/program`` and, from microversion 2.4, the free units per
NUMA node of the pools spanning nodes (``GET /free_by_numa_node``).

Program (Cyborg: write an FPGA bitstream from a Glance image) needs a
discovery driver that can program the deployable: a loaded driver named
like the deployable's ``driver_name`` with a ``program(deployable,
image_uuid)`` method.  No driver of accel_backend has one (there is no
FPGA driver), so after validating the body (400) and finding the
deployable (404) the answer is 409 ``accel.deployable.program_unsupported``
where Cyborg would try and answer 500 or its FPGAProgramError.
"""

from accel_backend.api.policies import deployable as deployable_policy
from accel_backend.api.schemas import deployable as program_schema
from accel_backend.api import util
from accel_backend import exception
from accel_backend.objects import deployable as deployable_obj
from accel_backend.objects import numa_free
from accel_common import taints as taints_common

#: The microversion that serves ``GET /v2/deployables/free_by_numa_node``.
FREE_BY_NUMA_NODE_VERSION = (2, 4)


#: The microversion from which a deployable's view has its ``taints``.
TAINTS_VERSION = (2, 5)
#: The microversion from which the list takes ``?taint_effect=``.
TAINT_EFFECT_VERSION = (2, 6)


def list_(req):
    """``GET [?limit=&marker=][&taint_effect=]`` -> 200 ``{"deployables":
    [...]}`` (``taints`` from 2.5; from 2.6 ``taint_effect``, one of
    ``accel_common.taints.EFFECTS``, keeps the deployables with a taint
    of that effect).

    :raises InvalidLimit, InvalidMarker: 400.
    :raises BadRequest: 400, ``taint_effect`` is no effect.
    """
    taints = util.version(req) >= TAINTS_VERSION
    effect = None
    if util.version(req) >= TAINT_EFFECT_VERSION:
        effect = req.GET.get('taint_effect')
        if effect is not None and effect not in taints_common.EFFECTS:
            raise exception.BadRequest(
                reason='taint_effect must be one of %s' % ', '.join(
                    taints_common.EFFECTS))
    return util.list_response(req, deployable_policy.GET_ALL, 'deployables',
                              deployable_obj.list_, deployable_obj.to_dict,
                              filters={'with_taints': taints,
                                       'taint_effect': effect},
                              view_args=(taints,))


def show(req, deployable_uuid):
    """``GET /{uuid}`` -> 200 with the deployable (``taints`` from 2.5).

    :raises InvalidUUID: 400.
    :raises DeployableNotFound: 404.
    """
    return util.show_response(req, deployable_policy.GET_ONE,
                              deployable_uuid, deployable_obj.get,
                              deployable_obj.to_dict,
                              view_args=(util.version(req) >= TAINTS_VERSION,))


def free_by_numa_node(req):
    """``GET /free_by_numa_node`` (microversion 2.4) -> 200
    ``{"deployables": [{"uuid", "rp_uuid", "free_by_numa_node": {"<node>":
    int}}]}``: the free units of each node of every pool spanning NUMA
    nodes (``objects.numa_free``).  Before 2.4 the path is what it was,
    ``show`` of an id that is no UUID.

    :raises Forbidden: 403, neither the service role nor an administrator.
    :raises InvalidUUID: 400, before microversion 2.4.
    """
    if util.version(req) < FREE_BY_NUMA_NODE_VERSION:
        return show(req, 'free_by_numa_node')
    util.context(req).can(deployable_policy.GET_FREE_BY_NUMA_NODE)
    with util.service(req).db.transaction() as session:
        pools = numa_free.spanning_pools(session)
    return util.response(200, {'deployables': pools})


def _programmer(svc, dep):
    for drv in svc.drivers:
        if getattr(drv, 'name', None) == dep.driver_name:
            return getattr(drv, 'program', None)
    return None


def program(req, deployable_uuid):
    """``PATCH /{uuid}/program`` with ``[{"op": "replace", "path":
    "/bitstream_id", "value": [{"image_uuid": <uuid>}]}]`` -> 200 with the
    deployable when a driver programmed it.

    :raises InvalidUUID, SchemaValidationError: 400.
    :raises DeployableNotFound: 404.
    :raises DeployableProgramUnsupported: 409, no loaded driver programs
        it (always, today: module docstring).
    """
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
