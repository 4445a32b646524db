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

"""The cleaning worker.

For each ``dirty`` handle of its host the cleaner

0. makes Placement reserve the unit (``reserved_units``) as soon as it
   finds the handle ``dirty``, before the handle waits for a worker,
1. commits ``cleaning`` (a conditional update: one cleaner per handle),
2. makes Placement reserve the unit again (a no-op unless it changed),
3. runs the deployable's step: ``flr`` writes ``1`` to the function's
   ``reset`` under ``[discovery] sysfs_root``, ``command`` runs
   ``[cleaning] command`` with the PCI address, ``none`` does nothing,
4. commits ``available``, or ``clean_failed`` with the reason (shown as
   the device's status from microversion 2.3; enabling the device again
   retries),
5. updates Placement's reserved units again.

Every commit goes through a ``conductor.store.HostStore`` of the host:
the database itself in the embedded service, the conductor's RPC API in an
``accel-backend-agent`` (``conductor.rpcapi.RemoteHostStore``), which holds
no database credentials.  Releases wake it at once (the commit of a
release on its store's engine, ``HostStore.watch_releases``, or the
API's ``clean`` cast to an agent); it also looks every ``[cleaning]
poll_interval`` seconds, and ``start()`` resumes ``dirty`` and
``cleaning`` handles left by a previous process.  Placement failures are
logged: the periodic report derives ``reserved`` from the same states and
repairs it.
"""

import concurrent.futures
import shlex
import subprocess
import threading

from oslo_log import log as logging

from accel_backend.agent.cleaning import mdev_removal
from accel_backend.agent.discovery import nvidia_vfio
from accel_backend.agent.discovery import sysfs
from accel_backend.common import hgx
from accel_backend import metrics
from accel_backend import utils
from accel_common import pci

LOG = logging.getLogger(__name__)


class CleaningError(Exception):
    """A cleaning method failed on a device (``run_method``); the message
    says why.  The handle is then marked failed, out of service."""


def run_method(method, address, sysfs_root, command=None, timeout=300,
               handle_info=None, handle_uuid=None):
    """Run one cleaning step on the PCI function ``address``.

    :param handle_info: the attach handle's ``attach_info`` (dict); the
        ``vgpu`` method cleans the VF it names, with its
        ``vgpu_profile``; for a unit of several slots (an HGX board,
        ``common.hgx.ADDRESSES_KEY``) ``flr`` resets each of its
        functions the kernel can reset and ``command`` runs once per
        function.  ``flr`` of a function for which the kernel offers no
        reset method at that time (``sysfs.reset_methods``) is skipped
        with a warning, as discovery would make its cleaning ``none``.
    :param handle_uuid: the attach handle's UUID, the mediated device
        the ``mdev`` method destroys (``cleaning.mdev_removal``).
    :returns: None on success.
    :raises CleaningError: with the reason.
    """
    if method in (None, 'none'):
        return
    if method == 'vgpu':
        return _recreate_vgpu(sysfs_root, handle_info)
    if method == 'mdev':
        return _remove_mdev(handle_uuid, sysfs_root, timeout)
    unit = hgx.unit_addresses(handle_info)
    if unit and method in ('flr', 'command'):
        for member in unit:     # every function checked before any act
            if not pci.ADDRESS_RE.match(member):
                raise CleaningError('the unit of %s names %r, not a PCI '
                                    'address' % (address, member))
            if not sysfs.exists(sysfs_root, member):
                raise CleaningError('function %s of the unit of %s is gone '
                                    'from sysfs' % (member, address))
        for member in unit:
            if method == 'command' or sysfs.reset_methods(sysfs_root,
                                                          member):
                run_method(method, member, sysfs_root, command=command,
                           timeout=timeout)
        return
    if method == 'flr':
        if not sysfs.exists(sysfs_root, address):
            raise CleaningError('device %s is gone from sysfs' % address)
        if not sysfs.reset_methods(sysfs_root, address):
            # As discovery decides (``PCIDriverBase.cleaning_of``), read
            # again: an operator may have disabled every method since
            # (``echo > reset_method``), and writing ``reset`` would
            # then fail after every tenant and lock the device out.
            LOG.warning('The kernel offers no reset for %s any more (its '
                        'reset_method is empty): it is released without '
                        'a reset (cleaning none)', address)
            return
        try:
            sysfs.reset_function(sysfs_root, address)
        except OSError as e:
            raise CleaningError('function level reset of %s failed: %s' %
                                (address, e))
        return
    if method == 'command':
        if not command:
            raise CleaningError('cleaning method "command" but no '
                                '[cleaning] command is set')
        args = [a.replace('{address}', address)
                for a in shlex.split(command)]
        if '{address}' not in command:
            args.append(address)
        try:
            proc = subprocess.run(args, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise CleaningError('%s did not finish within %d s' %
                                (args[0], timeout))
        except OSError as e:
            raise CleaningError('cannot run %s: %s' % (args[0], e))
        if proc.returncode != 0:
            out = (proc.stderr or proc.stdout or '').strip()[-300:]
            raise CleaningError('%s exited with status %d%s' % (
                args[0], proc.returncode, ': ' + out if out else ''))
        return
    raise CleaningError('unknown cleaning method %r' % method)


def _remove_mdev(mdev_uuid, sysfs_root, timeout):
    try:
        mdev_removal.remove(mdev_uuid, sysfs_root, timeout=timeout)
    except mdev_removal.MdevRemovalError as e:
        raise CleaningError(str(e))


def _recreate_vgpu(sysfs_root, handle_info):
    """The ``vgpu`` method: destroy the VF's vGPU and create a fresh one
    of its profile (``agent.discovery.nvidia_vfio.recreate``)."""
    try:
        vf = str(pci.from_handle_info(handle_info))
        profile = handle_info['vgpu_profile']
    except (pci.InvalidAddress, KeyError, TypeError) as e:
        raise CleaningError('the vgpu method needs a PCI attach handle '
                            'with a vgpu_profile: %s' % e)
    try:
        nvidia_vfio.recreate(sysfs_root, vf, profile)
    except nvidia_vfio.VGPUTypeError as e:
        raise CleaningError(str(e))


class Cleaner:
    """Cleans the released devices of one host.

    :param store: ``accel_backend.conductor.store.HostStore`` of the host,
        or the agent's ``conductor.rpcapi.RemoteHostStore``.
    :param reporter: ``agent.placement.report.Reporter`` whose
        ``reserved_for`` reads ``store`` (``sync_reserved``), or None.
    :param conf: accel_backend ``ConfigOpts`` (``[cleaning]``,
        ``[discovery] sysfs_root``).
    :param hostname: the host whose handles it cleans.
    :param workers: cleanings run at once (int, ``[cleaning] workers``).
    :param notifications: ``accel_backend.notifications.Notifications``
        told about failed cleanings, or None.
    """

    def __init__(self, store, reporter, conf, hostname, workers=4,
                 notifications=None):
        self.store = store
        self.notifications = notifications
        self.reporter = reporter
        self.hostname = hostname
        self.sysfs_root = conf.discovery.sysfs_root
        self.command = conf.cleaning.command
        self.timeout = conf.cleaning.timeout
        self.poll_interval = conf.cleaning.poll_interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='accel-cleaner')
        self._busy = set()
        # Queued, their ``start_cleaning`` not committed yet: the row's
        # ``updated_at`` does not say when their step began (the audit).
        self._waiting = set()
        # Guards _busy and _waiting; notified when handles leave _busy
        # (wait_idle).
        self._lock = threading.Condition()
        if store.engine is not None:
            # The embedded service: its releases' commits wake it.
            store.watch_releases(self.kick)

    # -- control ------------------------------------------------------

    def kick(self):
        """Look for dirty handles now."""
        self._wake.set()

    def start(self):
        """Resume what a previous process left (``dirty``, ``cleaning``)
        and watch for releases."""
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='accel-cleaner')
        self._thread.start()

    def stop(self):
        """Stop the poll and wait for it (10 seconds at most) and for the
        cleanings in progress (no limit: a method has its own timeout);
        this cleaner is no longer woken by commits."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=True)
        if self.store.engine is not None:
            self.store.unwatch_releases(self.kick)

    def _loop(self):
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.submit_pending()
            except Exception as e:  # the database may be busy: retry
                LOG.warning('Looking for devices to clean failed: %s', e)
            self._wake.wait(self.poll_interval)

    def submit_pending(self):
        """Queue every dirty/cleaning handle not queued yet.

        The audit (``accel_backend.conductor.audit``) takes a ``cleaning``
        handle
        this returns for one waiting for a worker, not one whose step
        hangs: its ``updated_at`` may be that of a process that crashed
        long ago, until ``clean_one`` commits ``cleaning`` again.

        :returns: the UUIDs queued now, then those queued earlier whose
            cleaning has not started yet (list).
        """
        todo = dict(self.store.handles_to_clean())
        with self._lock:
            new = [u for u in todo if u not in self._busy]
            self._busy.update(new)
            self._waiting.update(new)
            earlier = sorted(self._waiting.intersection(todo) - set(new))
        rp_uuids = {todo[u] for u in new}
        # Out of Placement's offers before they wait for a worker: a
        # dirty device must not be allocated to the next tenant.
        for rp_uuid in sorted(filter(None, rp_uuids)):
            self._update_placement(rp_uuid)
        for i, handle_uuid in enumerate(new):
            try:
                self._pool.submit(self._clean_task, handle_uuid)
            except RuntimeError:  # shut down
                with self._lock:
                    self._busy.difference_update(new[i:])
                    self._waiting.difference_update(new[i:])
                    self._lock.notify_all()
                return new[:i] + earlier
        return new + earlier

    def _clean_task(self, handle_uuid):
        try:
            self.clean_one(handle_uuid)
        except Exception:
            LOG.exception('Cleaning of attach handle %s failed', handle_uuid)
        finally:
            with self._lock:
                self._busy.discard(handle_uuid)
                self._waiting.discard(handle_uuid)
                self._lock.notify_all()

    def clean_pending(self):
        """Clean every dirty/cleaning handle of the host now, in this
        thread (tests, tools).

        :returns: ``{handle_uuid: new state}``.
        """
        todo = [u for u, _rp in self.store.handles_to_clean()]
        return {u: self.clean_one(u) for u in todo}

    def wait_idle(self, timeout=10.0):
        """Block until no cleaning is queued or running (tests).

        :returns: True when idle.
        """
        return utils.wait_until_empty(self._lock, self._busy, timeout)

    # -- one handle ----------------------------------------------------

    def clean_one(self, handle_uuid):
        """Clean one handle; every state is committed before acting.

        :returns: the handle's new state (``available``,
            ``clean_failed``), or None when it was not this cleaner's to
            clean (not dirty/cleaning any more, or gone).
        """
        try:
            started = self.store.start_cleaning(handle_uuid)
        finally:
            # Only once ``cleaning`` is committed (its updated_at now) or
            # refused: until then the audit must not judge it hung.
            with self._lock:
                self._waiting.discard(handle_uuid)
        if started is None:
            return None
        method, address = started['method'], started['address']
        rp_uuid, handle_info = started['rp_uuid'], started['handle_info']
        about = started['about']
        self._update_placement(rp_uuid)
        LOG.info('Cleaning %s (attach handle %s) with %s', address,
                 handle_uuid, method)
        error = None
        with metrics.timed(metrics.CLEANING_SECONDS, host=self.hostname,
                           method=method, outcome='ok') as labels:
            try:
                run_method(method, address, self.sysfs_root,
                           command=self.command, timeout=self.timeout,
                           handle_info=handle_info, handle_uuid=handle_uuid)
            except CleaningError as e:
                error = str(e)
                labels['outcome'] = 'failed'
                LOG.error('Cleaning of device %s failed; it stays out of '
                          'service: %s', address, error)
        state = self.store.finish_cleaning(handle_uuid, error)
        if state is not None:
            self._update_placement(rp_uuid)
        if error is not None and self.notifications is not None:
            self.notifications.cleaning_error(dict(about, error=error))
        if error is None:
            LOG.info('Device %s is clean', address)
        return state

    def _update_placement(self, rp_uuid):
        if self.reporter is None or not rp_uuid:
            return
        try:
            # Read under the reporter's lock (its ``reserved_for`` is this
            # host's store): a report that read the states before this
            # change cannot write after it.
            self.reporter.reserved.sync_reserved(rp_uuid)
        except Exception as e:
            LOG.warning('Could not update reserved units of resource '
                        'provider %s (the next report will): %s', rp_uuid,
                        e)
