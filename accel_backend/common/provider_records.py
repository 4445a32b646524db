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

"""What the reporter keeps in step: one record per deployable, and the
names of the compute node provider
(``accel_backend.agent.placement.report``)."""

import collections
import socket

ProviderRecord = collections.namedtuple(
    'ProviderRecord',
    ['rp_uuid', 'address', 'resource_class', 'total', 'traits', 'reserved',
     'subname'], defaults=(None,))
ProviderRecord.__doc__ = """What Placement must show for one deployable.

``address`` is the device's PCI address (names the RP, with ``subname``
when a device has several deployables), ``total`` the number of
accelerators (int), ``traits`` an iterable of names, ``reserved`` the
units that must not be scheduled: an int, or True for all of them
(disabled, missing, unhealthy) and False for none."""


def reserved_units(reserved, total):
    """``ProviderRecord.reserved`` (bool or int) as a unit count."""
    if reserved is True:
        return total
    if reserved is False or reserved is None:
        return 0
    return max(0, min(int(reserved), total))


def inventory(total, reserved):
    """The inventory record of one resource class of one of our
    providers (dict, Placement's ``PUT
    /resource_providers/{uuid}/inventories`` fields): ``total`` units
    (int > 0), ``reserved`` as in ``ProviderRecord``, every unit
    allocatable on its own."""
    return {'total': total, 'reserved': reserved_units(reserved, total),
            'min_unit': 1, 'max_unit': total, 'step_size': 1,
            'allocation_ratio': 1.0}


class Cached:
    """What Placement showed for one of our providers."""

    __slots__ = ('generation', 'inventories', 'traits')

    def __init__(self, generation, inventories, traits):
        self.generation = generation
        self.inventories = inventories
        self.traits = traits


def compute_rp_names(conf):
    """Names to try for the compute node RP, most specific first."""
    if conf.discovery.resource_provider_name:
        return [conf.discovery.resource_provider_name]
    host = conf.host
    names = [host, host.split('.')[0]]
    try:
        names.append(socket.getfqdn(host))
    except OSError:
        pass
    seen = []
    for n in names:
        if n and n not in seen:
            seen.append(n)
    return seen


def provider_name(host_rp_name, address, subname=None):
    """Name of a deployable's resource provider.

    :param host_rp_name: name of the compute node's resource provider
        (str).
    :param address: the device's PCI address (str, ``0000:3b:00.0``).
    :param subname: the deployable's name among several of one device
        (str, e.g. an mdev type), or None for a device's only one.
    :returns: ``<compute RP>_<address>``, with ``_<subname>`` appended
        when given (str).
    """
    name = '%s_%s' % (host_rp_name, address)
    return '%s_%s' % (name, subname) if subname else name
