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

"""``accel-backend-manage device drain|undrain`` (``cmd.manage_device``)
through ``cmd.manage.main``, on the database and the real Placement
(openstack-placement's fixture) of a discovered two-GPU host."""

from oslo_utils import uuidutils
import testtools

from accel_backend.agent.placement import client as pclient
from accel_backend.common import ids
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device_profile as dp_obj
from accel_backend import service as service_mod
from accel_common import arq_states
from accel_common import taints
from tests import placement_fixture
from tests.unit.accel_backend import base

COMPUTE = 'compute1'
AF, D8 = base.T4_ADDRESSES


def rp_uuid(address):
    return ids.stable_uuid('rp', COMPUTE, address)


class _DrainBase(testtools.TestCase):
    """A discovered two-GPU host, the command and what to check."""

    #: ``[taints]`` of the service and the command.
    TAINTS = {}

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(
            placement_fixture.PlacementFixture())
        self.conf = base.make_conf(
            self, DEFAULT={'host': COMPUTE},
            api={'auth_strategy': 'noauth'},
            binding={'workers': '1'},
            placement=base.placement_opts(self.placement.endpoint),
            nova=base.NO_NOVA, taints=self.TAINTS)
        self.raw = pclient.PlacementClient(pclient.adapter_from_conf(
            self.conf))
        self.raw.post('/resource_providers',
                      {'uuid': uuidutils.generate_uuid(), 'name': COMPUTE})
        self.svc = service_mod.Service(self.conf)
        self.addCleanup(self.svc.stop)
        self.svc.discover_and_report()

    def manage(self, *argv):
        """``(exit status, stdout, stderr)`` of the command."""
        return base.run_manage(self, self.conf.config_file[0],
                               ['device'] + list(argv))

    def reserved(self, address):
        inv = self.raw.get('/resource_providers/%s/inventories' %
                           rp_uuid(address)).json()['inventories']
        return inv['PGPU']['reserved'], inv['PGPU']['total']

    def bind(self, address):
        with self.svc.db.transaction() as session:
            name = uuidutils.generate_uuid()
            dp_obj.create(session, name, [{'resources:PGPU': '1'}])
            (arq,) = arq_obj.create(session, name, project_id='p1')
            instance = uuidutils.generate_uuid()
            arq_obj.start_binding(session, arq, COMPUTE, rp_uuid(address),
                                  instance)
            arq_uuid = arq.uuid
        return arq_uuid, instance, self.svc.binder.bind_one(arq_uuid)

    def taints(self):
        with self.svc.db.transaction() as session:
            return sorted((t.deployable.name, t.key, t.effect, t.set_by)
                          for t in session.query(models.DeployableTaint))


class DrainTest(_DrainBase):

    def test_drain_host_reports_what_is_in_use_and_undrain_returns(self):
        arq, instance, state = self.bind(AF)
        self.assertEqual(arq_states.BOUND, state)
        code, out, err = self.manage('drain', COMPUTE, '--reason', 'BIOS')
        self.assertEqual((0, ''), (code, err))
        lines = out.splitlines()
        self.assertEqual('Drained 2 deployables of compute1', lines[0])
        self.assertEqual(['in use\tcompute1_0000:af:00.0\t0000:af:00.0\t'
                          'instance %s\tARQ %s' % (instance, arq),
                          '1 still in use'], lines[1:])
        self.assertEqual(
            [('compute1_0000:af:00.0', taints.DRAIN_KEY, 'NoSchedule',
              'accel-backend-manage'),
             ('compute1_0000:d8:00.0', taints.DRAIN_KEY, 'NoSchedule',
              'accel-backend-manage')], self.taints())
        # Placement at once: both reserved; nothing new is bound.
        self.assertEqual((1, 1), self.reserved(D8))
        self.assertEqual((1, 1), self.reserved(AF))
        self.assertEqual(arq_states.BIND_FAILED, self.bind(D8)[2])
        code, out, _ = self.manage('undrain', COMPUTE)
        self.assertEqual((0, 'Undrained 2 deployables of compute1\n'),
                         (code, out))
        self.assertEqual([], self.taints())
        self.assertEqual((0, 1), self.reserved(D8))
        self.assertEqual(arq_states.BOUND, self.bind(D8)[2])

    def test_drain_one_deployable(self):
        dep = ids.stable_uuid('deployable', COMPUTE, D8)
        code, out, _ = self.manage('drain', dep)
        self.assertEqual((0, 'Drained 1 deployables of %s\n0 still in use\n'
                          % dep), (code, out))
        self.assertEqual((1, 1), self.reserved(D8))
        self.assertEqual((0, 1), self.reserved(AF))

    def test_unknown_targets_are_one_line(self):
        for target in ('compute9', uuidutils.generate_uuid()):
            code, out, err = self.manage('drain', target)
            self.assertEqual((1, ''), (code, out))
            self.assertEqual(1, err.count('\n'), err)
            self.assertIn(target, err)
        self.assertEqual([], self.taints())


class TolerableDrainTest(_DrainBase):
    """The drain's key declared tolerable (``[taints] tolerable_keys``):
    the command writes its trait, not a reservation, at once, and
    undrain removes it (``accel_common.tolerations``)."""

    TAINTS = {'tolerable_keys': taints.DRAIN_KEY}
    TRAIT = 'CUSTOM_ACCEL_TAINT_ACCEL_OPENSTACK_ORG_DRAIN'

    def traits(self, address):
        return self.raw.get('/resource_providers/%s/traits' %
                            rp_uuid(address)).json()['traits']

    def test_drain_one_deployable_is_a_trait(self):
        dep = ids.stable_uuid('deployable', COMPUTE, D8)
        self.assertEqual(0, self.manage('drain', dep)[0])
        self.assertEqual((0, 1), self.reserved(D8))
        self.assertIn(self.TRAIT, self.traits(D8))
        self.assertNotIn(self.TRAIT, self.traits(AF))
        # A group that does not tolerate it is not bound there.
        self.assertEqual(arq_states.BIND_FAILED, self.bind(D8)[2])
        self.assertEqual(0, self.manage('undrain', dep)[0])
        self.assertNotIn(self.TRAIT, self.traits(D8))
