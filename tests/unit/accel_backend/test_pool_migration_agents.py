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

"""Pooling turned on for a host with guests whose ``accel-backend-agent``
has no database: the agent reshapes Placement and the conductor moves the
rows (conductor API 1.1, ``pool_moves`` and ``migrate_pools``), over
oslo.messaging's ``fake://`` transport; the guest of
``test_pool_migration`` on a real Placement."""

from oslo_utils import uuidutils

from accel_backend.common import host_states
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend.objects import arq as arq_obj
from accel_backend import service as service_mod
from accel_backend import transports
from accel_common import arq_states
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_pool_migration

COMPUTE = test_pool_migration.COMPUTE
POOL0 = test_pool_migration.POOL0


class AgentPoolMigrationTest(test_pool_migration.MigrationBase):

    def split(self, cap=None):
        """A conductor on the embedded service's database and an agent of
        ``COMPUTE`` without one, pooling on; returns the agent."""
        url = self.before.conf.database.connection
        self.before.stop()

        def conf(host, **groups):
            return base.make_conf(
                self, self.root, (), DEFAULT={
                    'host': host, 'state_path': self.tmp,
                    'transport_url': 'fake://'},
                api={'auth_strategy': 'noauth'}, binding={'workers': '1'},
                placement=self.placement_opts, nova=self.NOVA_OPTS,
                discovery={'enabled_drivers': self.DRIVERS,
                           'report_interval': '0',
                           'nvidia_gpu_pool': 'true',
                           # pools per NUMA node (test_pool_migration)
                           'pool_numa_span': 'false'}, **groups)
        transport = transports.get_rpc_transport(conf('transport'))
        self.addCleanup(transport.cleanup)
        self.conductor = service_mod.Service(
            conf('cond-host', database={'connection': url}),
            role=service_mod.CONDUCTOR, transport=transport)
        self.addCleanup(self.conductor.stop)
        self.conductor.start()
        agent = service_mod.Service(
            conf(COMPUTE, upgrade_levels={'conductor': cap} if cap else {}),
            role=service_mod.AGENT, transport=transport)
        self.addCleanup(agent.stop)
        self.assertIsNone(agent.db)
        return agent

    def test_agent_migrates_through_the_conductor(self):
        agent = self.split()
        agent.report_pass()
        pool = self.check_migrated(self.conductor)
        self.assertEqual(host_states.OK, self.status(self.conductor))
        # The conductor binds on the pool, another GPU than the guest's.
        (other,) = self.handles_of(self.conductor, self.bind_group(
            self.conductor, POOL0, 1))
        self.assertNotEqual(self.handle[3], other)
        agent.report_pass()
        self.assertEqual({pool: {'PGPU': 1}}, self.allocations())

    def test_a_bind_held_by_the_migration_is_done_by_the_conductor(self):
        agent = self.split()
        self.assertNotIn(POOL0, self.providers())
        # A bind the binder held: BindStarted while the host migrates.
        agent.store.record_status(host_states.MIGRATING)
        with self.conductor.db.transaction() as session:
            (held,) = arq_obj.create(session, 'one', project_id='p1')
            held = held.uuid
        agent.report_pass()
        pool = self.check_migrated(self.conductor)
        with self.conductor.db.transaction() as session:
            arq_obj.start_binding(session, arq_obj.get(session, held),
                                  COMPUTE, pool, uuidutils.generate_uuid())
        # Recorded migrating again, then out of it: the conductor binds
        # what waited.
        agent.store.record_status(host_states.MIGRATING)
        agent.store.record_status(host_states.OK)

        def bound():
            with self.conductor.db.transaction() as session:
                return arq_obj.get(session, held).state == arq_states.BOUND
        self.wait_for(bound)

    def test_capped_below_1_1_the_agent_does_not_migrate(self):
        # A conductor of the previous release may still answer: nothing
        # is migrated, the guest keeps its per-device provider (as before
        # 1.1: drain such a host first).
        agent = self.split(cap='1.0')
        self.assertFalse(agent.store.api.can_send(
            conductor_rpcapi.POOLS_VERSION))
        agent.report_pass()
        self.assertEqual(self.handle, self.arq_handle(self.conductor))
        self.assertEqual({self.old_rp: {'PGPU': 1}}, self.allocations())
