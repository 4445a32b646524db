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

"""The one retry policy of accel_backend's Placement calls.

Placement refuses a write made at a stale resource provider (or
consumer) generation with 409 Conflict: someone else changed the
provider since it was read (Placement API reference, "Resource provider
generations"; openstack/placement 16.0.0,
``placement/handlers/inventory.py``, ``trait.py``, ``reshaper.py``).
The caller reads again and writes again, at most ``RETRIES`` tries in
all, with no wait (a conflict means the other write is done already);
Nova's report client also makes four tries, with a random wait between
them (openstack/nova 34.0.0, ``nova/scheduler/client/report.py``,
``retries``).  When the conflicts persist, the last try's
``PlacementError`` (status 409) is raised as it is.

Every retry of ``agent.placement.report``, ``agent.placement.reserved``
(through the reporter), ``agent.placement.reshape`` and
``agent.placement.provider_tree`` goes through ``retrying``, which builds
the ``tenacity.Retrying``.
"""

import tenacity

from accel_backend import exception

#: Tries of one Placement write while its generation conflicts.
RETRIES = 4


def conflict(exc):
    """Whether ``exc`` is a generation conflict: a ``PlacementError``
    with status 409.

    :param exc: any exception.
    :returns: bool.
    """
    return isinstance(exc, exception.PlacementError) and \
        exc.kwargs.get('status') == 409


def retrying(retry_on=conflict, attempts=RETRIES, reread=None):
    """The ``tenacity.Retrying`` of a Placement call: iterate over it and
    make the call under ``with attempt:`` (tenacity 9, "Retrying code
    block"); a ``return`` inside ends the loop.

    :param retry_on: ``(exception) -> bool``, which failures are tried
        again; generation conflicts (``conflict``) by default.  Any other
        exception is raised at once.
    :param attempts: tries in all (int), ``RETRIES`` by default.
    :param reread: optional callable ``() -> None``, called between two
        tries (never before the first nor after the last): the re-read
        of what the next try writes from.
    :returns: ``tenacity.Retrying``; once ``attempts`` tries failed, the
        last try's exception is raised (never ``tenacity.RetryError``).
    """
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(retry_on),
        stop=tenacity.stop_after_attempt(attempts),
        before_sleep=None if reread is None else (lambda state: reread()),
        reraise=True)
