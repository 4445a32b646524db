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

"""The audit's repairs of attach handles (``accel_backend.conductor.audit``).

Each finds the handles of one host whose state drifted from the ARQs that
hold them, or whose cleaning is stuck, and moves them with a transition of
the state table (``accel_common.handle_states``): a ``release``, a
``reclaim`` or ``cleaning_hung``.  Every repair is re-checked under the
row lock (a refresh ``FOR UPDATE`` or a conditional UPDATE), so it changes
nothing the binder, the API or the cleaner changed first.  They run in the
caller's transaction; the caller holds SQLite's write lock
(``accel_backend.db.api.write_lock``) for the first three.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from accel_common import arq_states
from accel_common import handle_states

# The audit's repairs are logged as the audit's.
LOG = logging.getLogger('accel_backend.conductor.audit')


def last_change(model):
    """SQL expression: when a row last changed (``updated_at``, else
    ``created_at``) of ``model`` (a model class with both columns)."""
    return sa.func.coalesce(model.updated_at, model.created_at)


def host_handles(hostname):
    """SELECT of the ``models.AttachHandle`` of a host's devices."""
    return (sa.select(models.AttachHandle)
            .join(models.Deployable).join(models.Device)
            .where(models.Device.hostname == hostname))


def release_unheld(session, hostname):
    """Release the handles in use that no ARQ holds (``release``).

    :returns: list of the released handles' UUIDs.
    """
    held = sa.select(models.ARQ.id).where(
        models.ARQ.attach_handle_id == models.AttachHandle.id)
    done = []
    for handle in session.scalars(host_handles(hostname).where(
            device_obj.in_use_clause(), ~held.exists())).all():
        # Conditional: a binder claiming it commits the claim and the ARQ
        # together, so this sees both or neither.
        session.refresh(handle, with_for_update=True)
        if not device_obj.handle_in_use(handle) or session.scalar(
                held.where(models.AttachHandle.id == handle.id)
                .exists().select()):
            continue
        LOG.warning('Audit: attach handle %s %s is in use but no ARQ '
                    'holds it; releasing it', handle.uuid,
                    handle.attach_info)
        device_obj.release_handle(session, handle)
        done.append(handle.uuid)
    return done


def release_from_handle_less(session, hostname):
    """Release the handles held by ARQs in a state that holds none
    (``arq_states.HANDLE_LESS_STATES``).

    :returns: list of the released handles' UUIDs.
    """
    done = []
    for arq in session.scalars(
            sa.select(models.ARQ).where(
                models.ARQ.hostname.is_(None) |
                (models.ARQ.hostname == hostname),
                models.ARQ.attach_handle_id.isnot(None),
                models.ARQ.state.in_(arq_states.HANDLE_LESS_STATES))).all():
        arq = arq_obj.get(session, arq.uuid, for_update=True)
        if (arq.state not in arq_states.HANDLE_LESS_STATES or
                arq.attach_handle is None):
            continue
        LOG.warning('Audit: ARQ %s is %s but holds attach handle %s; '
                    'releasing it', arq.uuid, arq.state,
                    arq.attach_handle.uuid)
        done.append(arq.attach_handle.uuid)
        arq_obj.release(arq)
    return done


def reclaim(session, hostname):
    """Mark in use again the handles of ``Bound`` ARQs that are not
    (``reclaim``: another ARQ could claim them, or the cleaner reset them
    under a guest).

    :returns: list of the reclaimed handles' UUIDs.
    """
    done = []
    for arq in session.scalars(
            sa.select(models.ARQ)
            .join(models.AttachHandle,
                  models.ARQ.attach_handle_id == models.AttachHandle.id)
            .where(models.ARQ.hostname == hostname,
                   models.ARQ.state == arq_states.BOUND,
                   ~device_obj.in_use_clause())).all():
        result = session.execute(
            sa.update(models.AttachHandle)
            .where(models.AttachHandle.id == arq.attach_handle_id,
                   device_obj.state_clause(models.AttachHandle.state,
                                           handle_states.BOUND,
                                           handle_states.RECLAIM))
            .values(device_obj.update_values(handle_states.BOUND,
                                             handle_states.RECLAIM))
            .execution_options(synchronize_session=False))
        if result.rowcount == 1:
            LOG.warning('Audit: attach handle %s of Bound ARQ %s was not '
                        'marked in use; it is again',
                        arq.attach_handle.uuid, arq.uuid)
            done.append(arq.attach_handle.uuid)
    return done


def stale_cleanings(session, hostname, cutoff):
    """The handles of a host ``dirty`` or ``cleaning`` since before
    ``cutoff`` (naive UTC ``datetime``).

    :returns: ``{handle uuid: state}``.
    """
    return {h.uuid: h.state for h in session.scalars(
        host_handles(hostname).where(
            models.AttachHandle.state.in_(handle_states.TO_CLEAN_STATES),
            last_change(models.AttachHandle) < cutoff))}


def fail_hung_cleaning(session, handle_uuid, cutoff, reason):
    """Mark ``clean_failed`` (``cleaning_hung``) a handle still
    ``cleaning`` since before ``cutoff`` (naive UTC ``datetime``).

    :param reason: the ``state_reason`` to show (str).
    :returns: True when this call marked it.
    """
    result = session.execute(
        sa.update(models.AttachHandle)
        .where(models.AttachHandle.uuid == handle_uuid,
               device_obj.state_clause(models.AttachHandle.state,
                                       handle_states.CLEAN_FAILED,
                                       handle_states.CLEANING_HUNG),
               last_change(models.AttachHandle) < cutoff)
        .values(device_obj.update_values(handle_states.CLEAN_FAILED,
                                         handle_states.CLEANING_HUNG,
                                         reason))
        .execution_options(synchronize_session=False))
    return result.rowcount == 1
