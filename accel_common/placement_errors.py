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

"""Placement's error documents, read once for both halves.

Since microversion 1.23 Placement answers errors with
``{"errors": [{"status", "code", "title", "detail", ...}]}`` and stable
codes (openstack/placement, ``placement/errors.py``); the ones nova-accel
acts on are named here.
"""

#: An inventory PUT removed a resource class that has allocations.
INVENTORY_INUSE = 'placement.inventory.inuse'
#: A write lost a race on a provider's or consumer's generation.
CONCURRENT_UPDATE = 'placement.concurrent_update'


def error_code(resp):
    """The ``code`` of the first error of a Placement answer.

    :param resp: a ``requests.Response`` (or anything with ``json()``).
    :returns: str, or None when the body is no error document.
    """
    try:
        errors = resp.json().get('errors') or [{}]
        return errors[0].get('code')
    except (ValueError, AttributeError, IndexError, TypeError):
        return None
