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

"""Every writer of attach handle states on a real database (SQLite):
each moves the handle along the state table
(``accel_common.handle_states``) and the ``in_use`` column never
disagrees with the state, whether the writer is an ORM object
(``objects.device.transition``) or a conditional UPDATE (the claim, the
cleaner, the audit)."""

import datetime

import fixtures
import sqlalchemy as sa

from accel_backend.conductor import audit_handles
from accel_backend.db import models
from accel_backend.objects import arq as arq_obj
from accel_backend.objects import device as device_obj
from accel_common import handle_states as hs
from tests.unit.accel_backend import binder_fixtures as fx


class TestWritersAgree(fx.BinderTestBase):

    def setUp(self):
        super().setUp()
        with self.db.transaction() as session:
            session.execute(sa.update(models.Deployable).where(
                models.Deployable.rp_uuid == self.af).values(cleaning='flr'))

    def disagreeing(self):
        """Rows whose ``in_use`` is not what their state says."""
        with self.db.transaction() as session:
            return session.execute(sa.select(
                models.AttachHandle.uuid, models.AttachHandle.state,
                models.AttachHandle.in_use).where(
                    models.AttachHandle.in_use !=
                    device_obj.in_use_clause())).all()

    def handle(self):
        """``(uuid, state, in_use)`` of the AF handle."""
        with self.db.transaction() as session:
            (h,) = session.scalars(sa.select(models.AttachHandle).join(
                models.Deployable).where(
                    models.Deployable.rp_uuid == self.af)).all()
            return h.uuid, h.state, h.in_use

    def expect(self, state):
        self.assertEqual((state, state in hs.IN_USE_STATES),
                         self.handle()[1:])
        self.assertEqual([], self.disagreeing())

    def test_lifecycle(self):
        self.expect(hs.AVAILABLE)                      # discover
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        self.assertEqual('Bound', self.binder.bind_one(arq))
        self.expect(hs.BOUND)                          # claim
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.expect(hs.DIRTY)                          # release
        uuid = self.handle()[0]
        with self.db.transaction() as session:
            self.assertTrue(device_obj.start_cleaning(session, uuid))
        self.expect(hs.CLEANING)                       # start_cleaning
        with self.db.transaction() as session:
            device_obj.finish_cleaning(session, uuid, 'reset failed')
        self.expect(hs.CLEAN_FAILED)                   # cleaning_failed
        with self.db.transaction() as session:
            self.assertFalse(device_obj.start_cleaning(session, uuid))
        self.expect(hs.CLEAN_FAILED)                   # refused
        with self.db.transaction() as session:
            dev = session.scalars(sa.select(models.Device).join(
                models.Deployable).where(
                    models.Deployable.rp_uuid == self.af)).one()
            device_obj.set_status(session, dev, device_obj.ENABLED)
        self.expect(hs.DIRTY)                          # retry
        with self.db.transaction() as session:
            device_obj.start_cleaning(session, uuid)
        old = models.utcnow() + datetime.timedelta(seconds=60)
        with self.db.transaction() as session:
            self.assertTrue(audit_handles.fail_hung_cleaning(
                session, uuid, old, 'hangs'))
        self.expect(hs.CLEAN_FAILED)                   # cleaning_hung
        with self.db.transaction() as session:
            device_obj.retry_clean_failed(session, dev=session.scalars(
                sa.select(models.Device).join(models.Deployable).where(
                    models.Deployable.rp_uuid == self.af)).one())
            device_obj.start_cleaning(session, uuid)
            device_obj.finish_cleaning(session, uuid)
        self.expect(hs.AVAILABLE)                      # cleaned

    def test_reclaim(self):
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        self.binder.bind_one(arq)
        uuid = self.handle()[0]
        # A cleaner of an older release reset it under the guest.
        with self.db.transaction() as session:
            session.execute(sa.update(models.AttachHandle).where(
                models.AttachHandle.uuid == uuid).values(
                    state=hs.CLEANING, in_use=False))
        with self.db.transaction() as session:
            self.assertEqual([uuid], audit_handles.reclaim(session, fx.HOST))
        self.expect(hs.BOUND)                          # reclaim
        with self.db.transaction() as session:
            self.assertEqual([], audit_handles.reclaim(session, fx.HOST))

    def test_release_of_a_handle_not_bound_cleans_it(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.objects.device'))
        (arq,) = self.new_arqs()
        self.start(arq, self.af)
        self.binder.bind_one(arq)
        uuid = self.handle()[0]
        with self.db.transaction() as session:
            session.execute(sa.update(models.AttachHandle).where(
                models.AttachHandle.uuid == uuid).values(
                    state=hs.AVAILABLE, in_use=False))
        with self.db.transaction() as session:
            arq_obj.unbind(arq_obj.get(session, arq))
        self.expect(hs.DIRTY)
        self.assertIn('released while available, not bound', logger.output)

    def test_illegal_transition_refused_and_nothing_written(self):
        uuid = self.handle()[0]
        with self.db.transaction() as session:
            handle = device_obj.get_handle(session, uuid)
            err = self.assertRaises(hs.InvalidHandleTransition,
                                    device_obj.transition, handle,
                                    hs.CLEAN_FAILED, hs.CLEANING_FAILED)
        self.assertIn('available cannot change to clean_failed', str(err))
        self.expect(hs.AVAILABLE)
        # finish_cleaning of a handle no longer cleaning changes nothing.
        with self.db.transaction() as session:
            device_obj.finish_cleaning(session, uuid, 'late')
        self.expect(hs.AVAILABLE)
