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
acts on are named here.  The document is the OpenStack API-SIG's errors
document (api-sig, ``guidelines/errors.rst``), which accel_backend answers
too: ``first_error`` reads it for every client of both halves.
"""

#: An inventory PUT removed a resource class that has allocations.
INVENTORY_INUSE = 'placement.inventory.inuse'
#: A write lost a race on a provider's or consumer's generation.
CONCURRENT_UPDATE = 'placement.concurrent_update'


def first_error(body):
    """The first error of an API-SIG errors document.

    :param body: a decoded JSON body (any JSON value).
    :returns: dict, the first member of ``body["errors"]``; None when
        ``body`` is no errors document (not an object, no ``errors``
        list, an empty one, or one whose first member is no object).
    """
    errors = body.get('errors') if isinstance(body, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return errors[0]
    return None


def error_code(resp):
    """The ``code`` of the first error of a Placement answer.

    :param resp: a ``requests.Response`` (or anything with ``json()``).
    :returns: str, or None when the body is no error document.
    """
    try:
        first = first_error(resp.json())
    except ValueError:
        return None
    return first.get('code') if first else None
