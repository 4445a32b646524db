"""``/v2/accelerator_requests``: create, list, show, bind/unbind, delete.

Wire contract: REFERENCE.md "Wire contract that Nova 34's in-tree Cyborg
client expects".
"""

from accel_backend.api.schemas import arq as schema
from accel_backend.api import util
from accel_backend import exception
from accel_backend.objects import arq as arq_obj

BIND_STATES = {'resolved': arq_obj.RESOLVED_STATES}


def create(req):
    """``POST {"device_profile_name"}`` -> 201 ``{"arqs": [...]}``."""
    body = util.json_body(req, schema.CREATE)
    ctx = util.context(req)
    with util.service(req).db.transaction() as session:
        arqs = arq_obj.create(session, body['device_profile_name'],
                              project_id=ctx.project_id)
        views = [arq_obj.to_dict(a, util.base_url(req)) for a in arqs]
    return util.response(201, {'arqs': views})


def list_(req):
    """``GET [?instance=<uuid>[&bind_state=resolved]]``.

    With ``bind_state=resolved`` Cyborg answers 423 while some ARQ of the
    instance is still binding; so do we.
    """
    instance = util.query_uuid(req, 'instance')
    bind_state = req.GET.get('bind_state')
    if bind_state is not None:
        if bind_state not in BIND_STATES:
            raise exception.BadRequest(
                reason='bind_state must be one of %s' % sorted(BIND_STATES))
        if instance is None:
            raise exception.BadRequest(
                reason='bind_state needs instance=<uuid>')
    with util.service(req).db.transaction() as session:
        arqs = arq_obj.list_(session, instance_uuid=instance)
        if bind_state and any(a.state not in BIND_STATES[bind_state]
                              for a in arqs):
            raise exception.ARQsUnresolved(instance=instance)
        views = [arq_obj.to_dict(a, util.base_url(req)) for a in arqs]
    return util.response(200, {'arqs': views})


def show(req, arq_uuid):
    """``GET /{uuid}``."""
    with util.service(req).db.transaction() as session:
        view = arq_obj.to_dict(arq_obj.get(session, arq_uuid),
                               util.base_url(req))
    return util.response(200, view)


def update(req):
    """``PATCH {arq_uuid: [ops]}``: bind (all ``add``) or unbind (all
    ``remove``) -> 202.  Binding finishes in the background and ends with
    the ``accelerator-request-bound`` event to Nova."""
    body = util.json_body(req, schema.PATCH)
    binds, unbinds = schema.parse_patch(body, util.version(req) >= (2, 1))
    svc = util.service(req)
    started = []
    with svc.db.transaction() as session:
        for arq_uuid, fields in binds.items():
            arq = arq_obj.get(session, arq_uuid, for_update=True)
            if arq_obj.start_binding(session, arq, fields['hostname'],
                                     fields['device_rp_uuid'],
                                     fields['instance_uuid'],
                                     fields.get('project_id')):
                started.append(arq_uuid)
        for arq_uuid in unbinds:
            arq_obj.unbind(arq_obj.get(session, arq_uuid, for_update=True))
    svc.binder.submit(started)
    return util.response(202)


def delete(req):
    """``DELETE ?instance=<uuid>`` or ``?arqs=<u1>,<u2>`` -> 204.

    Releases the devices; ARQs already gone are not an error (Nova
    retries deletes).
    """
    instance = util.query_uuid(req, 'instance')
    arqs_param = req.GET.get('arqs')
    if (instance is None) == (arqs_param is None):
        raise exception.BadRequest(
            reason='give exactly one of instance=<uuid> or arqs=<uuids>')
    with util.service(req).db.transaction() as session:
        if instance is not None:
            arqs = arq_obj.list_(session, instance_uuid=instance)
        else:
            uuids = [u for u in arqs_param.split(',') if u]
            for u in uuids:
                util.check_uuid(u)
            arqs = arq_obj.list_(session, uuids=uuids)
        for arq in arqs:
            arq_obj.delete(session, arq)
    return util.response(204)
