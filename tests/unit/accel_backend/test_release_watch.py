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

"""The commit of a release wakes the embedded service's cleaner:
``conductor.store.HostStore.watch_releases`` over
``objects.device.on_release``, the session hook kept with the writers
of ``RELEASED_KEY`` (``agent.cleaning`` reads no database key)."""

import sqlalchemy as sa

from accel_backend.conductor import store as store_mod
from accel_backend.db import models
from accel_backend.objects import device as device_obj
from tests.unit.accel_backend.audit_fixtures import AuditTestBase
from tests.unit.accel_backend.audit_fixtures import HOST


class Boom(Exception):
    pass


class TestReleaseWatch(AuditTestBase):

    def setUp(self):
        super().setUp()
        self.handle_uuid = self.af_handle()
        self.set_handle(self.handle_uuid, state='clean_failed')
        self.store = store_mod.HostStore(self.db, HOST)
        self.wakes = []
        self.store.watch_releases(self.wake)
        self.addCleanup(self.store.unwatch_releases, self.wake)

    def wake(self):
        self.wakes.append(self.handle_state())

    def handle_state(self):
        with self.db.transaction() as session:
            return session.scalar(sa.select(models.AttachHandle.state).where(
                models.AttachHandle.uuid == self.handle_uuid))

    def retry(self, fail=False):
        # An operator enabling the device again: clean_failed -> dirty.
        with self.db.transaction() as session:
            handle = device_obj.get_handle(session, self.handle_uuid)
            self.assertEqual(1, device_obj.retry_clean_failed(
                session, handle.deployable.device))
            if fail:
                raise Boom()

    def test_commit_of_a_release_wakes_once_after_the_commit(self):
        self.retry()
        # Called after the commit: the callback reads the new state.
        self.assertEqual(['dirty'], self.wakes)
        self.set_handle(self.handle_uuid, state='available')
        self.assertEqual(['dirty'], self.wakes)

    def test_rolled_back_release_wakes_nobody(self):
        self.assertRaises(Boom, self.retry, fail=True)
        self.assertEqual('clean_failed', self.handle_state())
        self.assertEqual([], self.wakes)

    def test_unwatched_callback_is_not_called(self):
        self.store.unwatch_releases(self.wake)
        self.retry()
        self.assertEqual([], self.wakes)
        # Undoing it twice changes nothing.
        self.store.unwatch_releases(self.wake)

    def test_commit_on_another_engine_wakes_nobody_here(self):
        other, engine = [], object()

        def mark():
            other.append('woken')
        device_obj.on_release(engine, mark)
        self.addCleanup(device_obj.forget_release, engine, mark)
        self.retry()
        self.assertEqual(['dirty'], self.wakes)
        self.assertEqual([], other)
