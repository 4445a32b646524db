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

"""The one rule that keeps a misconfiguration from wiping a host.

A discovery pass that finds far fewer devices than the host had is far
more often a typo (``[discovery] sysfs_root``, a device spec), a driver
that failed or a PCI bus that did not come up than a host whose cards were
pulled. Removing them would delete their resource providers from Placement
and their rows (device, deployables, attach handles) from the database;
``[discovery] max_removal_share`` bounds what one pass may remove, for the
database (``conductor.host_sync.sync``) and Placement
(``agent.placement.report.Reporter``) alike.
"""

from accel_backend import exception


def check(host, what, total, removing, share, force=False):
    """Refuse to remove more than ``share`` of ``total`` items at once.

    :param host: the host's name (str), for the message.
    :param what: what is counted (str, plural), e.g. ``'devices'``.
    :param total: how many the host has now (int).
    :param removing: the names (PCI addresses, provider names) that the
        pass would remove (iterable of str).
    :param share: ``[discovery] max_removal_share`` (float, 0.0 to 1.0).
    :param force: True for an operator's explicit ``--force``.
    :raises MassRemovalRefused: more than ``share`` would go, naming what
        is kept.
    """
    removing = sorted(removing)
    if force or not removing or not total:
        return
    if len(removing) > share * total:
        raise exception.MassRemovalRefused(
            removing=len(removing), total=total, what=what, host=host,
            share=share, kept=', '.join(removing))
