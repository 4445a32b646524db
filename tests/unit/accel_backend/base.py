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

"""Shared helpers of the accel_backend unit tests."""

import json
import os

import fixtures

from accel_backend.cmd import manage
from accel_backend import conf as accel_conf

FIXTURES = os.path.abspath(os.path.join(
    os.path.dirname(__file__), '..', '..', 'fixtures', 'sysfs'))
TWO_GPUS = os.path.join(FIXTURES, 'two-gpus')
SRIOV_GPU = os.path.join(FIXTURES, 'sriov-gpu')
H200_VM = os.path.join(FIXTURES, 'h200-vm-no-iommu')
A100_VGPU_VFS = os.path.join(FIXTURES, 'a100-vgpu-vfs')
T4_MDEV_IN_USE = os.path.join(FIXTURES, 't4-mdev-in-use')
GPU_SERVER = os.path.join(FIXTURES, 'gpu-server')
FPGA_CARD = os.path.join(FIXTURES, 'fpga-card')
MDEV_GPU = os.path.join(FIXTURES, 'mdev-gpu')

T4_ADDRESSES = ['0000:af:00.0', '0000:d8:00.0']
T4_SPEC = {'vendor_id': '10de', 'product_id': '1eb8',
           'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_T4'],
           'device_type': 'GPU'}


#: ``[nova]`` of a service whose events go nowhere (no Nova in the test).
NO_NOVA = {'auth_type': 'admin_token', 'token': 'admin',
           'endpoint': 'http://nova.invalid/v2.1',
           'endpoint_override': 'http://nova.invalid/v2.1'}


def placement_opts(endpoint):
    """``[placement]`` of a service reporting to the Placement at
    ``endpoint`` (its noauth2 token ``admin``)."""
    return {'auth_type': 'admin_token', 'token': 'admin',
            'endpoint': endpoint, 'endpoint_override': endpoint}


def make_conf(test, sysfs_root=TWO_GPUS, specs=(T4_SPEC,), **groups):
    """A fresh accel_backend ConfigOpts read from a config file.

    Values go through a file, never ``set_override``: accel_backend
    registers module-level ``OptGroup`` objects, which oslo.config copies
    shallowly, so overrides of grouped options would leak into every
    other ConfigOpts of the process.

    :param test: the running TestCase (owns the temp dir).
    :param specs: dicts (dumped as JSON) or ready JSON strings.
    :param groups: ``{group: {option: value}}``; ``DEFAULT`` is the
        default group; a list value is written as one line per item
        (multi-valued options).
    """
    tmp = test.useFixture(fixtures.TempDir()).path
    # oslo.policy 6's default, written out: Placement's test fixture sets
    # the process-wide default to False (set_defaults) when it runs first.
    sections = {'DEFAULT': {'state_path': tmp}, 'discovery': {},
                'oslo_policy': {'enforce_new_defaults': True}}
    sections['discovery']['sysfs_root'] = sysfs_root
    for group, opts in groups.items():
        sections.setdefault(group, {}).update(opts)
    lines = []
    for group, opts in sections.items():
        lines.append('[%s]' % group)
        for key, value in opts.items():
            # A list is a multi-valued option: one line per value.
            for v in value if isinstance(value, (list, tuple)) else [value]:
                lines.append('%s = %s' % (key, v))
        if group == 'discovery':
            lines.extend('device_spec = %s' % (
                s if isinstance(s, str) else json.dumps(s)) for s in specs)
    path = os.path.join(tmp, 'accel-backend.conf')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return accel_conf.new_conf(config_files=[path])


def run_manage(test, config_file, argv):
    """Run ``accel-backend-manage`` (``cmd.manage.main``) in-process with
    ``config_file``, its standard streams captured.

    :param test: the ``testtools.TestCase`` (for its fixtures).
    :param argv: the arguments after ``--config-file`` (list of str).
    :returns: ``(exit status, stdout, stderr)``.
    """
    out = test.useFixture(fixtures.StringStream('stdout'))
    err = test.useFixture(fixtures.StringStream('stderr'))
    test.useFixture(fixtures.MonkeyPatch('sys.stdout', out.stream))
    test.useFixture(fixtures.MonkeyPatch('sys.stderr', err.stream))
    code = manage.main(['--config-file', config_file] + list(argv))
    out.stream.flush()
    err.stream.flush()
    return (code, out.getDetails()['stdout'].as_text(),
            err.getDetails()['stderr'].as_text())
