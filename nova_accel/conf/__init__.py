"""Configuration options of nova_accel, the Nova side of the bundle.

nova_accel reuses Nova's own options where Nova already has them
(``[cyborg]`` keystoneauth options, ``[DEFAULT] arq_binding_timeout``) and
declares its own under ``[nova_accel]``.  ``list_opts()`` is the
``oslo.config.opts`` entry point used by ``oslo-config-generator``.
"""

from oslo_config import cfg

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
]


def register_opts(conf):
    """Register the ``[nova_accel]`` options on ``conf`` (idempotent).

    :param conf: an ``oslo_config.cfg.ConfigOpts``, usually ``nova.conf.CONF``.
    """
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    """Return ``[(group, [opts])]`` for ``oslo-config-generator``."""
    return [(GROUP, OPTS)]
