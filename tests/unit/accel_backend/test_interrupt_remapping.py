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

"""A host whose IOMMU does not remap interrupts
(``agent.discovery.interrupts``):
its passthrough devices are unhealthy and not offered, the host's
discovery is degraded, unless the operator accepts unsafe interrupts on
both sides (vfio_iommu_type1's module parameter and ``[discovery]
allow_unsafe_interrupts``).  Rule tests on the generated ``vtd-intremap``
and ``vtd-no-intremap`` trees, then end to end through a real Placement
(``test_real_servers``)."""

import os

import fixtures
import testtools
import webob

from accel_backend.agent.discovery import interrupts
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_drivers
from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_real_servers

IR = os.path.join(base.FIXTURES, 'vtd-intremap')
NO_IR = os.path.join(base.FIXTURES, 'vtd-no-intremap')
T4S = ['0000:af:00.0', '0000:d8:00.0']


def write(root, path, text):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text + '\n')


def allow_unsafe_in_vfio(root):
    write(root, interrupts.UNSAFE_PARAM, 'Y')


class TestRule(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(interrupts, '_WARNED', []))

    def test_sysfs_top(self):
        self.assertEqual('/sys', interrupts.sysfs_top('/sys/bus/pci/devices'))
        self.assertEqual('/sys',
                         interrupts.sysfs_top('/sys/bus/pci/devices/'))
        self.assertEqual('/', interrupts.sysfs_top('/bus/pci/devices'))
        self.assertEqual(NO_IR, interrupts.sysfs_top(NO_IR))

    def test_every_unit_with_ir(self):
        self.assertEqual([], interrupts.units_without_ir(IR))
        self.assertIsNone(interrupts.check(IR))
        self.assertIsNone(interrupts.check(IR, allow_unsafe=True))

    def test_one_unit_without_ir_leaves_the_host_without(self):
        self.assertEqual(['dmar1'], interrupts.units_without_ir(NO_IR))
        verdict = interrupts.check(NO_IR)
        self.assertEqual(interrupts.Verdict(('dmar1',), False, False),
                         verdict)
        self.assertIn('interrupt remapping unsupported: Intel VT-d unit '
                      'dmar1', verdict.reason)
        self.assertIn('vfio_iommu_type1 refuses', verdict.reason)
        # The option alone does not help: VFIO still refuses.
        self.assertEqual(verdict.reason,
                         interrupts.check(NO_IR, allow_unsafe=True).reason)

    def test_earlier_trees_are_not_judged(self):
        for name in os.listdir(base.FIXTURES):
            root = os.path.join(base.FIXTURES, name)
            if name in ('vtd-intremap', 'vtd-no-intremap') or not (
                    os.path.isdir(root)):
                continue
            self.assertIsNone(interrupts.units_without_ir(root), name)
            self.assertIsNone(interrupts.check(root), name)

    def test_other_iommus_are_not_judged(self):
        root = self.useFixture(fixtures.TempDir()).path
        write(root, 'class/iommu/ivhd0/amd-iommu/cap', '190b3')
        write(root, 'class/iommu/ivhd0/amd-iommu/features', '58f77ef22294a')
        os.makedirs(os.path.join(root, 'class/iommu/virtio-iommu'))
        self.assertIsNone(interrupts.units_without_ir(root))
        self.assertIsNone(interrupts.check(root))

    def test_unreadable_ecap_counts_as_without(self):
        root = self.useFixture(fixtures.TempDir()).path
        write(root, 'class/iommu/dmar0/intel-iommu/ecap', 'garbage')
        self.assertEqual(['dmar0'], interrupts.units_without_ir(root))

    def test_unsafe_interrupts_need_both_switches(self):
        root = test_drivers.copy_tree(self, NO_IR)
        allow_unsafe_in_vfio(root)
        verdict = interrupts.check(root)
        self.assertTrue(verdict.unsafe_allowed)
        self.assertIn('allow_unsafe_interrupts=Y would let a guest inject '
                      'interrupts', verdict.reason)
        self.assertNotIn('offered', self.log.output)
        for _ in range(2):
            verdict = interrupts.check(root, allow_unsafe=True)
            self.assertTrue(verdict.offered)
            self.assertIsNone(verdict.reason)
        self.assertEqual(1, self.log.output.count(
            'Intel VT-d unit dmar1 lacks interrupt remapping'))


class TestKernelCommandLine(testtools.TestCase):
    """``intremap=off`` / ``nointremap`` (Linux 6.8,
    ``drivers/iommu/irq_remapping.c``): off on every IOMMU."""

    def test_parsed_as_the_kernel_does(self):
        for text, off in (
                (None, False), ('', False),
                ('BOOT_IMAGE=/vmlinuz intel_iommu=on', False),
                ('intel_iommu=on intremap=off', True),
                ('nointremap quiet', True),
                ('intremap=nosid,off', True),
                ('intremap=off,on', False),
                ('nointremap intremap=on', False),
                ('intremap=on intremap=off', True),
                ('intremap=nosid', False),
                ('xintremap=off', False)):
            self.assertEqual(off, interrupts.cmdline_turns_ir_off(text),
                             text)

    def test_where_the_command_line_is_read(self):
        self.assertEqual('/proc/cmdline', interrupts.cmdline_path('/sys'))
        self.assertEqual(os.path.join(IR, 'proc', 'cmdline'),
                         interrupts.cmdline_path(IR))

    def test_units_with_ir_but_turned_off(self):
        root = test_drivers.copy_tree(self, IR)
        write(root, 'proc/cmdline', 'BOOT_IMAGE=/vmlinuz-6.8.0 '
              'root=/dev/sda1 intel_iommu=on intremap=off')
        verdict = interrupts.check(root)
        self.assertTrue(verdict.cmdline_off)
        self.assertIn('turned off on the kernel command line',
                      verdict.reason)
        self.assertEqual('intremap=off on the kernel command line',
                         verdict.cause)

    def test_amd_host_turned_off_is_judged(self):
        root = self.useFixture(fixtures.TempDir()).path
        write(root, 'class/iommu/ivhd0/amd-iommu/cap', '190b3')
        write(root, 'proc/cmdline', 'amd_iommu=on nointremap')
        self.assertTrue(interrupts.check(root).cmdline_off)
        write(root, 'proc/cmdline', 'amd_iommu=on')
        self.assertIsNone(interrupts.check(root))


class TestDrivers(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(interrupts, '_WARNED', []))

    def discover(self, root, **discovery):
        drv = test_drivers.load(self, 'generic_pci', root, (base.T4_SPEC,),
                                discovery=discovery)
        return drv, {d.address: d for d in drv.discover()}

    def test_passthrough_unhealthy_without_ir(self):
        drv, found = self.discover(NO_IR)
        self.assertEqual(T4S, sorted(found))
        for dev in found.values():
            self.assertEqual('unhealthy', dev.health)
            self.assertIn('Intel VT-d unit dmar1', dev.health_reason)
        self.assertEqual(set(T4S), drv.no_intremap)
        self.assertEqual(set(), drv.no_iommu)

    def test_healthy_with_ir_or_not_judged(self):
        for root in (IR, base.TWO_GPUS):
            drv, found = self.discover(root)
            self.assertEqual({'healthy'},
                             {d.health for d in found.values()}, root)
            self.assertEqual(set(), drv.no_intremap)

    def test_no_iommu_group_comes_first(self):
        root = test_drivers.copy_tree(self, NO_IR)
        os.unlink(os.path.join(root, T4S[0], 'iommu_group'))
        drv, found = self.discover(root)
        self.assertIn('no IOMMU group', found[T4S[0]].health_reason)
        self.assertEqual({T4S[0]}, drv.no_iommu)
        self.assertEqual({T4S[1]}, drv.no_intremap)

    def test_offered_when_both_switches_are_on(self):
        root = test_drivers.copy_tree(self, NO_IR)
        allow_unsafe_in_vfio(root)
        drv, found = self.discover(root, allow_unsafe_interrupts='true')
        self.assertEqual({'healthy'}, {d.health for d in found.values()})
        self.assertEqual(set(), drv.no_intremap)


class TestNoInterruptRemapping(test_real_servers.RealServerTest):
    """End to end: the GPUs of a host without interrupt remapping are
    reported, fully reserved, and the health check says why."""

    TREE = NO_IR
    DRIVERS = 'nvidia_gpu'

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatchObject(interrupts, '_WARNED', []))

    def health(self, svc):
        resp = webob.Request.blank(
            '/healthcheck', headers={'Accept': 'application/json'}
        ).get_response(svc.app)
        return resp.status_int, ' '.join(resp.json['reasons'])

    def test_devices_unhealthy_not_offered_and_host_degraded(self):
        svc = self.make_service()
        svc.report_pass()
        for gpu in T4S:
            self.assertEqual((1, 1), self.reserved(gpu))
            dev = self.call(svc, '/v2/devices/%s' % (
                test_lifecycle.device_uuid(gpu))).json
            self.assertEqual('unhealthy', dev['status'])
            self.assertIn('interrupt remapping unsupported',
                          dev['status_reason'])
        self.assertEqual([], self.candidates('resources=PGPU:1'))
        status, reasons = self.health(svc)
        self.assertEqual(503, status)
        self.assertIn('host compute1: discovery degraded: 0000:af:00.0, '
                      '0000:d8:00.0: no interrupt remapping (Intel VT-d '
                      'unit dmar1 lacks it)', reasons)

    def test_operator_accepts_unsafe_interrupts(self):
        allow_unsafe_in_vfio(self.root)
        svc = self.make_service()
        svc.report_pass()
        self.assertEqual(503, self.health(svc)[0])
        svc = self.make_service(self.make_conf(
            allow_unsafe_interrupts='true'))
        svc.report_pass()
        self.assertEqual(T4S, self.candidates('resources=PGPU:1'))
        self.assertEqual(200, self.health(svc)[0])
        self.assertEqual(1, self.logger.output.count(
            'lacks interrupt remapping and vfio_iommu_type1'))

    def test_intremap_off_on_the_command_line(self):
        for unit in ('dmar0', 'dmar1'):
            write(self.root, 'class/iommu/%s/intel-iommu/ecap' % unit,
                  'f020de')
        write(self.root, 'proc/cmdline', 'ro quiet intremap=off')
        svc = self.make_service()
        svc.report_pass()
        self.assertEqual([], self.candidates('resources=PGPU:1'))
        dev = self.call(svc, '/v2/devices/%s' % (
            test_lifecycle.device_uuid(T4S[0]))).json
        self.assertIn('turned off on the kernel command line',
                      dev['status_reason'])
        status, reasons = self.health(svc)
        self.assertEqual(503, status)
        self.assertIn('no interrupt remapping (intremap=off on the kernel '
                      'command line)', reasons)

    def test_host_with_interrupt_remapping_offers_its_gpus(self):
        # The units of vtd-intremap: every one with IR.
        for unit in ('dmar0', 'dmar1'):
            write(self.root, 'class/iommu/%s/intel-iommu/ecap' % unit,
                  'f020de')
        svc = self.make_service()
        svc.report_pass()
        self.assertEqual(T4S, self.candidates('resources=PGPU:1'))
        self.assertEqual(200, self.health(svc)[0])
