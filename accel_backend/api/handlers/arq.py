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

"""``/v2/accelerator_requests``: create, list, show, bind/unbind, delete.

Wire contract: Nova 34's client (nova, ``nova/accelerator/cyborg.py``) and
Cyborg 17's controller (openstack-cyborg 17.0.0,
``cyborg/api/controllers/v2/arqs.py``); the differences are listed in
``doc/cyborg-deviations.md``.
"""

from accel_backend.api.policies import arq as arq_policy
from accel_backend.api import policy
from accel_backend.api.schemas import arq as schema
from accel_backend.api import util
from accel_backend.conductor import dispatcher
from accel_backend import exception
from accel_backend import notifications
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from accel_common import arq_states

BIND_STATES = {'resolved': arq_states.RESOLVED_STATES}
# States in which an ARQ holds no device: its project may delete it;
# deleting one in any other state needs ``accelerator:arq:delete_bound``.


def _target(arq):
    return policy.target(arq.project_id)


def _project_filter(ctx):
    """Project whose ARQs the caller sees; None: every project.

    A caller without a project sees none (``''`` matches no ARQ).
    """
    if ctx.can(arq_policy.ALL_PROJECTS, fatal=False):
        return None
    return ctx.project_id or ''


def _sees(ctx, project_id, everyone=None):
    """Whether the caller may see an ARQ of ``project_id``: one of its own
    project always, another's only when ``accelerator:arq:all_projects``
    passes (checked only then: Nova's binds and deletes are of the
    caller's project, and every rule checked costs CPU; see the
    contributor guide's "Design measurements").

    :param everyone: a ``_Everyone`` to remember that check across the
        ARQs of one request.
    """
    if ctx.project_id and project_id == ctx.project_id:
        return True
    return (everyone or _Everyone(ctx))()


class _Everyone:
    """``accelerator:arq:all_projects`` for ``ctx``, checked once, when
    first asked."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._passed = None

    def __call__(self):
        if self._passed is None:
            self._passed = self.ctx.can(arq_policy.ALL_PROJECTS,
                                        fatal=False)
        return self._passed


def _get_visible(session, ctx, arq_uuid, for_update=False):
    """The ARQ, or 404 when it belongs to a project the caller may not
    see (404, not 403: another project's ARQ must not leak)."""
    arq = arq_obj.get(session, arq_uuid, for_update=for_update)
    if not _sees(ctx, arq.project_id):
        raise exception.ARQNotFound(ident=arq_uuid)
    return arq


class _PerProject:
    """``ctx.can(rule, target)`` once per project of the ARQs checked:
    the target is only the ARQ's project, so the answer is the same for
    every ARQ of one project (a PATCH of 100 ARQs: one check, not 100).
    A refusal raises as ``ctx.can`` does."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._passed = set()

    def check_own(self, rule):
        """The check made before any ARQ is read (as Cyborg 17's
        ``authorize_wsgi``: a caller the rule refuses outright gets 403,
        not 404), on the target an ARQ of the caller's own project has.

        The ARQs of that project then need no second check: the rule,
        the credentials and the target are the same, and so is the
        answer (one of the PATCH's two checks saved: the contributor
        guide's "Design measurements"; Nova binds the ARQs of its
        caller's project).

        :raises Forbidden: the rule refuses the caller.
        """
        self.ctx.can(rule, policy.target(self.ctx.project_id))
        self._passed.add((rule, self.ctx.project_id))

    def check(self, rule, arq):
        key = (rule, arq.project_id)
        if key not in self._passed:
            self.ctx.can(rule, _target(arq))
            self._passed.add(key)


def create(req):
    """``POST {"device_profile_name"}`` -> 201 ``{"arqs": [...]}``: one
    ``Initial`` ARQ per accelerator the profile's groups ask for, owned by
    the caller's project.

    :raises DeviceProfileNotFound: 404.
    :raises InvalidDeviceProfile: 400, a stored group breaks today's
        rules.
    """
    ctx = util.context(req)
    ctx.can(arq_policy.CREATE)
    body = util.json_body(req, schema.CREATE)
    with util.service(req).db.transaction() as session:
        arqs = arq_obj.create(session, body['device_profile_name'],
                              project_id=ctx.project_id)
        views = [arq_obj.to_dict(a, util.base_url(req)) for a in arqs]
    return util.response(201, {'arqs': views})


def list_(req):
    """``GET [?instance=<uuid>][&bind_state=resolved]``.

    With ``instance`` and ``bind_state=resolved`` Cyborg answers 423 while
    some ARQ of the instance is still binding; so do we. Without
    ``instance``, ``bind_state=resolved`` lists the resolved ARQs
    (``Bound``, ``BindFailed``, ``Deleting``), as Cyborg does.
    """
    ctx = util.context(req)
    ctx.can(arq_policy.GET_ALL)
    instance = util.query_uuid(req, 'instance')
    bind_state = req.GET.get('bind_state')
    if bind_state is not None:
        if bind_state not in BIND_STATES:
            raise exception.BadRequest(
                reason='bind_state must be one of %s' % sorted(BIND_STATES))
    limit, marker = util.page_params(req)
    # Without an instance, bind_state filters; with one, it asks whether
    # every ARQ of the instance is resolved (423 otherwise).
    states = (BIND_STATES[bind_state]
              if bind_state and instance is None else None)
    with util.service(req).db.transaction() as session:
        arqs = arq_obj.list_(session, instance_uuid=instance,
                             project_id=_project_filter(ctx), states=states,
                             limit=limit, marker=marker)
        if instance is None:
            everything = ()
        elif bind_state and (limit is not None or marker is not None):
            # Unresolved is about every ARQ of the instance, not a page.
            everything = arq_obj.list_(session, instance_uuid=instance,
                                       project_id=_project_filter(ctx))
        else:
            everything = arqs
        if bind_state and any(a.state not in BIND_STATES[bind_state]
                              for a in everything):
            raise exception.ARQsUnresolved(instance=instance)
        views = [arq_obj.to_dict(a, util.base_url(req)) for a in arqs]
    return util.response(200, util.collection(req, 'arqs', views, limit))


def show(req, arq_uuid):
    """``GET /{uuid}`` -> 200 with the ARQ.

    :raises InvalidUUID: 400 ``accel.invalid_uuid``.
    :raises ARQNotFound: 404, also for another project's ARQ the caller
        may not see.
    """
    util.check_uuid(arq_uuid)
    ctx = util.context(req)
    # Before the lookup (as Cyborg's authorize_wsgi): a caller the rule
    # refuses outright (a system-scoped token) gets 403, not 404.
    policies = _PerProject(ctx)
    policies.check_own(arq_policy.GET_ONE)
    with util.service(req).db.transaction() as session:
        arq = _get_visible(session, ctx, arq_uuid)
        policies.check(arq_policy.GET_ONE, arq)
        view = arq_obj.to_dict(arq, util.base_url(req))
    return util.response(200, view)


def update(req, arq_uuid=None):
    """``PATCH {arq_uuid: [ops]}``: bind (all ``add``) or unbind (all
    ``remove``) -> 202.  The binding ends with the
    ``accelerator-request-bound`` event to Nova.

    The bind flow, step by step, is ``conductor.dispatcher``'s: this
    handler validates the PATCH, runs its steps 1 to 3 in one transaction
    (``_update_locked``) and step 4 after the commit.  The embedded
    service (``[binding] mode = inline``) binds in the PATCH's own
    transaction: the 202 says the ARQs are ``Bound`` or ``BindFailed``
    (committed), and the events follow.  Otherwise the transaction
    commits ``BindStarted`` and a conductor binds after the 202: the
    embedded service itself (``mode = agents``), or the conductor
    ``accel-backend-api`` casts them to.  The transaction runs again
    after a database deadlock (``Database.write``).

    ``PATCH /{arq_uuid}`` with the same body (keyed by that one ARQ) is
    how openstacksdk, and so ``openstack accelerator arq bind/unbind``,
    sends it.

    :raises BindDispatchFailed: 503, the cast to a conductor could not be
        sent (the ARQs stay ``BindStarted``).
    """
    ctx = util.context(req)
    policies = _PerProject(ctx)
    policies.check_own(arq_policy.UPDATE)
    body = util.json_body(req, schema.PATCH)
    if arq_uuid is not None and set(body) != {arq_uuid}:
        raise exception.BadRequest(
            reason='PATCH of one ARQ takes {"%s": [operations]}' % arq_uuid)
    binds, unbinds = schema.parse_patch(body, util.version(req) >= (2, 1))
    svc = util.service(req)
    started, released, dirty, unbound, outcomes = svc.db.write(
        _update_locked, ctx, policies, svc.dispatcher, binds, unbinds)
    # After commit: what a binder must find in the database is there
    # (Bound with its pending event, or BindStarted).
    for data in unbound:
        svc.notifications.arq('accelerator.arq.unbind.end', data)
    svc.reporter.reserved.reserve_released(dirty)
    svc.dispatcher.clean(released)
    dispatcher.hand_over(svc.dispatcher, started, outcomes, ctx.request_id,
                         lambda fn: util.after_response(req, fn))
    return util.response(202)


def _update_locked(session, ctx, policies, disp, binds, unbinds):
    """The transaction of ``update``: ``(started {hostname: [arq_uuid]},
    released hostnames, resource providers of the handles left dirty,
    unbind notification payloads, outcomes of an in-transaction binding
    or None)``.

    :param disp: the service's ``conductor.dispatcher.Dispatcher``.
    """
    released = set()
    gave_back = []
    unbound = []
    # Step 1: one lock order for every multi-ARQ request (no deadlocks),
    # and one read of them all, as rows: a binding changes and writes
    # them (``conductor.bind_row.BindRow``).  An unbind releases the
    # device through the ORM objects, read again (already locked).
    locked = dispatcher.lock(session, set(binds) | set(unbinds))
    to_unbind = {}
    handles = []
    if unbinds:
        to_unbind = {a.uuid: a for a in arq_obj.get_all_for_update(
            session, [u for u in unbinds if u in locked])}
        handles = arq_obj.load_handles(  # noqa: F841 (kept alive)
            session, list(to_unbind.values()))
    everyone = _Everyone(ctx)

    def visible(arq_uuid):
        arq = locked.get(arq_uuid)
        # 404, not 403, for another project's ARQ: it must not leak.
        if arq is None or not _sees(ctx, arq.project_id, everyone):
            raise exception.ARQNotFound(ident=arq_uuid)
        policies.check(arq_policy.UPDATE, arq)
        return arq

    # Step 2: BindStarted.
    started, moved = dispatcher.start(session, binds, visible)
    for arq_uuid in unbinds:
        visible(arq_uuid)
        arq = to_unbind[arq_uuid]
        data = None
        if arq.attach_handle is not None:
            released.add(arq.hostname)
            gave_back.append(arq.attach_handle)
            # Taken before the unbind releases the handle.
            data = notifications.arq_data(arq)
        arq_obj.unbind(arq)
        if data is not None:
            data['state'] = arq.state
            unbound.append(data)
    # Step 3: bound here (inline), or BindStarted written for a binder.
    outcomes = dispatcher.bind_in_transaction(session, disp, moved)
    return (started, released, device_obj.dirty_providers(gave_back),
            unbound, outcomes)


def delete(req, arq_uuid=None):
    """``DELETE ?instance=<uuid>`` or ``?arqs=<u1>,<u2>`` -> 204;
    ``DELETE /{arq_uuid}`` is ``?arqs=<arq_uuid>``.

    Releases the devices. ``?instance=`` is idempotent (Nova retries
    deletes); ``?arqs=`` and ``/{arq_uuid}`` answer 404, deleting
    nothing, when one of the ARQs does not exist or is not visible to the
    caller, as Cyborg 17 does. Only the caller's project's ARQs are
    touched unless ``accelerator:arq:all_projects`` passes; ARQs that
    hold or are getting a device need ``accelerator:arq:delete_bound``
    (a service token by default: 403, and nothing is deleted).
    """
    ctx = util.context(req)
    policies = _PerProject(ctx)
    policies.check_own(arq_policy.DELETE)
    owner = _project_filter(ctx)
    instance = util.query_uuid(req, 'instance')
    arqs_param = req.GET.get('arqs') if arq_uuid is None else arq_uuid
    if (instance is None) == (arqs_param is None):
        raise exception.BadRequest(
            reason='give exactly one of instance=<uuid> or arqs=<uuids>')
    with util.service(req).db.transaction() as session:
        if instance is not None:
            arqs = arq_obj.list_(session, instance_uuid=instance,
                                 project_id=owner)
        else:
            uuids = [u for u in arqs_param.split(',') if u]
            for u in uuids:
                util.check_uuid(u)
            arqs = arq_obj.list_(session, uuids=uuids, project_id=owner)
            missing = set(uuids) - {a.uuid for a in arqs}
            if missing:
                raise exception.ARQNotFound(ident=','.join(sorted(missing)))
        # Locked (in id order) and read again: a binding that finished
        # since the list must give its handle back too, and the policy
        # is checked on the state the delete acts on.  ARQs deleted
        # meanwhile (Nova retries deletes) are simply gone.
        arqs = arq_obj.get_all_for_update(session, [a.uuid for a in arqs])
        handles = arq_obj.load_handles(session, arqs)
        released = set()
        deleted = []
        for arq in arqs:
            policies.check(
                arq_policy.DELETE if arq.state in arq_states.UNBOUND_STATES
                else arq_policy.DELETE_BOUND, arq)
            if arq.attach_handle_id is not None:
                released.add(arq.hostname)
            deleted.append(notifications.arq_data(arq))
        arq_obj.delete_locked(session, arqs)
        dirty = device_obj.dirty_providers(handles)
    svc = util.service(req)
    for data in deleted:
        svc.notifications.arq('accelerator.arq.delete.end', data)
    svc.reporter.reserved.reserve_released(dirty)
    svc.dispatcher.clean(released)
    return util.response(204)
