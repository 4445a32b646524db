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

"""Taints from the configuration file (issue 53 item 1): the host's
``[taints] devices`` rules (``accel_backend.conf.taints``) given to what
discovery found, before it is stored.  The conductor side
(``conductor.config_taints``) makes the stored taints of set_by
``accel_common.taints.CONFIG_SET_BY`` those of the pass.

A rule whose address pattern matches a device taints each of its
deployables as a whole; one matching a function of a pooled deployable
taints that function (``objects.taint``).
"""

from accel_backend.common import pooling
from accel_common import pci


def attach(found, rules):
    """Give each ``found`` item the taints ``rules`` want for it
    (``DiscoveredDeployable.taints``), in the rules' order; None for the
    items no rule matches.

    :param found: list of ``common.discovered.DiscoveredDeployable``.
    :param rules: ``[taints] devices`` as read (list of dicts with
        ``pattern``, ``key``, ``effect`` and optionally ``value`` and
        ``reason``), or None.
    :returns: ``found``.
    """
    for item in found:
        if item.members:
            targets = [(m['address'], m['address']) for m in item.members]
        else:
            targets = [(item.address, '')]
        item.taints = [
            {'function': function, 'key': rule['key'],
             'effect': rule['effect'], 'value': rule.get('value'),
             'reason': rule.get('reason')}
            for address, function in targets for rule in rules or ()
            if _matches(rule['pattern'], address)] or None
    return found


def _matches(pattern, address):
    if pooling.is_pool_address(address):
        return False
    try:
        return pattern.matches(address)
    except pci.InvalidAddress:
        return False
