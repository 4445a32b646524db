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

"""Custom resource classes and traits the reporter creates in Placement.

Placement only accepts an inventory of a resource class, or a trait, that
exists: the standard ones (os-resource-classes, os-traits) always do, a
``CUSTOM_*`` one must be created first (``PUT /resource_classes/<rc>``,
``PUT /traits/<trait>``; Placement API reference, microversions 1.7 and
1.6).  ``CustomNames`` remembers what exists, so each is created once per
process.  Not thread-safe by itself: the reporter calls it under its own
lock.
"""

import os_resource_classes as orc
import os_traits


class CustomNames:
    """The resource classes and traits known to exist in Placement: the
    standard ones from the start, the custom ones once created."""

    def __init__(self):
        self._rcs = set(orc.STANDARDS)
        self._traits = set(os_traits.get_traits())

    def ensure_rc(self, client, rc):
        """Create resource class ``rc`` (str) unless it is a standard one
        or known to exist.

        :param client: ``agent.placement.client.PlacementClient``.
        :raises PlacementError: Placement failed.
        """
        if rc not in self._rcs:
            client.put('/resource_classes/%s' % rc)
            self._rcs.add(rc)

    def ensure_traits(self, client, traits):
        """Create the traits (iterable of str) that are neither standard
        nor known to exist, one ``PUT /traits/<trait>`` each.

        :param client: ``agent.placement.client.PlacementClient``.
        :raises PlacementError: Placement failed.
        """
        for trait in sorted(set(traits) - self._traits):
            client.put('/traits/%s' % trait)
            self._traits.add(trait)
