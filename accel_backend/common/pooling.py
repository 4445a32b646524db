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

"""Interchangeable whole functions of one host pooled into one deployable.

A driver asked to pool (a ``[discovery] device_spec`` with ``"pool":
true``, ``[discovery] nvidia_gpu_pool``) tags each whole function it
finds with a pool tag (``DiscoveredDeployable.pool``).  After discovery
(``drivers.discover_all``), the tagged functions of one driver and tag
that are interchangeable, i.e. same vendor and product, whatever NUMA
node each sits on, become ONE deployable: one resource provider
whose total is their number, with one attach handle per function, the
shape Cyborg's data model has for a deployable with several
accelerators (openstack-cyborg 17.0.0, ``cyborg/objects/deployable.py``:
``num_accelerators``; one ``AttachHandle`` per accelerator).  A request
group ``resources:PGPU=8`` is then one group on one provider, not eight
groups Placement has to spread over eight providers.

The pooled deployable belongs to a device record of its own (the
``pool device``, address ``pool`` and 12 hex digits of its name's SHA-1,
as ``devices.address`` holds 16 characters); each function's health,
board information and AER count are kept per function in its
``std_board_info["members"]`` (``conductor.host_sync``), and a function
that is unhealthy gives no claimable attach handle, so the provider's
``reserved`` grows by one (``objects.deployable.reserved_units``).

By default a pool spans the host's NUMA nodes (``[discovery]
pool_numa_span`` true, issue 55): a two-socket server with 4 GPUs on
each node has ONE provider of 8, so ``resources:PGPU=8`` (or 6) in one
group finds it, as Kubernetes DRA's ``count: 8`` does; the binder picks
the functions, packed onto as few NUMA nodes as possible, and all on one
node when the request asks for locality (``conductor.numa_fit``), and
Nova's scheduler filter ``AcceleratorNumaFitFilter`` skips hosts whose
wanted node is full (``objects.numa_free``).  With ``pool_numa_span``
false a pool is one NUMA node's: the same server has two providers of 4,
and ``trait:CUSTOM_NUMA_NODE_0=required`` is matched exactly by
Placement.  The pool carries the NUMA trait of
every node it has functions on (``CUSTOM_NUMA_NODE_<N>``); each
member's node is in its ``std_board_info["numa_node"]``.

The pool's name, which names the provider
(``<compute RP>_pool_<name>``), is ``<vendor>_<product>_numa<N>`` when
its functions are all on NUMA node N (``nonuma`` when they have no NUMA
affinity), and ``<vendor>_<product>_numa_all`` for a pool spanning
several; with ``_<tag>`` when the driver's tag is not ``default`` (the
generic driver tags with the spec's position, ``spec0``...).  A host
whose pools were per NUMA node is migrated into the spanning pool
without touching its guests when ``pool_numa_span`` is turned on
(``conductor.pool_migration``); turning it off again keeps a spanning pool
that has allocations (``merge``'s ``keep_spanning``), as nothing moves
a guest's GPUs between providers.  The PCIe switch a function sits
behind is not read (sysfs trees flatten ``/sys/bus/pci/devices``).
"""

import dataclasses
import hashlib

from oslo_log import log as logging

from accel_backend.common import discovered

LOG = logging.getLogger(__name__)
#: The tag a driver gives when it has one kind of pool only.
DEFAULT_TAG = 'default'
#: Provider name infix of a pooled deployable
#: (``<compute RP>_pool_<name>``).
PREFIX = 'pool'
#: Cleaning methods, weakest first: a pool whose members the kernel can
#: reset differently cleans with the strongest (a member that cannot be
#: cleaned so fails cleaning and is kept out of service, never handed out
#: uncleaned).
_CLEANING_ORDER = ('none', 'vgpu', 'flr', 'command')


#: Name part of a pool whose functions are on several NUMA nodes.
ALL_NODES = 'numa_all'


def pool_name(item, numa_nodes=None):
    """The name of the pool of a tagged ``DiscoveredDeployable`` (str,
    ``10de_2330_numa0``, ``10de_2330_numa_all``).

    :param numa_nodes: the NUMA nodes (ints, None for no affinity) of
        the pool's functions; default: ``item``'s own node only.
    """
    nodes = {item.numa_node} if numa_nodes is None else set(numa_nodes)
    if len(nodes) > 1:
        numa = ALL_NODES
    else:
        (node,) = nodes
        numa = 'nonuma' if node is None else 'numa%d' % node
    parts = [item.vendor_id, item.product_id, numa]
    if item.pool != DEFAULT_TAG:
        parts.append(item.pool)
    return '_'.join(parts)


def device_address(name):
    """The ``devices.address`` of the pool device of pool ``name`` (str of
    16 characters: ``pool`` and 12 hex digits of the name's SHA-1)."""
    return PREFIX + hashlib.sha1(name.encode(),
                                 usedforsecurity=False).hexdigest()[:12]


def is_pool_address(address):
    """True when a device address is that of a pool device."""
    return bool(address) and address.startswith(PREFIX) and \
        ':' not in address


def _member(item):
    return {'address': item.address, 'health': item.health,
            'health_reason': item.health_reason,
            # The binder reads each member's node (binding.numa_fit).
            'std_board_info': dict({'numa_node': item.numa_node},
                                   **(item.std_board_info or {})),
            'handle': item.attach_handles[0]}


def _merged(name, items):
    first = items[0]
    cleaning = max((i.cleaning for i in items),
                   key=lambda m: (_CLEANING_ORDER.index(m)
                                  if m in _CLEANING_ORDER else 0))
    if len({i.cleaning for i in items}) > 1:
        LOG.warning('Pool %s: its functions have different cleaning '
                    'methods (%s); every one is cleaned with %s',
                    name, sorted({i.cleaning for i in items}), cleaning)
    nodes = sorted({i.numa_node for i in items if i.numa_node is not None})
    board = {'pool': name, 'numa_nodes': nodes,
             'numa_node': nodes[0] if len(nodes) == 1 else None}
    return dataclasses.replace(
        first, address=device_address(name), subname=name,
        deployable_name=None, cleaning=cleaning,
        health=discovered.HEALTHY, health_reason=None, std_board_info=board,
        numa_node=board['numa_node'],
        # Every node's trait: the pool has functions on each.
        traits=set().union(*(i.traits for i in items)),
        attach_handles=[h for i in items for h in i.attach_handles],
        members=[_member(i) for i in items])


def merge(found, span_numa=False, keep_spanning=None):
    """Merge the tagged functions of ``found`` into one deployable per
    pool (see the module docstring); untagged ones pass unchanged.

    :param found: list of ``drivers.DiscoveredDeployable``, each tagged
        one with exactly one attach handle.
    :param span_numa: ``[discovery] pool_numa_span``: True (the option's
        default), one pool per kind spanning the NUMA nodes; False, one
        pool per kind and node.
    :param keep_spanning: with ``span_numa`` False, a callable given the
        name of the spanning pool (str) of a kind whose functions are on
        several nodes; when it returns True that kind stays one spanning
        pool (the host has one with allocations, which must not be
        split).  None: never.
    :returns: list of ``DiscoveredDeployable``: the untagged ones in their
        order, then one per pool, by name; a pooled one has ``members``
        (sorted by address), ``subname`` the pool's name and ``address``
        its pool device's.
    """
    kept, pools = [], {}
    for item in found:
        if item.pool is None:
            kept.append(item)
            continue
        key = (item.driver_name, item.vendor_id, item.product_id,
               item.pool)
        pools.setdefault(key, []).append(item)
    merged = []
    for items in pools.values():
        items.sort(key=lambda i: i.address)
        nodes = {i.numa_node for i in items}
        name = pool_name(items[0], nodes)
        if (span_numa or len(nodes) == 1 or (
                keep_spanning is not None and keep_spanning(name))):
            merged.append((items[0].driver_name, name, items))
            continue
        for node in nodes:
            part = [i for i in items if i.numa_node == node]
            merged.append((items[0].driver_name,
                           pool_name(part[0], {node}), part))
    for _, name, items in sorted(merged, key=lambda m: m[:2]):
        kept.append(_merged(name, items))
    return kept
