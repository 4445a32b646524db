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

"""Running a long-lived command until a signal stops it: oslo.service.

``accel-backend`` and ``accel-backend-api`` (the API served by cheroot)
and ``accel-backend-agent`` (no HTTP server) run through ``run``: one
``Command`` launched by oslo.service (its threading backend, which
importing ``accel_backend.cmd`` selects) in the main process
(``oslo_service.service.launch(..., no_fork=True)``).  Signals, as
oslo.service 4.8.0 handles them for such a service:

* SIGTERM: ``Command.stop`` and exit status 0; a second SIGTERM during
  the stop is ignored; a stop that takes more than ``[DEFAULT]
  graceful_shutdown_timeout`` seconds (an oslo.service option, default 60,
  0 = wait forever) ends the process with status 1.
* SIGINT: exit status 1 at once, nothing stopped (oslo.service's fast
  exit, as in every oslo.service service; half-done work is resumed at the
  next start as after a crash).
* SIGHUP: oslo.service 4.8.0's threading backend does not reload a
  service in the main process (its handler raises ``SignalExit``; the
  ``no_fork`` restart is a TODO there).  ``run`` catches it, reads the
  configuration files again (``ConfigOpts.mutate_config_files``: options
  declared ``mutable``, oslo.log's ``debug`` among them, take their new
  values; the others keep theirs, with a warning from oslo.config) and
  launches the same, still running, command again, so that oslo.service's
  signal handlers are installed anew.  The process goes on: a logrotate
  ``kill -HUP`` does not stop it, nor does a second one during the
  reload (it is held, and the files are read once more).  Log files need
  no reopening: oslo.log
  writes them through ``logging.handlers.WatchedFileHandler``, which
  reopens a file that was moved away at its next record.

Why ``no_fork`` and not oslo.service's default for one worker (a
cotyledon ``ServiceManager`` parent running the service in a forked
child), observed with oslo.service 4.8.0 and cotyledon 2.2.0: the service
then lives in a second process, and a SIGKILL of the parent, the process
a supervisor or a test knows, makes the child run a graceful stop
(cotyledon: "Parent process has died unexpectedly") rather than die, so a
crash is no longer one (the agent's crash tests kill it to leave
``BindStarted`` work behind); and the database engine and messaging
transport, built before the fork so that a bad configuration is refused
at once, would be used by another process than the one that made them.
"""

import signal
import sys
import threading

from oslo_db import exception as db_exc
from oslo_log import log as logging
from oslo_service import service

from accel_backend.conductor import store as store_mod
from accel_backend import conf as conf_mod
from accel_backend import exception
from accel_backend import service as service_mod

LOG = logging.getLogger(__name__)


class Command(service.ServiceBase):
    """A command's ``accel_backend.service.Service`` (and HTTP server) as
    an oslo.service ``ServiceBase``.

    :param svc: the command's ``accel_backend.service.Service`` (anything
        with ``start()`` and ``stop()``).
    :param started_message: logged at INFO once everything started (the
        line operators and the functional tests wait for).
    :param server: None, or a cheroot ``wsgi.Server`` (anything with
        ``prepare()``, ``serve()`` and ``stop()``): bound after
        ``svc.start()`` (``prepare`` raises ``OSError`` when the port
        cannot be bound) and served in a thread of its own; the command
        ends when ``serve`` returns.  Without one the command runs until
        stopped.

    ``failed`` is True once ``serve`` raised.
    """

    def __init__(self, svc, started_message, server=None):
        super().__init__()
        self.svc = svc
        self.started_message = started_message
        self.server = server
        self.failed = False
        # svc.start() returned / stop() began.
        self._svc_started = self._stopping = False
        self._ended = threading.Event()

    def start(self):
        """Start ``svc``, then bind and serve ``server`` (if any); does
        nothing when already started (``run`` launches the command again
        after a SIGHUP).

        :raises: whatever ``svc.start()`` or ``server.prepare()`` raise.
        """
        if self._svc_started:
            return
        self.svc.start()
        self._svc_started = True
        if self.server is not None:
            self.server.prepare()
            # A daemon: a main thread that leaves on an exception must not
            # wait for it.
            threading.Thread(target=self._serve, name='accel-serve',
                             daemon=True).start()
        LOG.info('%s', self.started_message)

    def _serve(self):
        try:
            self.server.serve()
        except Exception:
            LOG.exception('The HTTP server failed')
            self.failed = True
        finally:
            self._ended.set()

    def wait(self):
        """Block until ``stop`` was called or the server ended."""
        self._ended.wait()

    def stop(self, graceful=False):
        """Stop serving, then ``svc``; later calls do nothing.

        Called from the signal handler, on the main thread, possibly while
        ``svc.start()`` is still running there (the agent retrying to
        reach its broker): ``svc`` is then left as it is, the process
        exits right after.  ``graceful`` is oslo.service's argument,
        unused (every stop lets the requests in progress end).
        """
        if self._stopping:
            return
        self._stopping = True
        if self.server is not None:
            self.server.stop()
        if self._svc_started:
            self.svc.stop()
        else:
            LOG.info('Stopped before the start completed')
        self._ended.set()

    def reset(self):
        """Nothing to reset (oslo.service calls it on restart only)."""


def run(conf, command):
    """Run ``command`` (a ``Command``) in this process until a signal or
    the end of its server stops it.

    :param conf: the command's ``oslo_config.cfg.ConfigOpts`` (oslo.service
        registers its ``[DEFAULT] graceful_shutdown_timeout`` on it).
    :returns: the exit status (int): 0, or 1 when the server failed.
        SIGTERM and SIGINT end the process from the signal handler (see
        the module docstring) and never return here; SIGHUP reloads the
        mutable options and the command goes on.
    :raises: what ``command.start()`` raises (after stopping what started).
    """
    pending = []

    def hup_during_reload(signo, frame):
        # oslo.service put SIGHUP back to its default, which ends the
        # process, before raising SignalExit: a second logrotate kill -HUP
        # before the relaunch installs its handlers must not.
        pending.append(signo)

    try:
        while True:
            try:
                service.launch(conf, command, no_fork=True).wait()
                break
            except service.SignalExit as e:
                if e.signo != signal.SIGHUP:
                    LOG.info('Signal %d: stopping', e.signo)
                    break
                signal.signal(signal.SIGHUP, hup_during_reload)
            while True:
                del pending[:]
                conf.mutate_config_files()
                LOG.info('SIGHUP: configuration files read again, mutable '
                         'options updated; going on')
                if not pending:
                    break
    finally:
        command.stop()
    return 1 if command.failed else 0


def main(argv, role, program):
    """What ``accel-backend-agent`` and ``accel-backend-conductor`` do:
    read the configuration (``argv``, default the command line), set up
    oslo.log, build the ``accel_backend.service.Service`` of ``role`` (or
    refuse with one line) and ``run`` it.

    :param program: the program's name (logs, the started line).
    :returns: the exit status (int): 1 when the service refused to start.
    """
    conf = conf_mod.new_conf(sys.argv[1:] if argv is None else argv)
    logging.setup(conf, program)
    svc = build_or_refuse(conf, role, program)
    if svc is None:
        return 1
    return run(conf, Command(svc, '%s of host %s started' % (program,
                                                             conf.host)))


def build_or_refuse(conf, role, name, transport=None):
    """``accel_backend.service.Service(conf, role=role)``, or None after
    one clear line (logged and on standard error) when the configuration
    is unusable (Nova's ``[pci] device_spec`` cannot be read, an unknown
    discovery driver option...): the service refuses to start rather
    than guess.

    :param name: the program's name, for the message.
    :param transport: as ``Service``'s (tests).
    """
    try:
        return service_mod.Service(conf, role=role, transport=transport)
    except (exception.AccelBackendError, db_exc.DBConnectionError,
            ValueError) as e:
        # The log, and standard error: with [DEFAULT] log_file the log is
        # a file, and a supervisor (journald) keeps only standard error.
        LOG.error('%s refuses to start: %s', name, e)
        print('%s refuses to start: %s' % (name, e), file=sys.stderr)
        if role in (service_mod.EMBEDDED, service_mod.AGENT):
            # Best effort, and bounded: a broker or database that does
            # not answer must not keep a refusing process alive.
            recorder = threading.Thread(
                target=store_mod.record_refusal,
                args=(conf, e, role == service_mod.AGENT, transport),
                name='accel-refusal', daemon=True)
            recorder.start()
            recorder.join(REFUSAL_RECORD_TIMEOUT)
        return None


#: Seconds a refusing service tries to record why (``build_or_refuse``).
REFUSAL_RECORD_TIMEOUT = 15
