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

"""Cyborg microversions: ``OpenStack-API-Version: accelerator 2.x``.

2.0 base; 2.1 ``project_id`` in the bind PATCH; 2.2 GET a device profile by
name; 2.3 device ``status``.  No header means 2.0 (Nova sends none);
``latest`` means the maximum; anything outside [min, max] is 406.
"""

import microversion_parse

from accel_backend import exception

SERVICE_TYPE = 'accelerator'
MIN_VERSION = (2, 0)
MAX_VERSION = (2, 3)


def fmt(version):
    """``(2, 3)`` -> ``'2.3'``."""
    return '%d.%d' % version


def from_headers(headers):
    """The requested version as a ``(major, minor)`` tuple.

    :param headers: a mapping of request headers.
    :raises NotAcceptable: malformed or out of range.
    """
    text = microversion_parse.get_version(headers, service_type=SERVICE_TYPE)
    if text is None:
        return MIN_VERSION
    if text == 'latest':
        return MAX_VERSION
    try:
        major, minor = (int(p) for p in text.split('.'))
    except ValueError:
        raise exception.NotAcceptable(version=text, min=fmt(MIN_VERSION),
                                      max=fmt(MAX_VERSION))
    if not MIN_VERSION <= (major, minor) <= MAX_VERSION:
        raise exception.NotAcceptable(version=text, min=fmt(MIN_VERSION),
                                      max=fmt(MAX_VERSION))
    return (major, minor)


def range_headers():
    """The supported range, sent even when no version was negotiated."""
    return {
        'OpenStack-API-Minimum-Version': fmt(MIN_VERSION),
        'OpenStack-API-Maximum-Version': fmt(MAX_VERSION),
        'Vary': 'OpenStack-API-Version',
    }


def response_headers(version):
    """Headers every response carries."""
    headers = range_headers()
    headers['OpenStack-API-Version'] = '%s %s' % (SERVICE_TYPE,
                                                  fmt(version))
    return headers
