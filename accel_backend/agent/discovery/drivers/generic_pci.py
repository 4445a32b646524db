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

"""Generic PCI driver: whole PCI functions selected by device specs."""

from oslo_log import log as logging

from accel_backend.agent.discovery import device_spec
from accel_backend.agent.discovery.drivers import base

LOG = logging.getLogger(__name__)


class GenericPCIDriver(base.PCIDriverBase):
    """Report each PCI function matching a ``[discovery] device_spec``.

    Each match becomes one deployable with inventory 1 of the spec's
    resource class and one attach handle (the function's address).  SR-IOV
    virtual functions are reported only when a spec asks for them
    (``device_spec.DeviceSpec.takes_vf``), with the ``CUSTOM_PCI_VF``
    trait.  A PF whose VFs are enabled is never reported whole
    (``PCIDriverBase.vfs_of``), whether its VFs are.  Functions Nova's PCI
    passthrough claims are refused (``PCIDriverBase``).  The functions
    of a spec with ``"pool": true`` are tagged ``spec<position>`` for
    pooling (``common.pooling``).

    :param conf: accel_backend ``ConfigOpts``.
    :raises DeviceSpecError: at construction, for a malformed spec.
    """

    name = 'generic_pci'

    def __init__(self, conf):
        super().__init__(conf)
        self.specs = device_spec.parse_all(conf.discovery.device_spec)

    def _spec_for(self, fn, by_address):
        """The first spec that takes ``fn``, or None."""
        for spec in self.specs:
            if not spec.matches(fn):
                continue
            if fn.physfn:
                if spec.takes_vf(fn, by_address.get(fn.physfn)):
                    return spec
            elif not spec.vf:
                return spec
        if fn.physfn and any(s.matches(fn) for s in self.specs):
            LOG.debug('Skipping %s: SR-IOV VF of %s (no device_spec asks '
                      'for VFs)', fn.address, fn.physfn)
        return None

    def discover(self):
        """:returns: list of ``DiscoveredDeployable``, sorted by address."""
        if not self.specs:
            return []
        functions = self.functions()
        by_address = {fn.address: fn for fn in functions}
        chosen = [(fn, spec) for fn, spec in
                  ((fn, self._spec_for(fn, by_address)) for fn in functions)
                  if spec is not None and not self.refused(fn)]
        found = []
        for fn, spec in chosen:
            vfs = self.vfs_of(fn)
            if vfs:
                LOG.debug('Skipping %s: its %d SR-IOV VFs are enabled',
                          fn.address, len(vfs))
                continue
            found.append(self.deployable(
                fn, device_type=spec.device_type,
                resource_class=spec.resource_class,
                traits=set(spec.traits) | base.pci_traits(fn),
                attach_handles=[(spec.attach_handle_type,
                                 spec.handle_info(fn))],
                pool=('spec%d' % self.specs.index(spec)
                      if spec.pool else None)))
        return found
