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

"""The attach handle state machine: one table.

An attach handle is what the virt driver attaches (a PCI address, an mdev
UUID).  Between tenants it goes through a cleaning step (Triton RFD 114's
"dirty until cleaned"); Cyborg (openstack-cyborg 17.0.0,
``cyborg/objects/attach_handle.py``) has only the ``in_use`` flag, which
accel_backend keeps as a column for Cyborg's schema and for rows written
by older releases, derived from the state (``IN_USE_STATES``)::

    (new)        --discover-->         available
    available    --claim, import-->    bound
    any not bound --reclaim-->         bound      (the audit: a Bound ARQ
                                                   holds it)
    bound        --release-->          dirty | available (no cleaning)
    dirty        --start_cleaning-->   cleaning
    cleaning     --start_cleaning-->   cleaning   (a restarted cleaner)
    cleaning     --cleaned-->          available
    cleaning     --cleaning_failed,
                   cleaning_hung-->    clean_failed
    clean_failed --retry-->            dirty      (an operator enabled
                                                   the device)
    any not quarantined
                 --quarantine-->       quarantined (released while a
                                                   ``NoExecute`` taint
                                                   covers it: a failed
                                                   device, never cleaned
                                                   and sold again as is)
    quarantined  --lift-->             dirty      (its last ``NoExecute``
                                                   taint was removed)

An ARQ letting go of a handle that is not ``bound`` (a row changed by
hand, before the audit reclaimed it) releases it all the same: any state
goes ``dirty`` (or ``available``) on ``release``, so that nothing a guest
may have used is offered again uncleaned.

Deleting a handle (its device vanished and it is not in use, host sync)
removes the row from any state but ``bound``; it is not a transition.  A
device's status (``enabled``, ``maintaining``, ``missing``) and health
(``healthy``, ``unhealthy``) are not handle states: they decide whether
an ``available`` handle may be claimed (``accel_backend.conductor.claim``)
and leave the handle's state alone.

Every writer of a handle's ``state`` or ``in_use`` goes through
``accel_backend.objects.device`` (``transition``, ``new_handle``,
``update_values``), which checks the pair and the trigger here with
:func:`check` and writes ``in_use`` from :func:`in_use`; a handle is
claimed only by ``accel_backend.conductor.claim``.
``tests/unit/accel_common/test_handle_states.py`` scans the code for any
other writer.
"""

AVAILABLE = 'available'
BOUND = 'bound'
DIRTY = 'dirty'
CLEANING = 'cleaning'
CLEAN_FAILED = 'clean_failed'
QUARANTINED = 'quarantined'
#: Every state of an attach handle.
STATES = (AVAILABLE, BOUND, DIRTY, CLEANING, CLEAN_FAILED, QUARANTINED)
#: The source of ``discover``: no row yet.
NEW = None

#: What makes a handle change state (the triggers of ``TRANSITIONS``).
DISCOVER = 'discover'              # host sync found a new handle
CLAIM = 'claim'                    # the binder claims it for an ARQ
IMPORT = 'import'                  # import-cyborg gives it a Bound ARQ
RECLAIM = 'reclaim'                # the audit: a Bound ARQ holds it
RELEASE = 'release'                # its ARQ let go (unbind, delete)
START_CLEANING = 'start_cleaning'  # the cleaner takes it
CLEANED = 'cleaned'                # the cleaning step succeeded
CLEANING_FAILED = 'cleaning_failed'  # the cleaning step failed
CLEANING_HUNG = 'cleaning_hung'    # the audit: the step hangs
RETRY = 'retry'                    # an operator enabled the device
QUARANTINE = 'quarantine'          # released under a NoExecute taint
LIFT = 'lift'                      # its last NoExecute taint was removed
TRIGGERS = (DISCOVER, CLAIM, IMPORT, RECLAIM, RELEASE, START_CLEANING,
            CLEANED, CLEANING_FAILED, CLEANING_HUNG, RETRY, QUARANTINE,
            LIFT)


def _table():
    table = {
        (NEW, AVAILABLE): (DISCOVER,),
        (AVAILABLE, BOUND): (CLAIM, IMPORT, RECLAIM),
        (DIRTY, CLEANING): (START_CLEANING,),
        (CLEANING, CLEANING): (START_CLEANING,),
        (CLEANING, AVAILABLE): (CLEANED,),
        (CLEANING, CLEAN_FAILED): (CLEANING_FAILED, CLEANING_HUNG),
        (CLEAN_FAILED, DIRTY): (RETRY,),
        (QUARANTINED, DIRTY): (LIFT,),
    }
    for state in STATES:
        if state != BOUND:
            table.setdefault((state, BOUND), (RECLAIM,))
        for target in (DIRTY, AVAILABLE):
            table[(state, target)] = table.get((state, target), ()) + (
                RELEASE,)
        if state != QUARANTINED:
            table[(state, QUARANTINED)] = (QUARANTINE,)
    return table


#: ``(from, to) -> (trigger, ...)``: the only transitions allowed; see
#: the module text.
TRANSITIONS = _table()

#: States in which a handle is in use (held by an ARQ): ``in_use`` is
#: true exactly in these.
IN_USE_STATES = (BOUND,)
#: States a claim takes a handle from.
CLAIMABLE_STATES = tuple(s for s in STATES
                         if CLAIM in TRANSITIONS.get((s, BOUND), ()))
#: States of a released handle not yet clean: reserved in Placement
#: (``accel_backend.objects.deployable.reserved_units``).
OUT_OF_SERVICE_STATES = (DIRTY, CLEANING, CLEAN_FAILED, QUARANTINED)
#: States in which a handle outlives its device's disappearance from the
#: host: held by an ARQ, or quarantined (a failed device that was used:
#: kept, ``missing``, so that it is cleaned before it is offered again
#: if it comes back; ``conductor.host_sync``).
KEPT_STATES = IN_USE_STATES + (QUARANTINED,)
#: States the cleaner has to finish (after a restart too).
TO_CLEAN_STATES = tuple(s for s in STATES if START_CLEANING in
                        TRANSITIONS.get((s, CLEANING), ()))


class InvalidHandleTransition(ValueError):
    """A state change of an attach handle ``TRANSITIONS`` does not allow.

    :ivar source: the handle's state (str, or None for a new handle).
    :ivar target: the state asked for (str).
    :ivar trigger: what asked for it (str, one of ``TRIGGERS``).
    :ivar allowed: the ``(target, trigger)`` pairs allowed from
        ``source`` (tuple).
    """

    def __init__(self, source, target, trigger):
        self.source = source
        self.target = target
        self.trigger = trigger
        self.allowed = tuple((t, trig) for (s, t), trigs in
                             TRANSITIONS.items() if s == source
                             for trig in trigs)
        super().__init__(
            'attach handle state %s cannot change to %s on %s (allowed '
            'from %s: %s)' % (
                source or '(new)', target, trigger, source or '(new)',
                ', '.join('%s on %s' % a for a in self.allowed) or 'none'))


def check(source, target, trigger):
    """Validate one transition of an attach handle.

    :param source: its current state (str of ``STATES``; ``NEW`` for a
        handle not yet written).
    :param target: the wanted state (str).
    :param trigger: what changes it (str of ``TRIGGERS``).
    :raises InvalidHandleTransition: ``trigger`` does not lead from
        ``source`` to ``target`` in ``TRANSITIONS``.
    """
    if trigger not in TRANSITIONS.get((source, target), ()):
        raise InvalidHandleTransition(source, target, trigger)


def sources(target, trigger):
    """The states ``trigger`` moves to ``target``: the condition of a
    conditional UPDATE (the claim, the cleaner, the audit), which the
    database checks on the row it locks.

    :param target: a state of ``STATES``.
    :param trigger: one of ``TRIGGERS``.
    :returns: tuple of states (str), in ``STATES`` order.
    :raises InvalidHandleTransition: ``trigger`` never leads to
        ``target``.
    """
    found = tuple(s for s in STATES
                  if trigger in TRANSITIONS.get((s, target), ()))
    if not found:
        raise InvalidHandleTransition(None, target, trigger)
    return found


def in_use(state):
    """Whether a handle in ``state`` is in use (bool): the one definition
    of the ``in_use`` column, Cyborg's flag."""
    return state in IN_USE_STATES


def kept(state):
    """Whether a handle in ``state`` keeps its vanished device's record
    (bool): ``KEPT_STATES``."""
    return state in KEPT_STATES


def columns(target, reason=None):
    """The columns a transition to ``target`` writes: the state, the
    ``in_use`` flag derived from it, and the reason shown with it.

    :param target: a state of ``STATES``.
    :param reason: why (str, e.g. a cleaning failure), or None.
    :returns: ``{'state': str, 'in_use': bool, 'state_reason': str or
        None}``.
    :raises InvalidHandleTransition: ``target`` is not a state.
    """
    if target not in STATES:
        raise InvalidHandleTransition(None, target, None)
    return {'state': target, 'in_use': in_use(target),
            'state_reason': reason}
