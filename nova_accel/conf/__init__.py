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

"""Configuration options of nova_accel, the Nova side of the bundle.

nova_accel reuses Nova's own options where Nova already has them
(``[cyborg]`` keystoneauth options, ``[DEFAULT] arq_binding_timeout``) and
declares its own under ``[nova_accel]``.  ``list_opts()`` is the
``oslo.config.opts`` entry point used by ``oslo-config-generator``.

This package is the one place that registers them, on import, as Nova's
``nova/conf/__init__.py`` (Nova 34) registers Nova's: a module that reads
an option does ``import nova_accel.conf`` and ``CONF =
nova_accel.conf.CONF`` (``tests/unit/test_nova_accel_conf.py`` refuses
``register_opt(s)`` calls anywhere else in ``nova_accel``).  ``CONF`` is
oslo.config's global ``cfg.CONF``, the object Nova's ``nova.conf.CONF``
is, so Nova's options are read through it too where ``nova.conf`` is
imported; this package itself does not import Nova, so the documentation
and the sample generator list the options without it.
"""

from oslo_config import cfg

#: The process's configuration, Nova's (``nova.conf.CONF`` is
#: ``cfg.CONF``), with the ``[nova_accel]`` options registered.
CONF = cfg.CONF

GROUP = cfg.OptGroup(
    'nova_accel',
    title='nova_accel options',
    help='Options of the nova_accel compute drivers and scheduler plugins.')

OPTS = [
    cfg.ListOpt(
        'ignored_attach_handle_types',
        default=['TEST_PCI'],
        help='Attach handle types that the compute drivers skip when '
             'composing the guest (logged, never attached). TEST_PCI is '
             'what fake accelerator drivers report: it names no real '
             'device.'),
    cfg.BoolOpt(
        'hotplug_enabled',
        default=True,
        help='Serve accelerator hot-plug requests (nova-accel '
             'attach-accelerator / detach-accelerator): the compute driver '
             'starts an RPC server on [nova_accel] hotplug_topic, server = '
             'this host, on Nova\'s message bus.'),
    cfg.BoolOpt(
        'guest_numa_affinity',
        default=True,
        help='For guests with a NUMA topology, attach each accelerator '
             'PCI hostdev to a PCI expander bus on the guest NUMA node '
             'placed on the device\'s host NUMA node (pcie-expander-bus '
             'and a pcie-root-port on q35, pci-expander-bus on pc), so '
             'the guest OS sees the device\'s locality. The host node '
             'comes from the ARQ (attach_handle_info numa_node) or '
             'libvirt\'s node device. Needs QEMU pxb/pxb-pcie support.'),
    cfg.BoolOpt(
        'replace_failed',
        default=False,
        help='Replace, under their running guests, the devices the '
             'accelerator service taints NoExecute (a health fault, or '
             'an operator draining a device): every '
             'replace_failed_interval seconds the compute driver asks for '
             'the NoExecute-tainted devices (accelerator API 2.6) and, '
             'for each Bound ARQ of an instance of this host on one of '
             'them, hot-unplugs the device, moves the allocation to a '
             'free device of the same request group on this host, '
             'rebinds the ARQ and hot-plugs the new device '
             '(nova-accel replace-accelerator does it on request). '
             'Without a free device the guest keeps the device and gets '
             'an instance fault. Off: tainted devices stay under their '
             'guests.'),
    cfg.FloatOpt(
        'replace_failed_interval',
        default=15.0, min=1.0,
        help='Seconds between two looks for NoExecute-tainted devices '
             '(replace_failed); a replacement that found no free device '
             'is tried again after 20 of them.'),
    cfg.StrOpt(
        'hotplug_topic',
        default='nova-accel-compute',
        help='RPC topic of accelerator hot-plug requests (compute drivers '
             'and the nova-accel command must agree).'),
]


SCHEDULER_OPTS = [
    cfg.FloatOpt(
        'accelerator_host_reservation_weight_multiplier',
        default=1.0,
        help='Multiplier of nova_accel.scheduler.weighers.'
             'AcceleratorHostReservationWeigher. For a request whose flavor '
             'has no accel:device_profile, hosts with free accelerators '
             '(child resource providers with the OWNER_CYBORG trait and '
             'free inventory) weigh less, the more free accelerators the '
             'less, so accelerator hosts stay free for accelerator '
             'workloads. 0.0 disables the weigher; a negative value packs '
             'plain servers onto accelerator hosts instead. The aggregate '
             'metadata key of the same name overrides it per host '
             'aggregate.'),
    cfg.FloatOpt(
        'accelerator_weigher_refresh_interval',
        default=10.0, min=0.05,
        help='Seconds between two reads of the free accelerator providers '
             'by AcceleratorHostReservationWeigher. The weigher reads them '
             'in a thread of the scheduler, off the request path, so a '
             'scheduling request costs no Placement call whatever the size '
             'of the cloud; in exchange its view is up to this old. A '
             'request with an accel:device_profile (devices about to be '
             'allocated) makes the next read come sooner.'),
    cfg.FloatOpt(
        'accelerator_weigher_max_age',
        default=120.0, min=0.1,
        help='Seconds after which a view of the free accelerators that '
             'could not be refreshed (Placement unreachable or failing) is '
             'no longer used: the weigher then weighs every host the same '
             'until a read succeeds again.'),
]


def register_opts(conf):
    """Register the ``[nova_accel]`` options on ``conf`` (idempotent).

    :param conf: an ``oslo_config.cfg.ConfigOpts``, usually ``nova.conf.CONF``.
    """
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)
    conf.register_opts(SCHEDULER_OPTS, group=GROUP)


def list_opts():
    """Return ``[(group, [opts])]`` for ``oslo-config-generator``."""
    return [(GROUP, OPTS + SCHEDULER_OPTS)]


register_opts(CONF)
