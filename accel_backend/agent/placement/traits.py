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

"""The traits of our resource providers written at once when a taint
changes them (``accel_common.tolerations``: a tolerable taint is the
trait ``CUSTOM_ACCEL_TAINT_<KEY>``; ``ProviderTraits``, which
``report.Reporter`` holds as ``traits``).  The periodic report derives
the same traits from the database and repairs what this could not
write, as for the reserved units (``reserved``)."""

from accel_backend.agent.placement import provider_tree


class ProviderTraits:
    """Writes the traits the database wants for one provider.

    :param lock: the reporter's lock (``threading.RLock``), held around
        the read of the database and the write that follows it, so that
        no earlier read lands after a newer one.
    :param refresh: ``(rp_uuid) -> provider_records.Cached or None``
        (``provider_tree.ProviderTreeView.refresh``).
    :param put_traits: ``(rp_uuid, traits) -> bool``, the reporter's
        generation-safe write (``report.Reporter.put_traits``).
    :param traits_for: optional ``(rp_uuid) -> set of str or None``, the
        traits the database wants now for one of our providers, the
        owner trait aside (``objects.deployable.provider_traits_of_rp``).
    """

    def __init__(self, lock, refresh, put_traits, traits_for=None):
        self.lock = lock
        self.refresh = refresh
        self.put_traits = put_traits
        self.traits_for = traits_for

    def sync(self, rp_uuid):
        """Write the traits ``traits_for`` gives for ``rp_uuid`` now, the
        owner trait kept.  The provider is read first: other API
        processes and the host's agent write it too.

        :param rp_uuid: the deployable's resource provider UUID (str).
        :returns: True when Placement shows those traits now, False when
            the provider does not exist (yet), is not ours (``traits_for``
            answered None) or there is no ``traits_for``.
        :raises PlacementError: Placement failed or kept conflicting.
        """
        if self.traits_for is None:
            return False
        with self.lock:
            traits = self.traits_for(rp_uuid)
            if traits is None or self.refresh(rp_uuid) is None:
                return False
            return self.put_traits(
                rp_uuid, set(traits) | {provider_tree.OWNER_TRAIT})
