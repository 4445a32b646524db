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

"""Health from fatal PCIe AER errors, with recovery.

Linux counts the fatal AER errors of a function since boot in its sysfs
``aer_dev_fatal`` (``TOTAL_ERR_FATAL``, Documentation/PCI/
pcieaer-howto.rst); the count only grows until the next reboot, and the
kernel's AER recovery (a link or function reset) often brings the device
back.  So a device is judged by the errors that are *new* since the last
discovery pass, and offered again after ``[discovery]
aer_recovery_passes`` passes in a row without a new one.

The drivers put the count in the device's ``std_board_info``
(``aer_dev_fatal``); ``host_sync.sync`` calls ``verdict`` with what the
database held before the pass, and the counters travel in
``std_board_info`` (``aer_quiet_passes`` while recovering), so they
survive a restart.
"""

#: ``std_board_info`` keys.
TOTAL = 'aer_dev_fatal'
QUIET = 'aer_quiet_passes'


def verdict(previous, current, recovery_passes):
    """Why the device is unhealthy because of AER errors, or None.

    :param previous: the device's ``std_board_info`` before this pass
        (dict), or None for a device seen for the first time (every error
        counted since boot is then new).
    :param current: this pass's ``std_board_info`` (dict); ``QUIET`` is
        set in it while the device recovers.
    :param recovery_passes: passes in a row without a new fatal error
        after which the device is offered again (int, >= 1).
    :returns: the health reason (str), or None.
    """
    total = current.get(TOTAL)
    if total is None:
        return None
    previous = previous or {}
    before = previous.get(TOTAL)
    # A count lower than before: the host rebooted, every error is new.
    new = total if before is None or total < before else total - before
    if new:
        current[QUIET] = 0
        return ('%d new fatal PCIe AER errors (aer_dev_fatal: %d since '
                'boot); offered again after %d discovery passes without '
                'a new one' % (new, total, recovery_passes))
    quiet = previous.get(QUIET)
    if quiet is None:
        return None
    quiet += 1
    if quiet >= recovery_passes:
        return None
    current[QUIET] = quiet
    return _RECOVERING % (total, quiet, recovery_passes)


#: The reason ``verdict`` gives while a device recovers (no new error).
_RECOVERING = ('fatal PCIe AER errors (aer_dev_fatal: %d since boot); '
               'recovering: %d of %d discovery passes without a new one')
_RECOVERING_HEAD = _RECOVERING.split('%', 1)[0]
_RECOVERING_MARK = '; recovering: '


def is_recovering(reason):
    """Whether ``reason`` (a health reason, str or None) is the one
    ``verdict`` gives while a device recovers from fatal AER errors
    with no new one (as opposed to new errors, or a driver's verdict).

    :returns: bool.
    """
    return bool(reason) and reason.startswith(_RECOVERING_HEAD) and (
        _RECOVERING_MARK in reason)
