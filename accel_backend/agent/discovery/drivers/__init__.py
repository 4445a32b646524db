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

"""Discovery drivers and the record they return.

A driver is a class ``Driver(conf)`` with ``name`` and ``discover() ->
list[common.discovered.DiscoveredDeployable]``; drivers are looked up by
name in the entry point group ``accel_backend.discovery.drivers``
(stevedore; the group kept its name when the package moved under
``agent``).  The PCI drivers derive from ``drivers.base.PCIDriverBase``,
which refuses devices Nova's PCI passthrough claims and adds NUMA traits
and health.
"""

from oslo_log import log as logging
from stevedore import driver as sv_driver

from accel_backend.agent.discovery import iommu
from accel_backend.common import pooling
from accel_backend import exception

LOG = logging.getLogger(__name__)
NAMESPACE = 'accel_backend.discovery.drivers'


def load(conf, names):
    """Instantiate the drivers named in ``names`` (list of str).

    :raises stevedore.exception.NoMatches: an unknown driver name.
    """
    return [sv_driver.DriverManager(NAMESPACE, name, invoke_on_load=True,
                                    invoke_args=(conf,)).driver
            for name in names]


def config_problems(drivers):
    """What the drivers' configuration makes them withhold (a Nova
    ``[pci] device_spec`` value that does not parse...): sorted list of
    distinct str, [] when nothing.  A driver may say so with a
    ``config_problems`` attribute (list of str); none is required."""
    return sorted({p for drv in drivers
                   for p in getattr(drv, 'config_problems', ())})


def without_iommu(drivers):
    """PCI addresses the drivers' last pass found without an IOMMU group
    (sorted list; a driver says so with a ``no_iommu`` set)."""
    return sorted({a for drv in drivers
                   for a in getattr(drv, 'no_iommu', ())})


def without_intremap(drivers):
    """Passthrough functions the drivers' last pass held back because
    the host has no interrupt remapping (``agent.discovery.interrupts``):
    ``(addresses, causes)``, two sorted lists of str (PCI addresses; why,
    ``Verdict.cause``); two empty lists when none.  A driver says so with
    a ``no_intremap`` set and its ``intremap`` verdict."""
    addresses, causes = set(), set()
    for drv in drivers:
        held = getattr(drv, 'no_intremap', ())
        if held:
            addresses.update(held)
            causes.add(drv.intremap.cause)
    return sorted(addresses), sorted(causes)


def degraded(drivers):
    """Why the drivers' last pass leaves the host ``degraded``, the one
    rule for it: the first of Nova ``[pci] device_spec`` values that do
    not parse (``config_problems``), functions without an IOMMU group
    (``without_iommu``), functions on a host without interrupt remapping
    (``without_intremap``).

    :returns: an ``exception.NovaPCISpecWithheld``, ``NoIOMMU`` or
        ``NoInterruptRemapping`` (recorded, never raised), or None.
    """
    problems = config_problems(drivers)
    if problems:
        return exception.NovaPCISpecWithheld(problems='; '.join(problems))
    no_iommu = without_iommu(drivers)
    if no_iommu:
        return exception.NoIOMMU(addresses=', '.join(no_iommu))
    no_intremap, causes = without_intremap(drivers)
    if no_intremap:
        return exception.NoInterruptRemapping(
            addresses=', '.join(no_intremap), cause='; '.join(causes))
    return None


def discover_all(drivers, span_numa=False, keep_spanning=None):
    """Run every driver; a device reported by two drivers goes to the
    first one (in ``enabled_drivers`` order), with a warning, and of two
    passthrough devices in one IOMMU group only the first is kept
    (``agent.discovery.iommu.exclusive``); then the functions a driver tagged
    for pooling are merged into one deployable per pool
    (``common.pooling.merge``, given ``span_numa`` and
    ``keep_spanning``).

    :returns: list of ``DiscoveredDeployable``.
    """
    owner, found = {}, []
    for drv in drivers:
        for item in drv.discover():
            first = owner.setdefault(item.address, item.driver_name)
            if first != item.driver_name:
                LOG.warning('Device %s is reported by drivers %s and %s; '
                            'keeping %s', item.address, first,
                            item.driver_name, first)
                continue
            found.append(item)
    return pooling.merge(iommu.exclusive(found), span_numa=span_numa,
                         keep_spanning=keep_spanning)
