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

"""Mediated-device parents that are not PCI functions (the kernel's
``mtty`` sample): discovery by the ``mdev`` driver, a report to a real
Placement, a bind, and the ``mdev`` cleaning method destroying the
device after the tenant.

The sysfs trees are generated (``sysfs_tree.virtual_mdev_parent``) in
the layout Linux 6.1 shows for ``samples/vfio-mdev/mtty.c``, as read on
the nested compute node: ``/sys/class/mdev_bus/mtty`` ->
``../../devices/virtual/mtty/mtty``, types ``mtty-1`` ("Single port
serial", 24 available) and ``mtty-2`` ("Dual port serial", 12), device
API ``vfio-pci``.
"""

import os
import stat

import fixtures
import testtools

from accel_backend.agent.cleaning import mdev_removal
from accel_backend.common import ids
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend.test_drivers import load
from tests.unit.accel_backend.test_lifecycle import COMPUTE
from tests.unit.accel_backend.test_lifecycle import ServiceTestBase
from tests.unit.accel_backend.test_lifecycle import V23

CREATED = 'b1ae8bf6-38b0-4c81-9d44-78ce3f520496'
MTTY_TYPES = [('mtty-1', 'Single port serial', 24, []),
              ('mtty-2', 'Dual port serial', 11, [CREATED])]


def mtty_host(test, types=MTTY_TYPES, gpu=False):
    """A sysfs with the mtty parent (and a T4 PF with mdev types when
    ``gpu``); returns its ``bus/pci/devices`` directory."""
    sys_dir = os.path.join(test.useFixture(fixtures.TempDir()).path, 'sys')
    root = os.path.join(sys_dir, 'bus', 'pci', 'devices')
    os.makedirs(root)
    sysfs_tree.virtual_mdev_parent(sys_dir, 'mtty', 'mtty', types)
    if gpu:
        sysfs_tree.write_function(root, '0000:41:00.0', '10de', '1eb8',
                                  '030200')
        sysfs_tree.write_mdev_type(root, '0000:41:00.0', 'nvidia-222',
                                   'GRID T4-1B', 16)
        # The kernel lists a PCI parent in mdev_bus too: the PCI scan's.
        os.symlink(os.path.join('..', '..', 'bus', 'pci', 'devices',
                                '0000:41:00.0'),
                   os.path.join(sys_dir, 'class', 'mdev_bus',
                                '0000:41:00.0'))
    return root


class VirtualParentDiscoveryTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())

    def test_the_enabled_type_with_its_capacity(self):
        (dep,) = load(self, 'mdev', mtty_host(self),
                      discovery={'mdev_types': 'mtty-2'}).discover()
        self.assertEqual(('mtty_mtty', 'mtty-2', 'VGPU', 'mdev', 'OTHER'),
                         (dep.address, dep.subname, dep.resource_class,
                          dep.driver_name, dep.device_type))
        # 11 available plus the one created.
        self.assertEqual(12, len(dep.attach_handles))
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_MDEV_MTTY_2'}, dep.traits)
        self.assertEqual(('MDEV', {'parent': 'mtty_mtty',
                                   'parent_addr': 'mtty',
                                   'asked_type': 'mtty-2',
                                   'vgpu_mark': 'mtty-2_11'}),
                         dep.attach_handles[-1])
        self.assertEqual({'mtty-1', 'mtty-2'},
                         set(dep.std_board_info['mdev_types']))

    def test_device_addresses_name_the_parent_beside_pci_patterns(self):
        # mtty-1 is the default (no device_addresses); mtty-2 names the
        # parent as Nova does, and a GPU by PCI address in one list.
        root = mtty_host(self, gpu=True)
        found = load(self, 'mdev', root, discovery={
            'mdev_types': 'mtty-1,mtty-2,nvidia-222'},
            **{'mdev_mtty-2': {'device_addresses':
                               'mtty_mtty,0000:42:00.0'},
               'mdev_nvidia-222': {'device_addresses': '0000:41:00.0'}}
        ).discover()
        self.assertEqual([('0000:41:00.0', 'nvidia-222'),
                          ('mtty_mtty', 'mtty-2')],
                         [(d.address, d.subname) for d in found])

    def test_max_instances_caps_it(self):
        (dep,) = load(self, 'mdev', mtty_host(self), discovery={
            'mdev_types': 'mtty-1'},
            **{'mdev_mtty-1': {'max_instances': '4'}}).discover()
        self.assertEqual(4, len(dep.attach_handles))

    def test_no_enabled_type_offers_nothing_and_says_so(self):
        drv = load(self, 'mdev', mtty_host(self),
                   discovery={'mdev_types': 'nvidia-222'})
        self.assertEqual([], drv.discover())
        self.assertIn("mdev parent mtty_mtty offers types ['mtty-1', "
                      "'mtty-2']", self.log.output)

    def test_mdev_bus_path_elsewhere(self):
        # [discovery] mdev_bus_path: the parents' list is read there, not
        # beside sysfs_root.
        bus = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            mtty_host(self)))), 'class', 'mdev_bus')
        root = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'sys', 'bus', 'pci', 'devices')
        os.makedirs(root)
        (dep,) = load(self, 'mdev', root, discovery={
            'mdev_types': 'mtty-2', 'mdev_bus_path': bus}).discover()
        self.assertEqual('mtty_mtty', dep.address)
        self.assertEqual([], load(self, 'mdev', root, discovery={
            'mdev_types': 'mtty-2'}).discover())

    def test_no_mdev_bus(self):
        root = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'sys', 'bus', 'pci', 'devices')
        os.makedirs(root)
        self.assertEqual([], load(self, 'mdev', root, discovery={
            'mdev_types': 'mtty-2'}).discover())


class MdevCleaningTest(ServiceTestBase):
    """Discovered, reported to a real Placement, bound through the API,
    released, cleaned with ``mdev``: the mediated device is destroyed
    (the kernel's ``remove``, mdevctl's definition) and offered again."""

    TREE = None
    DRIVERS = 'mdev'
    GPU_POOL = None

    def setUp(self):
        super().setUp()
        self.root = mtty_host(self)
        self.devices = os.path.join(os.path.dirname(os.path.dirname(
            self.root)), 'mdev', 'devices')
        # mdevctl, a system boundary: this one lists every UUID as
        # defined and records what it is asked.
        bin_dir = self.useFixture(fixtures.TempDir()).path
        self.mdevctl_log = os.path.join(bin_dir, 'calls')
        script = os.path.join(bin_dir, 'mdevctl')
        with open(script, 'w') as f:
            f.write('#!/bin/sh\necho "$@" >> %s\n'
                    '[ "$1" = list ] && echo "$5 mtty mtty-2 manual"\n'
                    'exit 0\n' % self.mdevctl_log)
        os.chmod(script, stat.S_IRWXU)
        self.useFixture(fixtures.EnvironmentVariable(
            'PATH', bin_dir + os.pathsep + os.environ['PATH']))

    def test_bound_released_destroyed_offered_again(self):
        svc = self.make_service(self.make_conf(
            mdev_types='mtty-2', cleaning={'methods': 'mdev:mdev'}))
        svc.discover_and_report()
        rp = ids.deployable_ids(COMPUTE, 'mtty_mtty', 'mtty-2')[1]
        self.assertEqual(12, self.inventory(rp)['VGPU']['total'])
        arq, state = self.api_bind(svc, rc='VGPU', rp=rp)
        self.assertEqual('Bound', state)
        got = self.call(svc, '/v2/accelerator_requests/%s' % arq, V23).json
        self.assertEqual(('MDEV', 'mtty_mtty'), (
            got['attach_handle_type'], got['attach_handle_info']['parent']))
        mdev = got['attach_handle_uuid']
        # What Nova created for the guest.
        os.makedirs(os.path.join(self.devices, mdev))
        open(os.path.join(self.devices, mdev, 'remove'), 'w').close()
        self.api_unbind(svc, arq)
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        with open(os.path.join(self.devices, mdev, 'remove')) as f:
            self.assertEqual('1', f.read())
        with open(self.mdevctl_log) as f:
            self.assertEqual(['list --defined --uuid %s' % mdev,
                              'undefine --uuid %s' % mdev],
                             f.read().splitlines())
        self.assertEqual(0, self.inventory(rp)['VGPU']['reserved'])
        self.assertEqual('Bound', self.api_bind(svc, rc='VGPU', rp=rp)[1])

    def test_a_device_the_kernel_keeps_stays_out(self):
        svc = self.make_service(self.make_conf(
            mdev_types='mtty-2', cleaning={'methods': 'mdev:mdev'}))
        svc.discover_and_report()
        rp = ids.deployable_ids(COMPUTE, 'mtty_mtty', 'mtty-2')[1]
        arq, _ = self.api_bind(svc, rc='VGPU', rp=rp)
        mdev = self.call(svc, '/v2/accelerator_requests/%s' % arq,
                         V23).json['attach_handle_uuid']
        # ``remove`` cannot be written (a directory stands in for the
        # kernel's EBUSY).
        os.makedirs(os.path.join(self.devices, mdev, 'remove'))
        self.api_unbind(svc, arq)
        self.assertEqual(['clean_failed'],
                         list(svc.cleaner.clean_pending().values()))
        self.assertEqual(1, self.inventory(rp)['VGPU']['reserved'])


class RemoveTest(testtools.TestCase):

    def test_gone_already_and_no_mdevctl_is_done(self):
        root = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'sys', 'bus', 'pci', 'devices')
        self.assertIsNone(mdev_removal.remove(
            CREATED, root, mdevctl='no-such-mdevctl-here'))

    def test_mdevctl_failure_is_reported(self):
        root = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'sys', 'bus', 'pci', 'devices')
        e = self.assertRaises(mdev_removal.MdevRemovalError,
                              mdev_removal.remove, CREATED, root,
                              mdevctl='false')
        self.assertIn('false', str(e))
