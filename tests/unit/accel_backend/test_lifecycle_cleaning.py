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

"""The device lifecycle between tenants (``test_lifecycle``'s service over
a copy of a recorded sysfs tree, reporting to a real Placement): release,
cleaning and reuse of attach handles, and the migration that gave the
handles their states."""

import os

import fixtures
import sqlalchemy as sa
import testtools

from accel_backend.db import models
from accel_common import handle_states
from tests.unit.accel_backend.test_lifecycle import ADMIN
from tests.unit.accel_backend.test_lifecycle import device_uuid
from tests.unit.accel_backend.test_lifecycle import GPU
from tests.unit.accel_backend.test_lifecycle import ServiceTestBase


class TestCleaning(ServiceTestBase):

    def test_release_dirty_reserved_flr_then_available(self):
        svc = self.make_service()
        svc.discover_and_report()
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))
        arq, state = self.bind(svc, GPU)
        self.assertEqual('Bound', state)
        self.assertEqual([('bound', None)], self.handle_states(svc, GPU))
        self.unbind(svc, arq)
        # Not offered again: dirty, reserved in Placement, status shown.
        self.assertEqual([('dirty', None)], self.handle_states(svc, GPU))
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(GPU))
        self.assertEqual('dirty', self.device_view(svc, GPU)['status'])
        _, state = self.bind(svc, GPU)
        self.assertEqual('BindFailed', state)
        self.assertEqual('', self.reset_file(GPU))

        results = svc.cleaner.clean_pending()
        self.assertEqual(['available'], list(results.values()))
        self.assertEqual('1', self.reset_file(GPU))
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))
        self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('enabled', self.device_view(svc, GPU)['status'])
        self.assertNotIn('status_reason', self.device_view(svc, GPU))
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_delete_of_arq_also_dirties(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.delete_arq(svc, arq)
        self.assertEqual([('dirty', None)], self.handle_states(svc, GPU))
        svc.cleaner.clean_pending()
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))

    def test_gpu_the_kernel_cannot_reset_is_offered_again(self):
        # No reset method (no FLR, bus reset quirked off): discovery makes
        # its cleaning none instead of a reset that would fail after
        # every tenant and lock it out.
        os.unlink(os.path.join(self.root, GPU, 'reset'))
        svc = self.make_service()
        svc.discover_and_report()
        for _ in range(2):
            arq, _ = self.bind(svc, GPU)
            self.unbind(svc, arq)
            # Released straight to available: nothing to clean.
            self.assertEqual({}, svc.cleaner.clean_pending())
            self.assertEqual([('available', None)],
                             self.handle_states(svc, GPU))
            self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('none', self.device_view(svc, GPU)[
            'std_board_info']['reset_method'])

    def test_reset_methods_disabled_while_bound(self):
        # Discovered with a reset (cleaning flr), then every reset method
        # is disabled while a tenant holds the GPU (``echo >
        # reset_method``; the kernel keeps ``reset``, whose write would
        # fail with ENOTTY): released without a reset, not locked out.
        svc = self.released_without_a_reset(
            'flr bus\n', lambda: self.write_reset_method(''))
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_bus_reset_refused_beside_a_new_function(self):
        # Discovered alone on its bus (``bus`` reset, cleaning flr); a
        # function appears on its bus while a tenant holds it (an SR-IOV
        # VF, a hot-plugged function): the kernel would refuse the bus
        # reset, so the GPU is released without one, not locked out.
        self.released_without_a_reset('bus\n', lambda: os.mkdir(
            os.path.join(self.root, GPU[:-1] + '1')))

    def released_without_a_reset(self, methods, while_bound):
        """Discover the GPU with ``reset_method`` ``methods``, bind it,
        run ``while_bound``, release it: the cleaner must release it
        without writing ``reset``.  Returns the service."""
        self.write_reset_method(methods)
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        while_bound()
        self.unbind(svc, arq)
        with self.assertLogs('accel_backend.agent.cleaning.worker',
                             'WARNING') as logs:
            self.assertEqual(['available'],
                             list(svc.cleaner.clean_pending().values()))
        self.assertIn('The kernel offers no reset for %s any more' % GPU,
                      logs.output[0])
        self.assertEqual('', self.reset_file(GPU))   # never written
        self.assertEqual((0, 1), self.reserved(GPU))
        return svc

    def write_reset_method(self, text):
        with open(os.path.join(self.root, GPU, 'reset_method'), 'w') as f:
            f.write(text)

    def test_reset_failure_keeps_the_device_out(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        # The kernel refuses the reset (the write fails): a directory
        # stands in for a ``reset`` whose write returns an error.
        os.unlink(os.path.join(self.root, GPU, 'reset'))
        os.mkdir(os.path.join(self.root, GPU, 'reset'))
        self.assertEqual(['clean_failed'],
                         list(svc.cleaner.clean_pending().values()))
        ((state, reason),) = self.handle_states(svc, GPU)
        self.assertEqual('clean_failed', state)
        self.assertIn('function level reset of %s failed' % GPU, reason)
        self.assertEqual((1, 1), self.reserved(GPU))
        view = self.device_view(svc, GPU)
        self.assertEqual('clean_failed', view['status'])
        self.assertEqual(reason, view['status_reason'])
        # Before 2.3 no status at all.
        self.assertNotIn('status', self.call(
            svc, '/v2/devices/%s' % device_uuid(GPU), headers=ADMIN).json)
        # The periodic report keeps it reserved; nothing binds it.
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(GPU))
        self.assertEqual('BindFailed', self.bind(svc, GPU)[1])
        # Fixed by the operator: enabling the device cleans it again.
        os.rmdir(os.path.join(self.root, GPU, 'reset'))
        with open(os.path.join(self.root, GPU, 'reset'), 'w'):
            pass
        self.call(svc, '/v2/devices/%s/enable' % device_uuid(GPU),
                  method='POST')
        self.assertEqual([('dirty', None)], self.handle_states(svc, GPU))
        self.assertEqual((1, 1), self.reserved(GPU))
        svc.cleaner.clean_pending()
        self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('enabled', self.device_view(svc, GPU)['status'])

    def test_none_method_offers_the_device_at_once(self):
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:none'}))
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        self.assertEqual([('available', None)], self.handle_states(svc, GPU))
        self.assertEqual({}, svc.cleaner.clean_pending())
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_release_wakes_the_running_cleaner(self):
        # poll_interval is long: only the commit hook can wake it.
        svc = self.make_service(self.make_conf(cleaning={
            'poll_interval': '600'}))
        svc.discover_and_report()
        svc.start()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        self.wait_for(lambda: self.handle_states(svc, GPU) ==
                      [('available', None)])
        self.assertEqual('1', self.reset_file(GPU))
        self.wait_for(lambda: self.reserved(GPU) == (0, 1))

    def test_placement_down_while_cleaning_then_report_repairs(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        svc.discover_and_report()
        self.assertEqual((1, 1), self.reserved(GPU))
        # Placement is down while the device is cleaned: the cleaner
        # cannot offer it again (logged, not raised).
        self.placement.outage = 503
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        self.assertIn('Could not update reserved units', self.logger.output)
        self.placement.outage = None
        self.assertEqual((1, 1), self.reserved(GPU))
        # The next periodic report derives reserved from the database.
        svc.discover_and_report()
        self.assertEqual((0, 1), self.reserved(GPU))
        self.assertEqual('Bound', self.bind(svc, GPU)[1])

    def test_restart_resumes_dirty_and_cleaning(self):
        svc = self.make_service()
        svc.discover_and_report()
        second = '0000:ca:00.0'
        for address in (GPU, second):
            arq, _ = self.bind(svc, address)
            self.unbind(svc, arq)
        # A crash in the middle of cleaning the second one.
        with svc.db.transaction() as session:
            (h,) = session.scalars(
                sa.select(models.AttachHandle).join(models.Deployable)
                .join(models.Device).where(models.Device.address == second))
            h.state = handle_states.CLEANING
        svc.stop()

        svc2 = self.make_service(self.make_conf(cleaning={
            'poll_interval': '600'}))
        svc2.start()
        for address in (GPU, second):
            self.wait_for(lambda a=address: self.handle_states(svc2, a) ==
                          [('available', None)])
            self.assertEqual('1', self.reset_file(address))


class TestMigration(testtools.TestCase):

    def test_0003_marks_handles_in_use_bound(self):
        from accel_backend.db import api as db_api
        import alembic.command
        import alembic.config
        tmp = self.useFixture(fixtures.TempDir()).path
        db = db_api.Database('sqlite:///%s/a.sqlite' % tmp)
        self.addCleanup(db.dispose)
        cfg = alembic.config.Config()
        cfg.set_main_option('script_location', db_api.MIGRATIONS_DIR)
        with db.engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.upgrade(cfg, '0002')
            conn.execute(sa.text(
                "INSERT INTO devices (id, uuid, type, vendor, model, "
                "hostname, address, status, created_at) VALUES (1, 'd', "
                "'GPU', '10de', 'm', 'h', '0000:af:00.0', 'enabled', "
                "'2026-01-01')"))
            conn.execute(sa.text(
                "INSERT INTO deployables (id, uuid, device_id, name, "
                "num_accelerators, resource_class, traits, created_at) "
                "VALUES (1, 'p', 1, 'n', 2, 'PGPU', '[]', '2026-01-01')"))
            for i, in_use in ((1, 1), (2, 0)):
                conn.execute(sa.text(
                    "INSERT INTO attach_handles (id, uuid, deployable_id, "
                    "attach_type, attach_info, in_use, created_at) VALUES "
                    "(%d, 'h%d', 1, 'PCI', '{}', %d, '2026-01-01')" %
                    (i, i, in_use)))
        db.sync()
        with db.transaction() as session:
            states = {h.uuid: h.state for h in session.scalars(
                sa.select(models.AttachHandle))}
            dev = session.scalar(sa.select(models.Device))
            self.assertEqual({'h1': 'bound', 'h2': 'available'}, states)
            self.assertEqual('healthy', dev.health)
        with db.engine.begin() as conn:
            cfg.attributes['connection'] = conn
            alembic.command.downgrade(cfg, '0002')
