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

"""When a boot passed each of Nova's steps, for ``benchmarks.nova_boot``.

Five Nova 34 methods are wrapped, in the benchmark process only (never
the product), through ``fixtures.MonkeyPatch``: the scheduler's
``SchedulerManager.select_destinations``, the conductor's
``ComputeTaskManager._create_and_bind_arq_for_instance`` (ARQ create and
bind PATCH, ``nova/conductor/manager.py``), and the compute manager's
``build_and_run_instance`` (the conductor's cast arriving),
``_get_bound_arq_resources`` (the wait for ``accelerator-request-bound``
and the ARQ read) and ``_build_and_run_instance`` (whose return follows
the save of ``ACTIVE`` and ``instance.create.end``,
``nova/compute/manager.py``).  The marks are ``time.perf_counter``
seconds, the boot's ``POST /servers`` being marked by the caller.
"""

import functools
import threading
import time

import tests  # noqa: F401  (chooses Nova's threading mode first)

import fixtures
from nova.compute import manager as compute_manager
from nova.conductor import manager as conductor_manager
from nova.scheduler.client import report as report_client
from nova.scheduler import manager as scheduler_manager

from benchmarks import nova_boot_report

PHASES = nova_boot_report.PHASES
#: Marks in the order a boot passes them (the phases are their gaps).
ORDER = ('post', 'sched_start', 'sched_end', 'arq_start', 'arq_end',
         'compute_start', 'wait_start', 'wait_end', 'active')


def phases(marks):
    """The phases of one boot from its marks (``perf_counter`` seconds).

    :param marks: ``{mark: seconds}`` with every key of ``ORDER`` but
        ``wait_start``/``wait_end`` (absent for a boot without ARQs).
    :returns: ``{phase: seconds}`` for ``PHASES``, whose sum is
        ``marks['active'] - marks['post']``.
    :raises KeyError: a mark is missing.
    """
    wait = marks.get('wait_end', 0.0) - marks.get('wait_start', 0.0)
    return {'api': marks['sched_start'] - marks['post'],
            'scheduling': marks['sched_end'] - marks['sched_start'],
            'arq_create_bind': marks['arq_end'] - marks['arq_start'],
            'conductor': (marks['arq_start'] - marks['sched_end'] +
                          marks['compute_start'] - marks['arq_end']),
            'event_wait': wait,
            'compute': marks['active'] - marks['compute_start'] - wait}


class Marks:
    """Per instance, when it passed each of Nova's steps, from wrappers
    of five Nova methods (benchmark process only, never the product).

    :ivar at: ``{instance_uuid: {mark: perf_counter seconds}}``.
    :ivar spent: ``{instance_uuid: {'allocation_candidates': s, 'claim':
        s}}``, the seconds of the scheduler's ``GET
        /allocation_candidates`` and allocation claims (Nova's
        ``SchedulerReportClient``) within ``select_destinations``.
    """

    def __init__(self):
        self.at = {}
        self.spent = {}
        self._local = threading.local()
        self.failed = {}
        self._lock = threading.Lock()
        self._done = {}

    def mark(self, uuid, name):
        self.at.setdefault(uuid, {})[name] = time.perf_counter()

    def done(self, uuid):
        with self._lock:
            return self._done.setdefault(uuid, threading.Event())

    def patches(self):
        """The ``fixtures.MonkeyPatch`` list that installs the wrappers."""
        def instance_uuid(args, kwargs):
            return (kwargs.get('instance') or args[1]).uuid

        def sched_uuid(args, kwargs):
            return (kwargs.get('instance_uuids') or
                    [kwargs['spec_obj'].instance_uuid])[0]

        def claim_uuid(args, kwargs):
            return kwargs.get('consumer_uuid') or args[1]

        out = []
        for name, key in (('get_allocation_candidates',
                           lambda a, k: getattr(self._local, 'uuid', None)),
                          ('claim_resources', claim_uuid)):
            cls = report_client.SchedulerReportClient
            out.append(fixtures.MonkeyPatch(
                '%s.%s.%s' % (cls.__module__, cls.__name__, name),
                self._wrap_spent(getattr(cls, name), key, name)))
        for cls, name, key, start, end in (
                (scheduler_manager.SchedulerManager, 'select_destinations',
                 sched_uuid, 'sched_start', 'sched_end'),
                (conductor_manager.ComputeTaskManager,
                 '_create_and_bind_arq_for_instance', instance_uuid,
                 'arq_start', 'arq_end'),
                (compute_manager.ComputeManager, 'build_and_run_instance',
                 instance_uuid, 'compute_start', None),
                (compute_manager.ComputeManager, '_get_bound_arq_resources',
                 instance_uuid, 'wait_start', 'wait_end'),
                (compute_manager.ComputeManager, '_build_and_run_instance',
                 instance_uuid, None, 'active')):
            out.append(fixtures.MonkeyPatch(
                '%s.%s.%s' % (cls.__module__, cls.__name__, name),
                self._wrap(getattr(cls, name), key, start, end)))
        return out

    def _wrap(self, real, key, start, end):
        @functools.wraps(real)
        def wrapper(obj, *args, **kwargs):
            uuid = key(args, kwargs)
            if start:
                self.mark(uuid, start)
            if start == 'sched_start':   # for the report client's calls
                self._local.uuid = uuid
            try:
                return real(obj, *args, **kwargs)
            except BaseException as e:
                if end == 'active':
                    self.failed[uuid] = repr(e)
                raise
            finally:
                if end:
                    self.mark(uuid, end)
                if end == 'active':
                    self.done(uuid).set()
        return wrapper

    def _wrap_spent(self, real, key, name):
        label = {'claim_resources': 'claim'}.get(name,
                                                 'allocation_candidates')

        @functools.wraps(real)
        def wrapper(obj, *args, **kwargs):
            uuid = key(args, kwargs)
            t0 = time.perf_counter()
            try:
                return real(obj, *args, **kwargs)
            finally:
                spent = self.spent.setdefault(uuid, {})
                spent[label] = spent.get(label, 0.0) + (
                    time.perf_counter() - t0)
        return wrapper
