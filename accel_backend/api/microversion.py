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
name; 2.3 device ``status`` (2.0 to 2.3 are Cyborg 17's); 2.4, accel_backend's
own, ``GET /v2/deployables/free_by_numa_node`` (free units per NUMA node of
the pools spanning nodes, for Nova's scheduler filter); 2.5, its own,
device taints (``/v2/deployables/{uuid}/taints``, ``taints`` in the
deployable view); 2.6, its own, ``GET /v2/deployables?taint_effect=``
(the deployables with a taint of that effect: what a compute node's
failed-device watch reads, ``nova_accel.hotplug.failed_devices``).  No
header means
2.0 (Nova sends none); ``latest`` means the maximum; anything outside
[min, max] is 406.
"""

import microversion_parse

from accel_backend import exception

SERVICE_TYPE = 'accelerator'
MIN_VERSION = (2, 0)
MAX_VERSION = (2, 6)


def fmt(version):
    """``(2, 5)`` -> ``'2.5'``."""
    return '%d.%d' % version


#: Every version served, oldest first (``microversion_parse``'s list).
VERSIONS = ['%d.%d' % (MIN_VERSION[0], minor)
            for minor in range(MIN_VERSION[1], MAX_VERSION[1] + 1)]


def from_headers(headers):
    """The requested version as a ``(major, minor)`` tuple, through
    ``microversion_parse.extract_version`` (no header: the minimum;
    ``latest``: the maximum).

    :param headers: a mapping of request headers.
    :raises NotAcceptable: malformed or out of range.
    """
    try:
        version = microversion_parse.extract_version(
            headers, SERVICE_TYPE, VERSIONS)
    except (ValueError, TypeError):
        # microversion_parse: ValueError for a version out of range,
        # TypeError for one that is not MAJOR.MINOR.
        raise exception.NotAcceptable(
            version=microversion_parse.get_version(
                headers, service_type=SERVICE_TYPE),
            min=fmt(MIN_VERSION), max=fmt(MAX_VERSION))
    return (version.major, version.minor)


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
