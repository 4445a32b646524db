"""Shared helpers of the accel_backend unit tests."""

import json
import os

from accel_backend import conf as accel_conf

FIXTURES = os.path.abspath(os.path.join(
    os.path.dirname(__file__), '..', '..', 'fixtures', 'sysfs'))
TWO_GPUS = os.path.join(FIXTURES, 'two-gpus')
SRIOV_GPU = os.path.join(FIXTURES, 'sriov-gpu')

T4_ADDRESSES = ['0000:af:00.0', '0000:d8:00.0']
T4_SPEC = {'vendor_id': '10de', 'product_id': '1eb8',
           'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_T4'],
           'device_type': 'GPU'}


def make_conf(sysfs_root=TWO_GPUS, specs=(T4_SPEC,), **groups):
    """A fresh accel_backend ConfigOpts for discovery.

    :param specs: dicts (dumped as JSON) or ready JSON strings.
    :param groups: ``{group: {option: value}}`` overrides; ``DEFAULT``
        names the default group.
    """
    conf = accel_conf.new_conf()
    conf.set_override('sysfs_root', sysfs_root, group='discovery')
    conf.set_override('device_spec',
                      [s if isinstance(s, str) else json.dumps(s)
                       for s in specs], group='discovery')
    for group, opts in groups.items():
        for name, value in opts.items():
            conf.set_override(name, value,
                              group=None if group == 'DEFAULT' else group)
    return conf
