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

"""The ARQ (accelerator request) state machine: one table.

State names are Cyborg's (openstack-cyborg 17.0.0,
``cyborg/common/constants.py``); the event is Nova's external event
``accelerator-request-bound`` whose ``status`` tells the compute manager how
the binding ended (nova 34.0.0, ``nova/compute/manager.py``,
``nova/accelerator/cyborg.py``).

``TRANSITIONS`` is the only place transitions are allowed::

    Initial     --bind-->    BindStarted
    Unbound     --bind-->    BindStarted
    BindStarted --claimed--> Bound        (event: completed)
    BindStarted --no device> BindFailed   (event: failed)
    Bound       --no handle> BindFailed   (event: failed; the audit)
    BindStarted, Bound, BindFailed --unbind--> Unbound

Deleting an ARQ removes its row from any state; it is not a transition.
``UnbindFailed`` and ``Deleting`` are Cyborg states a Cyborg service may
report (Nova counts ``Deleting`` as resolved) but no transition of
accel_backend enters them: an unbind here cannot fail half-way (one
transaction) and a delete is one transaction too.  They stay in
``STATES`` so that clients understand Cyborg's answers.

Every writer of ``arq.state`` goes through :func:`check`, which returns
the event the transition emits (or None) and raises
:class:`InvalidTransition` for any pair not in the table.
"""

INITIAL = 'Initial'
BIND_STARTED = 'BindStarted'
BOUND = 'Bound'
UNBOUND = 'Unbound'
BIND_FAILED = 'BindFailed'
UNBIND_FAILED = 'UnbindFailed'
DELETING = 'Deleting'
#: Every state a Cyborg v2 service may report.
STATES = (INITIAL, BIND_STARTED, BOUND, UNBOUND, BIND_FAILED, UNBIND_FAILED,
          DELETING)

#: Name of Nova's external event announcing the end of a binding.
EVENT_NAME = 'accelerator-request-bound'
#: ``status`` of that event: the ARQ is ``Bound``.
EVENT_COMPLETED = 'completed'
#: ``status`` of that event: the binding failed.
EVENT_FAILED = 'failed'
EVENT_STATUSES = (EVENT_COMPLETED, EVENT_FAILED)

#: ``(from, to) -> event status`` (None: no event).  See the module text.
TRANSITIONS = {
    (INITIAL, BIND_STARTED): None,
    (UNBOUND, BIND_STARTED): None,
    (BIND_STARTED, BOUND): EVENT_COMPLETED,
    (BIND_STARTED, BIND_FAILED): EVENT_FAILED,
    (BOUND, BIND_FAILED): EVENT_FAILED,
    (BIND_STARTED, UNBOUND): None,
    (BOUND, UNBOUND): None,
    (BIND_FAILED, UNBOUND): None,
}

#: States a bind request may start from.
BINDABLE_STATES = tuple(s for s in STATES
                        if (s, BIND_STARTED) in TRANSITIONS)
#: States an unbind moves out of (from the others it changes nothing).
UNBINDABLE_STATES = tuple(s for s in STATES if (s, UNBOUND) in TRANSITIONS)
#: States in which the binding has ended, as Nova counts them
#: (``nova/accelerator/cyborg.py``, Nova 34: Bound, BindFailed, Deleting).
RESOLVED_STATES = (BOUND, BIND_FAILED, DELETING)
#: The only state in which an ARQ holds an attach handle.
HANDLE_STATES = (BOUND,)
#: States in which an ARQ carries a binding (``hostname``,
#: ``device_rp_uuid``, ``instance_uuid``).
BINDING_STATES = (BIND_STARTED, BOUND, BIND_FAILED)
#: States that must never hold an attach handle (the audit frees one
#: that does); BindStarted, UnbindFailed and Deleting are on their way.
HANDLE_LESS_STATES = (INITIAL, UNBOUND, BIND_FAILED)
#: States without any binding (never bound, or unbound): the ARQs a
#: project member may delete (the API's ``accelerator:arq:delete``).
UNBOUND_STATES = (INITIAL, UNBOUND)
#: States no transition of accel_backend enters (Cyborg's, see above).
NEVER_ENTERED = tuple(s for s in STATES
                      if s != INITIAL and
                      not any(t == s for _, t in TRANSITIONS))


class InvalidTransition(ValueError):
    """A state change that ``TRANSITIONS`` does not allow.

    :ivar source: the state the ARQ is in (str).
    :ivar target: the state asked for (str).
    :ivar allowed: the states reachable from ``source`` (tuple of str).
    """

    def __init__(self, source, target):
        self.source = source
        self.target = target
        self.allowed = tuple(t for s, t in TRANSITIONS if s == source)
        super().__init__(
            'ARQ state %s cannot change to %s (allowed from %s: %s)' % (
                source, target, source,
                ', '.join(self.allowed) or 'none'))


def check(source, target):
    """Validate one transition.

    :param source: current state (str, one of ``STATES``).
    :param target: wanted state (str).
    :returns: the status of the ``accelerator-request-bound`` event the
        transition emits (``EVENT_COMPLETED``/``EVENT_FAILED``) or None.
    :raises InvalidTransition: ``(source, target)`` is not in
        ``TRANSITIONS`` (staying in the same state included).
    """
    try:
        return TRANSITIONS[(source, target)]
    except KeyError:
        raise InvalidTransition(source, target) from None


def path(target, source=INITIAL):
    """The transitions that lead from ``source`` to ``target``, shortest
    first found, for a record that arrives in ``target`` from elsewhere
    (``accel-backend-manage import-cyborg`` walks a new ARQ along it, so
    that the imported state is one the table can reach).

    :param target: a state of ``STATES``.
    :param source: the starting state (``INITIAL``: a new ARQ).
    :returns: list of states after ``source``, ending with ``target``
        (empty when they are equal).
    :raises InvalidTransition: ``TRANSITIONS`` never leads there (e.g.
        ``Deleting``, which accel_backend never enters).
    """
    paths = {source: []}
    todo = [source]
    while todo:
        state = todo.pop(0)
        if state == target:
            return paths[state]
        for (s, t) in TRANSITIONS:
            if s == state and t not in paths:
                paths[t] = paths[state] + [t]
                todo.append(t)
    raise InvalidTransition(source, target)
