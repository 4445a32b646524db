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

"""Idle MIG GPUs repartitioned by the service's discovery pass
(``agent.mig.repartition``, issue 54 item 3), over a copy of the
generated ``h200-mig-vgpu-vfio`` tree: NVIDIA's driver emulated at its
sysfs files (``nvidia_vgpu_card.MigCard``), the GPU instances in a
simulated MIG host that follows NVIDIA's placement rules
(``agent.mig.host.SimulatedMigHost``), a real Placement.  GPU A
(0000:41:00.0) starts as 2g.35gb, 1g.18gb, 1g.18gb and 3g.71gb, GPU B
(0000:c1:00.0) in MIG mode without GPU instances."""

import json
import os
import uuid

import fixtures
from oslo_config import cfg

from accel_backend.agent.mig import repartition
from accel_backend.db import models
from accel_backend import exception
from accel_backend import service as service_mod
from accel_common import taints
from tests.unit.accel_backend import nvidia_vgpu_card as card_mod
from tests.unit.accel_backend import test_nvidia_mig_vgpu as mig_vgpu

A, B = mig_vgpu.A, mig_vgpu.B
H200 = 'H200-SXM5-141GB'
PROFILES = mig_vgpu.PROFILES + ',NVIDIA H200X-7-141C'


class Crash(Exception):
    """The process died here."""


class RepartitionTest(mig_vgpu.TestMigBackedVGPU.__bases__[0]):

    TREE = mig_vgpu.TestMigBackedVGPU.TREE

    def setUp(self):
        super().setUp()
        self.host = card_mod.h200_mig_host()
        self.cards = card_mod.h200_mig_cards(self.root, self.host)
        self.useFixture(card_mod.DriverFixture(self.cards))
        self.addresses = {0: A, 1: B}
        #: What the repartitioner drives (nvidia-smi's view).
        self.mig_host = self.host
        # As NVIDIA's driver does, the VFs' lists follow the GIs.
        for name in ('create', 'destroy'):
            self.useFixture(fixtures.MockPatchObject(
                self.host, name, side_effect=self._refreshing(
                    getattr(self.host, name))))

    def _refreshing(self, change):
        def changed(*args, **kwargs):
            try:
                return change(*args, **kwargs)
            finally:
                for card in self.cards:
                    card.refresh()
        return changed

    def service(self, target, layouts, run=True):
        conf = self.make_conf(groups={'nvidia_vgpu': {
            'profiles': PROFILES, 'configure_vfs': 'True',
            'mig_layouts': ['%s: %s' % (H200, lay) for lay in layouts],
            'mig_free_target': target}})
        svc = self.make_service(conf)
        svc.repartitioner.host_factory = lambda: (self.mig_host,
                                                  self.addresses)
        if run:
            svc.discover_and_report()
        return svc

    def layout(self, gpu):
        return [(gi.profile, gi.start) for gi in self.host.instances(gpu)]

    def slices(self, address):
        """``{vGPU type table name: total}`` of the slices of the GPU at
        ``address`` in Placement."""
        return {name.rsplit('_', 1)[1]: self.inventory(rp['uuid'])[
            'CUSTOM_MIG_SLICE']['total']
            for name, rp in self.providers().items()
            if name.startswith(address)}

    def held(self, svc):
        with svc.db.transaction() as session:
            return sorted(t.deployable.name for t in session.query(
                models.DeployableTaint).filter_by(
                    key=taints.REPARTITION_KEY))

    def test_an_idle_gpu_is_carved_and_sold_in_the_same_pass(self):
        before = list(self.host.calls)
        svc = self.service('3g.71gb:3', ['3g.71gb,3g.71gb', '7g.141gb'])
        # B, idle and empty, gains the most: two 3g.71gb; A is kept.
        self.assertEqual([('3g.71gb', 0), ('3g.71gb', 4)], self.layout(1))
        self.assertEqual(before, [c for c in self.host.calls if c[1] == 0])
        self.assertEqual({'H200X-3-71C': 2}, self.slices(B))
        self.assertEqual({'H200X-3-71C': 1, 'H200X-2-35C': 1,
                          'H200X-1-18C': 2}, self.slices(A))
        self.assertEqual([], self.held(svc))
        self.assertFalse(os.path.exists(os.path.join(
            self.tmp, repartition.CHECKPOINT)))
        # Met: the next pass changes nothing.
        calls = len(self.host.calls)
        svc.discover_and_report()
        self.assertEqual(calls, len(self.host.calls))

    def test_a_gpu_with_a_bound_slice_is_never_touched(self):
        svc = self.service('1g.18gb:1', ['7g.141gb'], run=False)
        svc.discover_and_report(repartition=False)
        three = next(rp for n, rp in self.providers().items()
                     if n.startswith(A) and n.endswith('3-71C'))
        self.assertEqual('Bound', self.api_bind(
            svc, rc='CUSTOM_MIG_SLICE', rp=three['uuid'])[1])
        before = self.layout(0)
        svc = self.service('7g.141gb:2', ['7g.141gb'])
        # B takes the one 7g.141gb it can; A, in use, keeps its layout.
        self.assertEqual(before, self.layout(0))
        self.assertEqual([('7g.141gb', 0)], self.layout(1))
        self.assertEqual({'H200X-7-141C': 1}, self.slices(B))
        self.assertEqual([], self.held(svc))

    def test_an_allocation_in_placement_keeps_the_gpu(self):
        self.addresses = {0: A}
        svc = self.service('1g.18gb:1', ['7g.141gb'], run=False)
        svc.discover_and_report(repartition=False)
        two = next(rp for n, rp in self.providers().items()
                   if n.startswith(A) and n.endswith('2-35C'))
        consumer = str(uuid.uuid4())
        self.raw.put('/allocations/%s' % consumer, {
            'allocations': {two['uuid']: {
                'resources': {'CUSTOM_MIG_SLICE': 1}}},
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_generation': None})
        before = self.layout(0)
        svc = self.service('7g.141gb:1', ['7g.141gb'])
        self.assertEqual(before, self.layout(0))
        # Held, then released: nothing reserved is left behind.
        self.assertEqual([], self.held(svc))
        self.assertEqual(0, self.inventory(two['uuid'])[
            'CUSTOM_MIG_SLICE']['reserved'])

    def test_a_crash_mid_carve_is_finished_at_the_next_start(self):
        real = self.host.create
        crashed = []

        def create_or_crash(gpu, profile, start=None):
            if not crashed:
                crashed.append(profile)
                raise Crash()
            return real(gpu, profile, start)
        self.useFixture(fixtures.MockPatchObject(
            self.host, 'create', side_effect=create_or_crash))
        logger = self.useFixture(fixtures.FakeLogger())
        svc = self.service('7g.141gb:1', ['7g.141gb'], run=False)
        # The pass stands (its devices reported); the failure is logged.
        svc.discover_and_report()
        self.assertIn('MIG repartition failed', logger.output)
        self.assertIn('H200X-3-71C', ''.join(self.slices(A)))
        # Committed first: the hold (B's deployables, if it had any, are
        # tainted; it has none yet) and the checkpoint.
        with open(os.path.join(self.tmp, repartition.CHECKPOINT)) as f:
            self.assertEqual({'gpu': 1, 'address': B,
                              'layout': [['7g.141gb', 0]]}, json.load(f))
        self.assertEqual([], self.layout(1))
        # A new process finishes the same layout, then sells it.
        svc = self.service('7g.141gb:1', ['7g.141gb'])
        self.assertEqual([('7g.141gb', 0)], self.layout(1))
        self.assertEqual({'H200X-7-141C': 1}, self.slices(B))
        self.assertFalse(os.path.exists(os.path.join(
            self.tmp, repartition.CHECKPOINT)))
        self.assertEqual([], self.held(svc))

    def test_a_gpu_whose_instances_cannot_be_listed_is_left_out(self):
        host = self.host

        class NotInMigMode(object):
            """GPU 1 as nvidia-smi answers for a GPU not in MIG mode."""

            def __getattr__(self, name):
                return getattr(host, name)

            def instances(self, gpu):
                if gpu == 1:
                    raise exception.MigCommandFailed(
                        command='nvidia-smi mig -i 1 -lgi',
                        reason='Not in MIG mode')
                return host.instances(gpu)
        self.mig_host = NotInMigMode()
        svc = self.service('7g.141gb:1', ['7g.141gb'])
        # A alone is a candidate: idle, carved into the 7g.141gb.
        self.assertEqual([('7g.141gb', 0)], self.layout(0))
        self.assertEqual({'H200X-7-141C': 1}, self.slices(A))
        self.assertEqual([], self.held(svc))

    def test_a_bad_layout_refuses_the_start(self):
        for layouts in (['7g.141gb,1g.18gb'], ['nothing']):
            conf = self.make_conf(groups={'nvidia_vgpu': {
                'profiles': PROFILES, 'mig_free_target': '7g.141gb:1',
                'mig_layouts': ['%s: %s' % (H200, lay)
                                for lay in layouts]}})
            self.assertRaises(cfg.ConfigFileValueError,
                              service_mod.Service, conf)
