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

"""Small helpers shared by the accel_backend layers."""


def isotime(value):
    """ISO 8601 text of a naive-UTC ``datetime`` (``None`` stays None)."""
    if value is None:
        return None
    return value.strftime('%Y-%m-%dT%H:%M:%S+00:00')


def wait_until_empty(condition, items, timeout):
    """Block until ``items`` is empty: the ``wait_idle`` of the binder and
    the cleaner, whose worker threads remove what they finished.

    :param condition: the ``threading.Condition`` under which the other
        threads change ``items`` and which they notify after removing.
    :param items: a container (a set of futures, of handle UUIDs...) that
        is empty when nothing is queued or running.
    :param timeout: seconds to wait at most (float).
    :returns: True when ``items`` was seen empty, False after ``timeout``.
    """
    with condition:
        return condition.wait_for(lambda: not items, timeout)
